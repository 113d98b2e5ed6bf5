// mode_table.cpp: the table of CP modes (see mode_table.h).
#include "modes/mode_table.h"

#include "core/error.h"

namespace cplab {

namespace {

using I64 = std::int64_t;

// an all-to-all over G ranks sends (G-1)/G of each rank's tensor: (G-1) * n * (heads/G) * dim
I64 a2a_elems(const CommSizes& s, I64 G, I64 heads, I64 dim) { return (G - 1) * s.n * (heads / G) * dim; }
// Q, K, V and O (forward) or dO, dQ, dK, dV (backward) over G ranks: the same sum
I64 a2a_qkvo(const CommSizes& s, I64 G) {
  return a2a_elems(s, G, s.h, s.d) + a2a_elems(s, G, s.hk, s.d) + a2a_elems(s, G, s.hk, s.dv) +
         a2a_elems(s, G, s.h, s.dv);
}
I64 kv_elems(const CommSizes& s) { return s.n * s.hk * (s.d + s.dv); }  // one rank's K and V

const std::vector<ModeInfo> kTable = {
    {.mode = Mode::p2p,
     .name = "p2p",
     .title = "p2p (ring)",
     .short_name = "ring",
     .packed = true,
     .any_layout = true,
     .merges = true,
     .all_to_all = false,
     .a2a_group = [](ModeRanks) -> I64 { return 1; },
     .fwd_steps = [](ModeRanks r) -> I64 { return r.hops(r.P) + 1; },
     .bwd_steps = [](ModeRanks r) -> I64 { return r.hops(r.P) + 1; },
     .comm =
         [](const CommSizes& s) {
           const I64 H = s.ranks.hops(s.ranks.P), kv = kv_elems(s) * s.e;
           return CommPerRank{H, H * kv, H > 0 ? H + 1 : 0, 2 * H * kv};
         },
     .readme = {"`H`", "`H·B_kv`", "`H+1` (0 if H = 0)", "`2H·B_kv` (KV and dKV both make H hops)"}},
    {.mode = Mode::allgather,
     .name = "allgather",
     .title = "allgather",
     .short_name = "all-gather",
     .packed = true,
     .any_layout = true,
     .merges = false,
     .all_to_all = false,
     .a2a_group = [](ModeRanks) -> I64 { return 1; },
     .fwd_steps = [](ModeRanks) -> I64 { return 2; },  // gather, tiles
     .bwd_steps = [](ModeRanks) -> I64 { return 3; },  // gather, tiles, reduce-scatter
     .comm =
         [](const CommSizes& s) {
           const I64 P = s.ranks.P, kv = kv_elems(s) * s.e;
           return CommPerRank{P - 1, (P - 1) * kv, 2 * (P - 1), 2 * (P - 1) * kv};
         },
     .readme = {"`P−1`", "`(P−1)·B_kv`", "`2(P−1)`", "`2(P−1)·B_kv` (gather KV again, reduce-scatter dKV)"}},
    {.mode = Mode::a2a,
     .name = "a2a",
     .title = "a2a (Ulysses)",
     .short_name = "a2a",
     .packed = true,
     .any_layout = true,
     .merges = false,
     .all_to_all = true,
     .a2a_group = [](ModeRanks r) -> I64 { return r.P; },
     .fwd_steps = [](ModeRanks) -> I64 { return 3; },  // a2a, tiles, a2a back
     .bwd_steps = [](ModeRanks) -> I64 { return 3; },
     .comm =
         [](const CommSizes& s) {
           const I64 P = s.ranks.P, b = a2a_qkvo(s, P) * s.e;
           return CommPerRank{4 * (P - 1), b, 4 * (P - 1), b};
         },
     .readme = {"`4(P−1)`", "`A_P`", "`4(P−1)`", "`A_P`"}},
    {.mode = Mode::a2a_p2p,
     .name = "a2a+p2p",
     .title = "a2a+p2p (`I×O`)",
     .short_name = "a2a+p2p",
     .packed = false,
     .any_layout = false,
     .merges = true,
     .all_to_all = true,
     .a2a_group = [](ModeRanks r) -> I64 { return r.I; },
     .fwd_steps = [](ModeRanks r) -> I64 { return r.hops(r.O) + 3; },  // inner a2a, H+1 ring steps, a2a back
     .bwd_steps = [](ModeRanks r) -> I64 { return r.hops(r.O) + 3; },
     .comm =
         [](const CommSizes& s) {
           const I64 I = s.ranks.I, H = s.ranks.hops(s.ranks.O), inner = a2a_qkvo(s, I) * s.e, kv = kv_elems(s) * s.e;
           return CommPerRank{4 * (I - 1) + H, inner + H * kv, 4 * (I - 1) + (H > 0 ? H + 1 : 0), inner + 2 * H * kv};
         },
     .readme = {"`4(I−1) + H`", "`A_I + H·B_kv`", "`4(I−1) + H+1` (H ≥ 1)", "`A_I + 2H·B_kv`"}},
};

}  // namespace

const std::vector<ModeInfo>& mode_table() { return kTable; }

const ModeInfo& mode_info(Mode m) {
  for (const ModeInfo& i : kTable)
    if (i.mode == m) return i;
  throw Error("mode_info: a Mode value outside the table");
}

std::string mode_names() {
  std::string s;
  for (const ModeInfo& i : kTable) s += (s.empty() ? "" : ", ") + std::string(i.name);
  return s;
}

std::string mode_names_with(bool ModeInfo::*property, const std::string& last_sep) {
  std::vector<std::string> names;
  for (const ModeInfo& i : kTable)
    if (i.*property) names.emplace_back(i.name);
  std::string s;
  for (size_t k = 0; k < names.size(); ++k) s += (k == 0 ? "" : k + 1 == names.size() ? last_sep : ", ") + names[k];
  return s;
}

Mode parse_mode(const std::string& name) {
  for (const ModeInfo& i : kTable)
    if (name == i.name) return i.mode;
  throw Error("mode '" + name + "' is not one of: " + mode_names());
}

std::string to_string(Mode m) { return mode_info(m).name; }

std::string comm_table_markdown() {
  std::string t =
      "| mode | forward: messages | forward: bytes | backward: messages | backward: bytes |\n"
      "| --- | --- | --- | --- | --- |\n";
  for (const ModeInfo& i : kTable) {
    t += std::string("| ") + i.title;
    for (const char* c : i.readme) t += std::string(" | ") + c;
    t += " |\n";
  }
  return t;
}

}  // namespace cplab
