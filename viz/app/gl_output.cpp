// gl_output.cpp: window, headless PNG, frame benchmark (see gl_output.h).
#include "gl_output.h"

#include <GLFW/glfw3.h>
#include <imgui.h>
#include <imgui_impl_glfw.h>
#include <imgui_impl_opengl3.h>
#include <stb_image_write.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <ostream>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/output_file.h"

namespace cplab::viz {

namespace {

std::string g_glfw_error;
void on_glfw_error(int code, const char* what) { g_glfw_error = "GLFW error " + std::to_string(code) + ": " + what; }

}  // namespace

int run_window(AppState& app, int W, int H, const std::string& png, int frames, OutputSet& out) {
  if (!png.empty()) check_writable(png, "--out");  // before any drawing; nothing is created yet
  glfwSetErrorCallback(on_glfw_error);
  if (!glfwInit()) {
    std::fprintf(stderr,
                 "cplab-viz: no display (%s).\n"
                 "  Fixes: render headless under a virtual X server, e.g.\n"
                 "    xvfb-run -a cplab-viz --headless --view ring --out ring.png\n"
                 "  or set DISPLAY to a running X server (ssh -X, a desktop session).\n",
                 g_glfw_error.empty() ? "GLFW could not initialise" : g_glfw_error.c_str());
    return 3;
  }
  const bool headless = !png.empty();
  glfwWindowHint(GLFW_CONTEXT_VERSION_MAJOR, 3);
  glfwWindowHint(GLFW_CONTEXT_VERSION_MINOR, 3);
  glfwWindowHint(GLFW_OPENGL_PROFILE, GLFW_OPENGL_CORE_PROFILE);
  glfwWindowHint(GLFW_OPENGL_FORWARD_COMPAT, GLFW_TRUE);
  if (headless) glfwWindowHint(GLFW_VISIBLE, GLFW_FALSE);
  GLFWwindow* win = glfwCreateWindow(W, H, "cplab-viz", nullptr, nullptr);
  if (win == nullptr) {
    std::fprintf(stderr, "cplab-viz: cannot open a %dx%d OpenGL 3.3 window (%s)\n", W, H, g_glfw_error.c_str());
    glfwTerminate();
    return 3;
  }
  glfwMakeContextCurrent(win);
  glfwSwapInterval(headless ? 0 : 1);
  IMGUI_CHECKVERSION();
  ImGui::CreateContext();
  ImGui::GetIO().IniFilename = nullptr;
  app_style();
  ImGui_ImplGlfw_InitForOpenGL(win, true);
  ImGui_ImplOpenGL3_Init("#version 330");
  int rc = 0;
  double last = glfwGetTime();
  for (int f = 0; headless ? f < frames : !glfwWindowShouldClose(win); ++f) {
    glfwPollEvents();
    ImGui_ImplOpenGL3_NewFrame();
    ImGui_ImplGlfw_NewFrame();
    ImGui::NewFrame();
    int fw = 0, fh = 0;
    glfwGetFramebufferSize(win, &fw, &fh);
    const double now = glfwGetTime();
    draw_frame(app, static_cast<float>(fw), static_cast<float>(fh), now - last);
    last = now;
    ImGui::Render();
    glViewport(0, 0, fw, fh);
    glClearColor(24 / 255.0f, 24 / 255.0f, 28 / 255.0f, 1.0f);
    glClear(GL_COLOR_BUFFER_BIT);
    ImGui_ImplOpenGL3_RenderDrawData(ImGui::GetDrawData());
    if (headless && f == frames - 1) {
      std::vector<unsigned char> px(static_cast<size_t>(fw) * static_cast<size_t>(fh) * 4);
      glPixelStorei(GL_PACK_ALIGNMENT, 1);
      glReadBuffer(GL_BACK);
      glReadPixels(0, 0, fw, fh, GL_RGBA, GL_UNSIGNED_BYTE, px.data());
      stbi_flip_vertically_on_write(1);
      std::string bytes;  // the PNG in memory, then written whole or not at all (core/output_file.h)
      const auto append = [](void* to, void* data, int n) {
        static_cast<std::string*>(to)->append(static_cast<const char*>(data), static_cast<size_t>(n));
      };
      try {
        require(stbi_write_png_to_func(append, &bytes, fw, fh, 4, px.data(), fw * 4) != 0,
                "--out " + png + ": cannot encode the PNG");
        // staged only: committed with --scene-json's file once that is written too (main.cpp)
        out.stage(png, "--out",
                  [&](std::ostream& os) { os.write(bytes.data(), static_cast<std::streamsize>(bytes.size())); });
      } catch (const Error& e) {
        std::fprintf(stderr, "cplab-viz: error: %s\n", e.what());
        rc = 2;
      }
    }
    glfwSwapBuffers(win);
  }
  ImGui_ImplOpenGL3_Shutdown();
  ImGui_ImplGlfw_Shutdown();
  ImGui::DestroyContext();
  glfwDestroyWindow(win);
  glfwTerminate();
  return rc;
}

double bench_frames(AppState& app, int W, int H, int n) {
  ImGui::CreateContext();
  ImGuiIO& io = ImGui::GetIO();
  io.IniFilename = nullptr;
  io.DisplaySize = {static_cast<float>(W), static_cast<float>(H)};
  io.DeltaTime = 1.0f / 60;
  io.BackendFlags |= ImGuiBackendFlags_RendererHasVtxOffset;  // as imgui_impl_opengl3 sets it: draw lists over 64K vertices
  unsigned char* px = nullptr;
  int tw = 0, th = 0;
  io.Fonts->GetTexDataAsRGBA32(&px, &tw, &th);  // builds the font atlas (no texture upload: no GL)
  app_style();
  io.MousePos = {W * 0.6f, H * 0.4f};  // hovering over the view, so hover text is built too
  double total = 0;
  for (int f = 0; f < n + 2; ++f) {
    const auto t0 = std::chrono::steady_clock::now();
    ImGui::NewFrame();
    draw_frame(app, static_cast<float>(W), static_cast<float>(H), 1.0 / 60);
    ImGui::Render();
    const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    if (f >= 2) total += ms;  // the first two frames settle ImGui's layout
    if (f == 2 && ms * n > kMaxBenchSeconds * 1000 && n > 1) {  // the third frame tells what n of them take
      ImGui::DestroyContext();
      char per[32];
      std::snprintf(per, sizeof per, "%.3g", ms);
      throw Error("--bench-frames " + std::to_string(n) + " at " + per + " ms per frame would take " +
                  std::to_string(static_cast<long long>(ms * n / 1000)) + " s, more than the " +
                  std::to_string(static_cast<int>(kMaxBenchSeconds)) + " s a frame benchmark may take: use at most " +
                  std::to_string(std::max(1LL, static_cast<long long>(kMaxBenchSeconds * 1000 / std::max(ms, 1e-3)))) +
                  " frames for this view");
    }
  }
  ImGui::DestroyContext();
  return total / n;
}

}  // namespace cplab::viz
