// panel_ring.cpp: the controls of the ring view: the run, and the step with play / pause (see app.h).
#include <imgui.h>

#include <algorithm>

#include "app.h"

namespace cplab::viz {

void panel_ring(AppState& app) {
  const int n = app.run_ok ? static_cast<int>(app.run.steps.size()) : 0;
  ImGui::TextWrapped("One step of the run: the tiles each rank computes (with their mask), the messages, and the work so far.");
  run_controls(app);
  ImGui::Separator();
  if (n == 0) return;
  app.vs.step = std::clamp(app.vs.step, 0, n - 1);
  // the step counted within its phase, as the view's title counts it (step_label): "fwd step 1 (2 of 4
  // forward steps)"; the slider still runs through the backward's steps after the forward's
  const std::string label = step_label(app.run, app.vs.step);
  ImGui::SliderInt("step", &app.vs.step, 0, n - 1, label.c_str());
  help("Steps of the trace in order: the forward's, then the backward's (if traced), each counted within its own pass. "
       "A ring has cp steps per pass; all-gather and all-to-all modes have a communication step before and after the compute step.");
  if (ImGui::Button("<")) app.vs.step = (app.vs.step + n - 1) % n;
  ImGui::SameLine();
  if (ImGui::Button(app.playing ? "pause" : "play")) app.playing = !app.playing;
  ImGui::SameLine();
  if (ImGui::Button(">")) app.vs.step = (app.vs.step + 1) % n;
  help("Step back, play / pause, step forward.");
  ImGui::SliderFloat("steps/s", &app.steps_per_second, 0.25f, 8.0f, "%.2f");
  help("Playback speed.");
}

}  // namespace cplab::viz
