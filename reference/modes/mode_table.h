// mode_table.h: THE table of CP modes. Every question "what does mode M do / accept / cost" is
// answered here, once, and everything else (validation, dispatch, the planner, the GPU host code,
// the CLI, the viz, docs/modes.md's communication table) asks this table instead of comparing names.
//
// What it is: Mode (an enum), and one ModeInfo per mode: its --mode spelling and title, what it
// accepts (packed sequences, layouts, merges), its all-to-all group, its forward and backward step
// counts as the traces number them (trace_plan.h), and its closed-form messages and bytes per rank
// and phase (a ring's in terms of its hops H: P-1, fewer when a window lets it stop early) (tests/test_modes.cpp checks every run's trace against them; tests/test_mode_table.cpp
// checks docs/modes.md's table against the formulas written here).
//   p2p        a ring over all P ranks: KV blocks travel, partial (O, LSE) merged (ring_p2p.h)
//   allgather  all-gather KV, compute, reduce-scatter dKV (allgather_kv.h, Llama 3)
//   a2a        Ulysses: all-to-all from sequence- to head-sharding and back (ulysses_a2a.h)
//   a2a+p2p    hierarchical: all-to-all in groups of I ranks, rings of O = P/I (hierarchical_cp.h)
// What it is not: the modes' algorithms (modes/*.h) or the validation of one run's sizes
// (cp_spec.h, which reads this table).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace cplab {

enum class Mode { p2p, allgather, a2a, a2a_p2p };

// The rank counts a mode's formulas read: P = cp, I x O = the hierarchical sizes (a2a+p2p only),
// and H, the hops a ring makes (p2p: its ring over P; a2a+p2p: its rings over O): -1 for the
// whole ring (P-1, O-1), fewer when a window or chunk lets the ring stop early (ring_schedule.h
// ring_hops; CpSpec::ranks() fills it in).
struct ModeRanks {
  std::int64_t P = 1, I = 0, O = 0;
  std::int64_t H = -1;
  // H, or the whole ring of `ring` positions when it is -1
  std::int64_t hops(std::int64_t ring) const { return H < 0 ? ring - 1 : H; }
};

// The sizes the communication formulas read (docs/modes.md, "Communication per rank"): n tokens per rank,
// h / hk query / KV heads (hk after --replicate-kv), d / dv head dims, e bytes per element.
struct CommSizes {
  ModeRanks ranks;
  std::int64_t n = 0, h = 0, hk = 0, d = 0, dv = 0, e = 8;
};
struct CommPerRank {  // what every rank sends in each phase (it receives the same)
  std::int64_t fwd_msgs = 0, fwd_bytes = 0, bwd_msgs = 0, bwd_bytes = 0;
};

struct ModeInfo {
  Mode mode;
  const char* name;                      // the --mode spelling
  const char* title;                     // the communication table's first column
  const char* short_name;                // how `cplab plan` names a group of P ranks: "ring 8", "a2a 8"
  bool packed;                           // takes packed sequences (--cu-seqlens)
  bool any_layout;                       // false: zigzag only
  bool merges;                           // merges partial (O, LSE) results: --merge applies
  bool all_to_all;                       // shards heads over an all-to-all (--replicate-kv applies)
  std::int64_t (*a2a_group)(ModeRanks);  // ranks an all-to-all spans (heads must divide); 1: none
  std::int64_t (*fwd_steps)(ModeRanks);  // trace steps of the forward (step numbers 0 .. steps-1)
  std::int64_t (*bwd_steps)(ModeRanks);
  CommPerRank (*comm)(const CommSizes&);
  // the closed forms as docs/modes.md's table writes them (forward messages, bytes; backward ...)
  const char* readme[4];
};

// every mode, in the order the CLI lists them
const std::vector<ModeInfo>& mode_table();
const ModeInfo& mode_info(Mode m);
// the --mode spelling to the enum; cplab::Error "mode 'x' is not one of: p2p, allgather, a2a, a2a+p2p"
Mode parse_mode(const std::string& name);
std::string to_string(Mode m);
// "p2p, allgather, a2a, a2a+p2p"
std::string mode_names();
// the names of the modes with a property, for messages: mode_names_with(&ModeInfo::packed, " and ")
// is "p2p, allgather and a2a" (last_sep joins the last two)
std::string mode_names_with(bool ModeInfo::*property, const std::string& last_sep);
// docs/modes.md's communication table (markdown rows, header first), from the readme[] columns
std::string comm_table_markdown();

}  // namespace cplab
