// web_main.cpp: cplab-viz in the browser (scripts/web.sh builds it with emscripten into one file,
// index.html with the WebAssembly inside, that any static host serves and a browser opens from disk).
//
// What it is: the browser's main loop around the same frame as the desktop app (app.h draw_frame,
// every view and lesson page, the reference computing each model in the page, one thread), with
//   the address    the URL's query opens a picture (url_args.h: the command line's words, rules and
//                  one-line errors) and follows the controls (history.replaceState each time the
//                  query of what is shown changes), so a copied link reopens the same picture
//   files          dropped on the page or opened with the controls pane's button (web_files.h)
//   errors         a bad link or file: its one line in the page (the pane and a banner), never a
//                  blank page; the previous picture stays
//   an API         for the page's tests and scripts (window.cplab in shell.html): the scene JSON
//                  of the canvas (byte for byte what `cplab-viz --headless --controls --scene-json`
//                  writes for the same options and size), the query, the last error, the frame-build
//                  time (scene + ImGui draw lists, as `cplab-viz --bench-frames` times it) and the
//                  time to the first frame
// What it is not: a second app: no view, rule or lesson logic lives here (viz/scene, viz/cli,
// viz/app); the desktop window and PNG output are gl_output.cpp's.
#include <GLFW/glfw3.h>
#include <emscripten.h>
#include <imgui.h>
#include <imgui_impl_glfw.h>
#include <imgui_impl_opengl3.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <array>
#include <string>
#include <vector>

#include "app.h"
#include "lesson_mode.h"
#include "scene_json.h"
#include "url_args.h"
#include "web_files.h"

using namespace cplab;
using namespace cplab::viz;

namespace {

struct Page {
  AppState app;
  GLFWwindow* win = nullptr;
  std::string error;       // the last bad link or file, one line ("cplab-viz: error: ...")
  std::string query;       // what the address bar holds
  std::string scene_json;  // the last frame's, built on request
  double started_ms = 0, first_frame_ms = -1;
  std::array<double, 120> build_ms{};  // the frame-build times of the last 120 frames
  long long frames = 0;
};

Page& page() {
  static Page p;
  return p;
}

// the page's JavaScript (shell.html): the error banner and the address bar
EM_JS(void, js_show_error, (const char* text), { cplabShowError(UTF8ToString(text)); });
EM_JS(void, js_set_query, (const char* query), { cplabSetQuery(UTF8ToString(query)); });
EM_JS(void, js_first_frame, (), {
  window.cplabFirstFrameAt = performance.now();
  document.getElementById('cplab-status').style.display = 'none';
});
EM_JS(int, js_width, (), { return window.innerWidth; });
EM_JS(int, js_height, (), { return window.innerHeight; });

void set_error(const std::string& e) {
  Page& p = page();
  p.error = e;
  p.app.page_error = e;
  js_show_error(e.c_str());
}

// the address of what the app shows: a lesson page's own "lesson=N&page=K" while the picture is still
// that page's, else the picture's options (an edit in a lesson leaves its page: the link must reopen
// what is shown)
UrlState app_state(const AppState& a) {
  UrlState s;
  s.params = a.params;
  s.view = a.view;
  if (a.run_ok && a.vs.step >= 0 && a.vs.step < static_cast<int>(a.run.steps.size()))
    s.ring_step = a.run.steps[static_cast<size_t>(a.vs.step)];
  s.zoom0 = a.vs.zoom0;
  s.check_report = a.check_file;
  return s;
}

std::string app_query(const AppState& a) {
  const std::string q = state_query(app_state(a));
  if (a.lesson <= 0) return q;
  static std::pair<int, int> cached_for{0, 0};
  static std::string page_q;  // the query of the page's own picture
  if (cached_for != std::pair{a.lesson, a.page}) {
    cached_for = {a.lesson, a.page};
    try {
      page_q = state_query(url_state(launch_page({a.lesson, a.page})));
    } catch (const std::exception&) {
      page_q.clear();
    }
  }
  UrlState l;
  l.lesson = a.lesson, l.page = a.page;
  return q == page_q ? state_query(l) : q;
}

// opens the query's picture; a query that breaks a rule leaves the picture as it was
int open_query(const std::string& query) {
  UrlOpen u = open_url(query);
  if (!u.launch) {
    set_error(u.error);
    return 2;
  }
  page().app.launch(std::move(*u.launch));
  set_error("");
  return 0;
}

void on_drop(GLFWwindow*, int n, const char** paths) {
  std::vector<std::string> files(paths, paths + n);
  set_error(open_files(page().app, files));
}

void frame() {
  Page& p = page();
  const int w = std::max(320, js_width()), h = std::max(200, js_height());
  int ww = 0, wh = 0;
  glfwGetWindowSize(p.win, &ww, &wh);
  if (ww != w || wh != h) glfwSetWindowSize(p.win, w, h);
  glfwPollEvents();
  ImGui_ImplOpenGL3_NewFrame();
  ImGui_ImplGlfw_NewFrame();
  int fw = 0, fh = 0;
  glfwGetFramebufferSize(p.win, &fw, &fh);
  const double t0 = emscripten_get_now();
  ImGui::NewFrame();
  static double last = t0;
  draw_frame(p.app, static_cast<float>(fw), static_cast<float>(fh), (t0 - last) / 1000.0);
  last = t0;
  ImGui::Render();
  p.build_ms[static_cast<size_t>(p.frames % static_cast<long long>(p.build_ms.size()))] = emscripten_get_now() - t0;
  glViewport(0, 0, fw, fh);
  glClearColor(24 / 255.0f, 24 / 255.0f, 28 / 255.0f, 1.0f);
  glClear(GL_COLOR_BUFFER_BIT);
  ImGui_ImplOpenGL3_RenderDrawData(ImGui::GetDrawData());
  if (p.first_frame_ms < 0) p.first_frame_ms = emscripten_get_now() - p.started_ms, js_first_frame();
  ++p.frames;
  p.scene_json.clear();
  if (!p.app.page_error.empty() && p.app.page_error != p.error) set_error(p.app.page_error);  // a file opened from the pane
  if (p.app.page_error.empty() && !p.error.empty()) set_error("");                            // dismissed in the pane
  const std::string q = app_query(p.app);
  if (q != p.query) {
    p.query = q;
    js_set_query(q.c_str());
  }
}

}  // namespace

