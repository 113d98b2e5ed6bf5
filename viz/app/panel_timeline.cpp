// panel_timeline.cpp: the controls of the timeline view (see app.h).
#include <imgui.h>

#include <algorithm>

#include "app.h"

namespace cplab::viz {

void panel_timeline(AppState& app) {
  ImGui::TextWrapped("Per-rank compute and communication lanes of the run's trace (or of --trace FILE).");
  if (app.params.trace_file.empty()) run_controls(app);
  else ImGui::TextWrapped("trace: %s", app.params.trace_file.c_str());
  ImGui::Separator();
  double end = 0;
  for (const auto& t : app.run.timed) end = std::max(end, t.t1);
  if (end <= 0) end = 1;
  float a = static_cast<float>(app.vs.t0 / end), b = static_cast<float>(app.vs.t1 > app.vs.t0 ? app.vs.t1 / end : 1.0);
  bool ch = ImGui::SliderFloat("from", &a, 0.0f, 0.99f, "%.2f");
  help("Start of the visible window, as a fraction of the whole trace.");
  ch |= ImGui::SliderFloat("to", &b, 0.01f, 1.0f, "%.2f");
  help("End of the visible window, as a fraction of the whole trace.");
  if (ch && b > a) app.vs.t0 = a * end, app.vs.t1 = b * end;
}

}  // namespace cplab::viz
