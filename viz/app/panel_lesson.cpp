// panel_lesson.cpp: the lesson pane above the canvas (see app.h): "Lesson N: title - page k of m",
// the page's title and explanation, Previous / Next across pages and lessons, the page's command.
// Everything it shows comes from the page (tutorials/viz_pages.json through viz/cli/lesson_mode.h);
// which page is next is lesson_mode.h's, and opening one is AppState::open_page.
// What it is not: the pages' content or the navigation rule (both testable without ImGui there).
#include <imgui.h>

#include <algorithm>
#include <exception>

#include "app.h"
#include "lesson_mode.h"
#include "render.h"

namespace cplab::viz {

void AppState::open_page(int l, int p) {
  try {
    launch(launch_page({l, p}));
  } catch (const std::exception& e) {
    lesson_error = e.what();
  }
}

void AppState::launch(VizLaunch&& L) {
  params = L.params;
  view = L.view;
  vs = ViewState{};
  vs.step = L.step, vs.zoom0 = L.zoom0;
  playing = false, play_clock = 0;
  run_ok = sched_ok = false;
  run_error.clear(), sched_error.clear();
  if (L.run) run = std::move(*L.run), run_ok = true;
  else rebuild_run();
  if (L.sched) sched = std::move(*L.sched), sched_ok = true;
  else rebuild_sched();
  if (L.check) check = std::move(*L.check), check_ok = true, check_file = L.check_report, check_text.clear();
  lesson = L.lesson, page = L.page, lesson_error.clear();
  ++params_version;
}

float lesson_pane(AppState& app, float x, float w) {
  if (app.lesson <= 0) return 0;
  const PageRef at{app.lesson, app.page};
  const lesson::VizPage& pg = page_of(at);
  const std::string heading = page_heading(at), command = page_command(at);
  const ImGuiStyle& st = ImGui::GetStyle();
  const float inner = w - 2 * st.WindowPadding.x;
  const float line = ImGui::GetTextLineHeight(), gap = st.ItemSpacing.y;
  // the buttons, then the page's command wrapped beside them
  const float buttons = ImGui::CalcTextSize("< Previous").x + ImGui::CalcTextSize("Next >").x + 4 * st.FramePadding.x + 2 * st.ItemSpacing.x;
  const float cmd_h = ImGui::CalcTextSize(command.c_str(), nullptr, false, std::max(100.0f, inner - buttons)).y;
  float h = 2 * st.WindowPadding.y + 2 * (line + gap);  // heading, page title
  h += ImGui::CalcTextSize(pg.text.c_str(), nullptr, false, inner).y + gap;
  h += std::max(ImGui::GetFrameHeight(), cmd_h);
  if (!app.lesson_error.empty())
    h += gap + ImGui::CalcTextSize(shown(app.lesson_error, 1000).c_str(), nullptr, false, inner).y;

  ImGui::SetNextWindowPos({x, 0});
  ImGui::SetNextWindowSize({w, h});
  ImGui::Begin("##lesson", nullptr, ImGuiWindowFlags_NoDecoration | ImGuiWindowFlags_NoMove | ImGuiWindowFlags_NoSavedSettings);
  ImGui::TextUnformatted(heading.c_str());
  ImGui::TextColored({1.0f, 0.85f, 0.35f, 1.0f}, "%s", pg.title.c_str());
  ImGui::PushTextWrapPos(0.0f);
  ImGui::TextUnformatted(pg.text.c_str());
  ImGui::PopTextWrapPos();
  const PageRef prev = prev_page(at), next = next_page(at);
  ImGui::BeginDisabled(!prev.open());
  const bool go_prev = ImGui::Button("< Previous");
  note_item(app, "< Previous");
  ImGui::EndDisabled();
  ImGui::SameLine();
  ImGui::BeginDisabled(!next.open());
  const bool go_next = ImGui::Button("Next >");
  note_item(app, "Next >");
  ImGui::EndDisabled();
  ImGui::SameLine();
  ImGui::PushStyleColor(ImGuiCol_Text, st.Colors[ImGuiCol_TextDisabled]);
  ImGui::PushTextWrapPos(0.0f);
  ImGui::TextUnformatted(command.c_str());
  ImGui::PopTextWrapPos();
  ImGui::PopStyleColor();
  if (ImGui::IsItemHovered())
    ImGui::SetTooltip("This page's view without the lesson pane. The explanation's numbers are this run's: "
                      "an edit in the controls changes the run, not the text.");
  if (!app.lesson_error.empty()) {
    ImGui::PushTextWrapPos(0.0f);
    ImGui::TextColored({1.0f, 0.45f, 0.45f, 1.0f}, "%s", shown(app.lesson_error, 1000).c_str());
    ImGui::PopTextWrapPos();
  }
  ImGui::End();
  // opened after the pane is drawn: the pane above showed one page throughout
  if (go_prev) app.open_page(prev.lesson, prev.page);
  if (go_next) app.open_page(next.lesson, next.page);
  return h;
}

}  // namespace cplab::viz
