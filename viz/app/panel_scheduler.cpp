// panel_scheduler.cpp: the controls of the DCP scheduler view (see app.h).
#include <imgui.h>

#include <cstring>

#include "app.h"

namespace cplab::viz {

void panel_scheduler(AppState& app) {
  VizParams& p = app.params;
  ImGui::TextWrapped("Dynamic CP: each sequence gets its own CP size and group of ranks. Megatron v1 (top) and cplab (bottom).");
  bool changed = false;
  long long N = p.ranks, M = p.max_per_rank;
  if (input_int_committed("ranks", N)) p.ranks = N, changed = true;
  help("Ranks in the DP x CP group (a power of two).");
  if (input_int_committed("max tokens/rank", M)) p.max_per_rank = M, changed = true;
  help("Memory limit: a sequence of L tokens needs at least L / this many ranks (rounded up to a power of two).");
  static char len[1024] = "";
  static int len_version = -1;  // reloaded when the parameters were replaced (a lesson page opened)
  if (len[0] == 0 || len_version != app.params_version) {
    std::strncpy(len, p.lengths.c_str(), sizeof len - 1);
    len_version = app.params_version;
  }
  if (input_text_committed("lengths", len, sizeof len)) p.lengths = len, p.dist.clear(), changed = true;
  help("The batch: sequence lengths in tokens. The default is the 8-sample example of `cplab schedule`.");
  static char dist[512] = "";
  if (input_text_committed("distribution", dist, sizeof dist)) p.dist = dist, changed = true;
  help("A length distribution file (data/dcp/*.json): draws one batch with the seed below, as `cplab schedule --dist` does.");
  int seed = static_cast<int>(p.seed);
  if (ImGui::InputInt("seed", &seed)) p.seed = static_cast<std::uint64_t>(seed < 0 ? 0 : seed), changed = !p.dist.empty() || changed;
  help("Seed of the batch drawn from the distribution.");
  static const char* costs[] = {"overhead", "l2"};
  int ci = p.cost == "l2" ? 1 : 0;
  if (ImGui::Combo("cost", &ci, costs, 2)) p.cost = costs[ci], changed = true;
  help("l2: Megatron's (L/1024)^2 / cp (then 'every sequence on all ranks' is always best). overhead: adds "
       "linear work, ring latency, unhidden KV transfer and a fixed cost per CP group, which makes the choice real.");
  if (changed) app.rebuild_sched();
  if (!app.sched_error.empty()) error_text(app.sched_error);
}

}  // namespace cplab::viz