// ---- the page's API (window.cplab in shell.html)
extern "C" {

EMSCRIPTEN_KEEPALIVE const char* cplab_scene_json() {
  Page& p = page();
  if (p.scene_json.empty())
    p.scene_json = scene_json(p.app.last, view_names()[static_cast<size_t>(p.app.view)]).dump(1) + "\n";
  return p.scene_json.c_str();
}
EMSCRIPTEN_KEEPALIVE const char* cplab_query() { return page().query.c_str(); }
EMSCRIPTEN_KEEPALIVE const char* cplab_error() { return page().error.c_str(); }
EMSCRIPTEN_KEEPALIVE const char* cplab_check_text() { return page().app.check_text.c_str(); }
EMSCRIPTEN_KEEPALIVE int cplab_open_query(const char* query) { return open_query(query); }
EMSCRIPTEN_KEEPALIVE int cplab_clear_check() {
  clear_check_files();
  return 0;
}
// newline-separated paths in the page's file system (shell.html wrote them there)
EMSCRIPTEN_KEEPALIVE int cplab_open_files(const char* paths) {
  std::vector<std::string> files;
  std::string t = paths;
  for (size_t at = 0; at < t.size();) {
    size_t end = t.find('\n', at);
    if (end == std::string::npos) end = t.size();
    if (end > at) files.push_back(t.substr(at, end - at));
    at = end + 1;
  }
  set_error(open_files(page().app, files));
  return page().error.empty() ? 0 : 2;
}
// the mean frame-build time of the last n frames (at most 120), in milliseconds
EMSCRIPTEN_KEEPALIVE double cplab_frame_ms(int n) {
  Page& p = page();
  const long long k = std::min<long long>({static_cast<long long>(std::max(n, 1)), p.frames,
                                           static_cast<long long>(p.build_ms.size())});
  double sum = 0;
  for (long long i = 1; i <= k; ++i)
    sum += p.build_ms[static_cast<size_t>((p.frames - i) % static_cast<long long>(p.build_ms.size()))];
  return k > 0 ? sum / static_cast<double>(k) : -1;
}
// where a named control was drawn in the last frame (AppState::items): "[x0,y0,x1,y1]", or "" if it was not
EMSCRIPTEN_KEEPALIVE const char* cplab_item_rect(const char* name) {
  static std::string r;
  const auto it = page().app.items.find(name);
  r.clear();
  if (it != page().app.items.end())
    r = nlohmann::json(std::vector<float>(it->second.begin(), it->second.end())).dump();
  return r.c_str();
}
EMSCRIPTEN_KEEPALIVE double cplab_first_frame_ms() { return page().first_frame_ms; }
EMSCRIPTEN_KEEPALIVE double cplab_frames() { return static_cast<double>(page().frames); }

}  // extern "C"

int main(int argc, char** argv) {
  Page& p = page();
  p.started_ms = emscripten_get_now();
  if (!glfwInit()) {
    set_error("cplab-viz: error: this browser gave no WebGL2 context (cplab-viz needs WebGL2)");
    return 1;
  }
  glfwWindowHint(GLFW_CLIENT_API, GLFW_OPENGL_ES_API);
  glfwWindowHint(GLFW_CONTEXT_VERSION_MAJOR, 3);
  glfwWindowHint(GLFW_CONTEXT_VERSION_MINOR, 0);
  p.win = glfwCreateWindow(std::max(320, js_width()), std::max(200, js_height()), "cplab-viz", nullptr, nullptr);
  if (p.win == nullptr) {
    set_error("cplab-viz: error: this browser gave no WebGL2 context (cplab-viz needs WebGL2)");
    return 1;
  }
  glfwMakeContextCurrent(p.win);
  IMGUI_CHECKVERSION();
  ImGui::CreateContext();
  ImGui::GetIO().IniFilename = nullptr;
  app_style();
  ImGui_ImplGlfw_InitForOpenGL(p.win, true);
  ImGui_ImplOpenGL3_Init("#version 300 es");
  glfwSetDropCallback(p.win, on_drop);
  p.app.controls = true;
  p.app.platform_controls = web_controls;
  // the first picture: the address's, else the command line's defaults (the ring view)
  if (open_query(argc > 1 ? argv[1] : "") != 0) {
    const std::string e = p.error;
    open_query("");
    set_error(e);
  }
  emscripten_set_main_loop(frame, 0, true);
  return 0;
}
