// app.cpp: the frame of cplab-viz: controls pane + lesson pane + canvas (see app.h).
#include "app.h"

#include <imgui.h>

#include <algorithm>
#include <exception>
#include <new>

#include "core/error.h"
#include "render.h"

namespace cplab::viz {

void AppState::rebuild_run() {
  try {
    run = RunModel::build(params);
    run_ok = true;
    run_error.clear();
  } catch (const Error& e) {
    run_error = e.what();
  } catch (const std::bad_alloc&) {  // an edit the rules let through but this machine cannot hold
    run_error = "out of memory building this model: choose smaller sizes";
  } catch (const std::exception& e) {
    run_error = e.what();
  }
}

void AppState::rebuild_sched() {
  try {
    sched = SchedModel::build(params);
    sched_ok = true;
    sched_error.clear();
  } catch (const Error& e) {
    sched_error = e.what();
  } catch (const std::bad_alloc&) {  // an edit the rules let through but this machine cannot hold
    sched_error = "out of memory building this model: choose smaller sizes";
  } catch (const std::exception& e) {
    sched_error = e.what();
  }
}

void help(const char* text) {
  ImGui::SameLine();
  ImGui::TextDisabled("(?)");
  if (ImGui::IsItemHovered()) {
    ImGui::BeginTooltip();
    ImGui::PushTextWrapPos(ImGui::GetFontSize() * 32.0f);
    ImGui::TextUnformatted(text);
    ImGui::PopTextWrapPos();
    ImGui::EndTooltip();
  }
}

void error_text(const std::string& text) {
  ImGui::PushStyleColor(ImGuiCol_Text, ImVec4{1.0f, 0.45f, 0.45f, 1.0f});
  ImGui::TextWrapped("%s", shown(text, 1000).c_str());
  ImGui::PopStyleColor();
}

Scene build_view(const AppState& a, const ViewState& vs, float W, float H) {
  const std::string& v = view_names()[static_cast<size_t>(a.view)];
  auto nothing = [&](std::string title) {  // no model yet: the rule it breaks, as the title
    Scene s;
    s.width = W, s.height = H, s.title = std::move(title);
    return s;
  };
  if (v == "check")
    return a.check_ok ? check_view(a.check, vs, W, H) : nothing("no check report: start cplab-viz with --check-report FILE (a `cplab check --json` file)");
  if (v == "scheduler") return a.sched_ok ? scheduler_view(a.sched, vs, W, H) : nothing("no schedule: " + a.sched_error);
  if (!a.run_ok) return nothing("no run: " + a.run_error);
  if (v == "ownership") return ownership_view(a.run, vs, W, H);
  if (v == "ring") return ring_view(a.run, vs, W, H);
  if (v == "masks") return masks_view(a.run, vs, W, H);
  return timeline_view(a.run, vs, W, H);
}

void draw_frame(AppState& app, float W, float H, double dt) {
  const float cw = app.controls ? 360.0f : 0.0f;
  const int n_steps = app.run_ok ? static_cast<int>(app.run.steps.size()) : 0;
  if (app.playing && n_steps > 0 && view_names()[static_cast<size_t>(app.view)] == "ring") {
    app.play_clock += dt * app.steps_per_second;
    while (app.play_clock >= 1.0) app.play_clock -= 1.0, app.vs.step = (app.vs.step + 1) % n_steps;
  }
  if (app.controls) {
    ImGui::SetNextWindowPos({0, 0});
    ImGui::SetNextWindowSize({cw, H});
    ImGui::Begin("cplab-viz", nullptr, ImGuiWindowFlags_NoMove | ImGuiWindowFlags_NoResize | ImGuiWindowFlags_NoCollapse);
    for (size_t i = 0; i < view_names().size(); ++i) {  // wrapped where the pane ends (none is cut)
      const char* name = view_names()[i].c_str();
      const float w = ImGui::GetFrameHeight() + ImGui::GetStyle().ItemInnerSpacing.x + ImGui::CalcTextSize(name).x;
      if (i > 0) {
        ImGui::SameLine();
        if (ImGui::GetContentRegionAvail().x < w) ImGui::NewLine();
      }
      ImGui::RadioButton(name, &app.view, static_cast<int>(i));
    }
    help("ownership: which rank holds which tokens. ring: what every rank computes and sends at one step. "
         "masks: the causal mask globally, in rank order, and each rank's tiles. scheduler: dynamic CP, "
         "which ranks run which sequence when. timeline: per-rank compute and communication over time.");
    ImGui::Separator();
    const std::string& v = view_names()[static_cast<size_t>(app.view)];
    if (v == "ownership") panel_ownership(app);
    else if (v == "ring") panel_ring(app);
    else if (v == "masks") panel_masks(app);
    else if (v == "scheduler") panel_scheduler(app);
    else if (v == "check")
      ImGui::TextWrapped("the error heat map of %s (cplab check --json)",
                         app.check_ok ? shown(app.check.source, 500).c_str() : "no report");
    else panel_timeline(app);
    ImGui::End();
  }
  const float top = lesson_pane(app, cw, W - cw);  // 0 when no lesson page is open
  ImGui::SetNextWindowPos({cw, top});
  ImGui::SetNextWindowSize({W - cw, H - top});
  ImGui::Begin("##canvas", nullptr,
               ImGuiWindowFlags_NoDecoration | ImGuiWindowFlags_NoMove | ImGuiWindowFlags_NoBringToFrontOnFocus |
                   ImGuiWindowFlags_NoSavedSettings);
  const float line = ImGui::GetTextLineHeightWithSpacing();
  const ImVec2 o0 = ImGui::GetCursorScreenPos();
  const float cvw = W - cw - 2 * ImGui::GetStyle().WindowPadding.x;
  // room for the title and the notes: four lines, or what the last frame's notes needed
  const float cvh = std::max(40.0f, H - top - 2 * ImGui::GetStyle().WindowPadding.y - std::max(4 * line, line + 2 + app.notes_h));
  ViewState vs = app.vs;
  const ImVec2 mouse = ImGui::GetIO().MousePos;
  const ImVec2 origin{o0.x, o0.y + line};
  vs.mx = mouse.x - origin.x, vs.my = mouse.y - origin.y;
  const Scene s = build_view(app, vs, cvw, cvh);
  ImGui::TextUnformatted(shown(s.title, 500).c_str());
  draw_scene(s, ImGui::GetWindowDrawList(), origin);
  // an edit that broke a rule leaves the previous model on screen: dimmed and marked stale
  const bool sched = view_names()[static_cast<size_t>(app.view)] == "scheduler";
  const std::string& err = sched ? app.sched_error : app.run_error;
  if (!err.empty() && (sched ? app.sched_ok : app.run_ok)) {
    ImDrawList* dl = ImGui::GetWindowDrawList();
    dl->AddRectFilled(origin, {origin.x + cvw, origin.y + cvh}, IM_COL32(24, 24, 28, 170));
    const std::string banner =
        "STALE: this picture shows the last valid parameters. The current ones break a rule: " + shown(err, 1000);
    dl->AddText(nullptr, 0.0f, {origin.x + 8, origin.y + 8}, IM_COL32(255, 120, 120, 255), banner.c_str(), nullptr, cvw - 16);
  }
  ImGui::SetCursorScreenPos({origin.x, origin.y + cvh + 2});
  float notes_h = 0;
  for (const std::string& note : s.notes) {  // a note from a report may be long: its first 1000 bytes
    const std::string n = shown(note, 1000);
    ImGui::TextWrapped("%s", n.c_str());
    notes_h += ImGui::CalcTextSize(n.c_str(), nullptr, false, cvw).y + (0 < notes_h ? ImGui::GetStyle().ItemSpacing.y : 0);
  }
  app.notes_h = notes_h;
  if (!s.hover.empty() && ImGui::IsWindowHovered()) ImGui::SetTooltip("%s", shown(s.hover, 1000).c_str());
  ImGui::End();
  app.last = s;
}

}  // namespace cplab::viz
