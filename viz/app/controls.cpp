// controls.cpp: the run parameters every run view shares, each with its "(?)" help (see app.h).
//
// What it is: widgets that edit the run's CpFields as given (app.params.cp); after an edit the app
// rebuilds the run model, which constructs the CpSpec, and a refused spec leaves the previous model
// shown with the rule it broke. What it is not: validation (modes/cp_spec.h) or a list of modes (the
// mode combo lists modes/mode_table.h).
#include <imgui.h>

#include <cstring>
#include <vector>

#include "app.h"
#include "core/error.h"

namespace cplab::viz {

namespace {

bool input_index(const char* label, index_t& x, const char* tip) {
  long long v = x;
  const bool changed = input_int_committed(label, v);
  help(tip);
  if (changed) x = static_cast<index_t>(v);
  return changed;
}

// an inference step's own controls (issue 37): the variant (infer_table.h) and the cache's layout and
// length, edited as given; the rebuilt model validates them (infer_spec.h)
bool infer_controls(AppState& app) {
  VizParams& p = app.params;
  bool changed = false;
  static std::vector<const char*> names;
  if (names.empty())
    for (const InferInfo& i : infer_table()) names.push_back(i.name);
  int vi = 0;
  for (size_t i = 0; i < names.size(); ++i)
    if (p.infer_mode == names[i]) vi = static_cast<int>(i);
  if (ImGui::Combo("variant", &vi, names.data(), static_cast<int>(names.size()))) p.infer_mode = names[static_cast<size_t>(vi)], changed = true;
  help("An inference step (T new tokens over P cached ones). p2p: pass-KV, the KV shards travel the ring. pass-q: Q blocks "
       "travel, KV stays, one all-to-all returns the partial outputs. decode-pass-q: the same ring, new tokens round-robin. "
       "decode-ag: every rank gathers Q, attends to its cache shard, an all-to-all returns the partials.");
  static const char* cache_layouts[] = {"zigzag", "interleaved"};
  int ci = p.cache_layout == "interleaved" ? 1 : 0;
  if (ImGui::Combo("cache layout", &ci, cache_layouts, 2)) p.cache_layout = cache_layouts[ci], changed = true;
  help("How the cache is sharded: zigzag (what zigzag prefills leave behind) or interleaved (token p on rank p mod cp).");
  static char kv[128] = "";
  static int kv_version = -1;
  if (kv_version != app.params_version) std::strncpy(kv, p.kv_cache.c_str(), sizeof kv - 1), kv_version = app.params_version;
  if (input_text_committed("kv cache", kv, sizeof kv) && std::strlen(kv) > 0) p.kv_cache = kv, changed = true;
  help("Cached tokens per request (applied on Enter, Tab or a click elsewhere): one length, or one per request (100,200).");
  return changed;
}

}  // namespace

bool run_controls(AppState& app) {
  CpFields& s = app.params.cp;
  bool changed = false;
  const std::vector<ModeInfo>& table = mode_table();
  static std::vector<const char*> modes;
  if (modes.empty())
    for (const ModeInfo& i : table) modes.push_back(i.name);
  int mi = 0;
  for (size_t i = 0; i < table.size(); ++i)
    if (table[i].mode == s.mode) mi = static_cast<int>(i);
  if (app.params.inference()) {
    changed |= infer_controls(app);  // an inference step (--kv-cache): its variants and cache layout
  } else if (ImGui::Combo("mode", &mi, modes.data(), static_cast<int>(modes.size()))) {
    s.mode = table[static_cast<size_t>(mi)].mode, changed = true;
  }
  if (!app.params.inference()) help("p2p: ring attention, KV blocks travel rank to rank while Q stays. allgather: every rank gathers all "
       "KV first (Llama 3). a2a: Ulysses, an all-to-all swaps the sequence split for a head split. a2a+p2p: "
       "all-to-all inside groups of icp ranks, ring across ocp groups.");
  static const char* layouts[] = {"contiguous", "zigzag", "striped"};
  int li = static_cast<int>(s.layout == Layout::contiguous ? 0 : s.layout == Layout::zigzag ? 1 : 2);
  if (ImGui::Combo("layout", &li, layouts, 3)) s.layout = parse_layout(layouts[li]), changed = true;
  help("How tokens are dealt to ranks. contiguous: rank r gets the r-th slice (causal work is unbalanced). "
       "zigzag: 2*cp chunks, rank r gets chunks r and 2cp-1-r (balanced). striped: token i goes to rank i mod cp.");
  changed |= input_index("cp", s.cp, "Context-parallel size: the number of ranks the sequence is split over.");
  changed |= input_index("seq", s.seq, "Tokens in the sequence (unpacked runs). zigzag needs a multiple of 2*cp, the others of cp.");
  changed |= input_index("heads", s.heads, "Query heads. Ulysses (a2a) needs heads divisible by its all-to-all size.");
  changed |= input_index("kv heads", s.kv_heads, "Key/value heads (GQA when fewer than query heads). They set the bytes a KV block weighs.");
  changed |= input_index("head dim", s.head_dim, "Dimension per head: FLOPs and bytes scale with it.");
  if (s.mode == Mode::a2a_p2p) {
    changed |= input_index("icp", s.icp, "Inner size: ranks per all-to-all group (heads are split icp ways).");
    changed |= input_index("ocp", s.ocp, "Outer size: ranks per ring (icp * ocp must equal cp).");
  }
  static char cu[512] = "";
  static int cu_version = -1;  // reloaded when the parameters were replaced (a lesson page opened)
  if (cu_version != app.params_version) {
    std::string t;
    for (size_t i = 0; i < s.cu_seqlens.size(); ++i) t += (i ? "," : "") + std::to_string(s.cu_seqlens[i]);
    std::strncpy(cu, t.c_str(), sizeof cu - 1);
    cu_version = app.params_version;
  }
  if (input_text_committed("cu_seqlens", cu, sizeof cu)) {
    try {
      s.cu_seqlens = std::strlen(cu) == 0 ? std::vector<index_t>{} : parse_cu_seqlens(cu);
      changed = true;
    } catch (const Error& e) {
      app.run_error = e.what();
    }
  }
  help("Packed (THD) sequences: cumulative lengths such as 0,12,36,42 (empty: one unpacked sequence). "
       "Each sequence is split over the ranks by the layout on its own; RoPE positions restart per sequence.");
  changed |= ImGui::Checkbox("pad", &s.pad);
  help("Pad every packed sequence to the layout's multiple (2*cp for zigzag), as TE's pad_thd_sequences_for_cp does.");
  changed |= ImGui::Checkbox("causal", &s.causal);
  help("Causal attention: a query sees only keys at or before it. This is what makes work unbalanced and tiles skippable.");
  ImGui::SameLine();
  changed |= ImGui::Checkbox("backward", &app.params.backward);
  help("Also trace the backward pass (dQ, dK, dV): KV and dKV travel the ring the other way.");
  if (changed) app.rebuild_run();
  if (!app.run_error.empty()) error_text(app.run_error);
  return changed;
}

}  // namespace cplab::viz
