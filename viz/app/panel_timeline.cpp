// panel_timeline.cpp: the controls of the timeline view (see app.h): the run, the model's presets
// (cplab plan's, plan/perf_model.h) and the visible window.
#include <imgui.h>

#include <algorithm>
#include <string>
#include <vector>

#include "app.h"
#include "render.h"

namespace cplab::viz {

namespace {

// a combo over preset names; true when the choice changed
bool preset_combo(const char* label, std::string& value, const std::vector<std::string>& names, const char* tip) {
  std::vector<const char*> items;
  int at = 0;
  for (size_t i = 0; i < names.size(); ++i) {
    items.push_back(names[i].c_str());
    if (names[i] == value) at = static_cast<int>(i);
  }
  const bool changed = ImGui::Combo(label, &at, items.data(), static_cast<int>(items.size()));
  help(tip);
  if (changed) value = names[static_cast<size_t>(at)];
  return changed;
}

}  // namespace

void panel_timeline(AppState& app) {
  ImGui::TextWrapped("Per-rank compute and communication lanes of the run's trace, modelled as cplab plan models it "
                     "(or the measured times of --trace FILE).");
  if (app.params.trace_file.empty()) {
    run_controls(app);
    ImGui::Separator();
    PerfOptions& o = app.params.perf;
    bool ch = preset_combo("gpu", o.gpu, gpu_preset_names(), "GPU preset: the attention TFLOP/s and HBM bandwidth of the model (as cplab plan --gpu).");
    ch |= preset_combo("intra", o.intra, link_preset_names(), "Link between GPUs of one node (as cplab plan --intra).");
    ch |= preset_combo("inter", o.inter, link_preset_names(), "Link between nodes (as cplab plan --inter).");
    long long gpn = o.gpus_per_node;
    if (input_int_committed("gpus/node", gpn))
      o.gpus_per_node = static_cast<index_t>(gpn), ch = true;
    help("GPUs per node (applied on Enter, Tab or a click elsewhere): ranks r / gpus-per-node share a node and its intra link; cp must fill whole nodes.");
    if (ch) app.rebuild_run();
  } else {
    ImGui::TextWrapped("trace: %s", shown(app.params.trace_file, 500).c_str());
  }
  ImGui::Separator();
  double end = 0;
  for (const auto& t : app.run.step_span) end = std::max(end, t.t1);
  if (end <= 0) end = 1;
  float a = static_cast<float>(app.vs.t0 / end), b = static_cast<float>(app.vs.t1 > app.vs.t0 ? app.vs.t1 / end : 1.0);
  bool ch = ImGui::SliderFloat("from", &a, 0.0f, 0.99f, "%.2f");
  help("Start of the visible window, as a fraction of the whole trace.");
  ch |= ImGui::SliderFloat("to", &b, 0.01f, 1.0f, "%.2f");
  help("End of the visible window, as a fraction of the whole trace.");
  if (ch && b > a) app.vs.t0 = a * end, app.vs.t1 = b * end;
}

}  // namespace cplab::viz
