// viz_typed_input.cpp: cplab-viz's typed fields (viz/app/typed_input.h) driven through a headless
// Dear ImGui context (no window, no GL): a value typed is not applied keystroke by keystroke, and it
// is applied when the field is left by a click elsewhere, by Tab or by Enter. Exit 0 when all hold,
// else 1 with one line per broken rule (ctest viz_typed_input).
// What it is not: a test of the panels (the scene tests check what the views draw).
#include <imgui.h>

#include <cstdio>
#include <cstring>
#include <string>

#include "typed_input.h"

using cplab::viz::input_int_committed;
using cplab::viz::input_text_committed;

namespace {

int failures = 0;
void check(bool ok, const char* rule) {
  if (!ok) std::printf("FAIL: %s\n", rule), ++failures;
}

}  // namespace

int main() {
  ImGui::CreateContext();
  ImGuiIO& io = ImGui::GetIO();
  io.DisplaySize = {800, 600};
  io.DeltaTime = 1.0f / 60;
  io.IniFilename = nullptr;
  unsigned char* pixels = nullptr;
  int w = 0, h = 0;
  io.Fonts->GetTexDataAsRGBA32(&pixels, &w, &h);  // the atlas a frame needs; nothing is drawn
  io.KeyMap[ImGuiKey_Tab] = 1, io.KeyMap[ImGuiKey_Enter] = 2;

  long long cp = 4;
  char cu[64] = "0,8";
  int cp_commits = 0, cu_commits = 0;
  ImVec2 at_cp, at_cu;
  auto frame = [&] {
    ImGui::NewFrame();
    ImGui::SetNextWindowPos({0, 0});
    ImGui::SetNextWindowSize({400, 300});
    ImGui::Begin("fields");
    if (input_int_committed("cp", cp)) ++cp_commits;
    at_cp = {(ImGui::GetItemRectMin().x + ImGui::GetItemRectMax().x) / 2, (ImGui::GetItemRectMin().y + ImGui::GetItemRectMax().y) / 2};
    if (input_text_committed("cu_seqlens", cu, sizeof cu)) ++cu_commits;
    at_cu = {(ImGui::GetItemRectMin().x + ImGui::GetItemRectMax().x) / 2, (ImGui::GetItemRectMin().y + ImGui::GetItemRectMax().y) / 2};
    ImGui::End();
    ImGui::Render();
  };
  auto click = [&](ImVec2 at) {
    io.MousePos = at;
    io.MouseDown[0] = true;
    frame();
    io.MouseDown[0] = false;
    frame();
  };
  auto key = [&](int k) {
    io.KeysDown[k] = true;
    frame();
    io.KeysDown[k] = false;
    frame();
    frame();
  };
  frame();

  // a click elsewhere applies what was typed (the field selects all on a click: "128" replaces "4")
  click(at_cp);
  io.AddInputCharactersUTF8("128");
  frame();
  frame();
  check(cp == 4 && cp_commits == 0, "an integer field applies its value while it is typed");
  click({600, 500});  // outside the window
  frame();
  check(cp == 128 && cp_commits == 1, "an integer field left by a click elsewhere keeps the value typed");

  // Tab applies it too
  click(at_cu);
  io.AddInputCharactersUTF8("9");
  frame();
  check(cu_commits == 0, "a text field reports an edit before it ends");
  key(1);  // Tab
  check(cu_commits == 1 && std::strchr(cu, '9') != nullptr, "a text field left by Tab keeps the text typed");

  // and Enter, as before (Tab moved the focus on to the cp field: leave it first)
  click({600, 500});
  check(cp == 128 && cp_commits == 1, "a field that Tab focused, left without an edit, reports no change");
  click(at_cp);
  io.AddInputCharactersUTF8("64");
  frame();
  key(2);  // Enter
  check(cp == 64 && cp_commits == 2, "an integer field applies its value on Enter");

  // leaving a field without typing applies nothing
  click(at_cp);
  click({600, 500});
  check(cp == 64 && cp_commits == 2, "a field left without an edit reports no change");

  ImGui::DestroyContext();
  if (failures == 0) std::printf("typed fields: applied on a click elsewhere, Tab and Enter, never while typed\n");
  return failures == 0 ? 0 : 1;
}
