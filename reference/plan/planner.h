// planner.h: which CP mode to use for an attention shape on a set of GPUs, by the performance model.
//
// What it is: plan_options(problem, assumptions) builds every candidate the reference implements
// (the ring with each layout, all-gather KV, Ulysses all-to-all, and a2a+p2p with every power-of-two
// inner size that fits in a node), plans its trace (trace_plan.h: the same schedule the reference
// runs, no compute) and predicts its time with perf_model.h. Candidates a rule forbids (heads not
// divisible by the a2a size, a sequence the layout cannot split, ...) are kept with the reason.
// Sorted: valid candidates by predicted forward + backward time, then the invalid ones.
// A sliding window or chunks (mask_rule.h) change both sides of the choice: the tiles (each rank
// computes only the pairs the rule leaves) and the ring's hops (a contiguous ring stops after
// ceil((W-1)/n) hops, while zigzag's last hop is still needed): plan_choice says which won and why.
// What it is not: a measurement (cplab-bench cp measures; perf_model.h says what is assumed).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "plan/perf_model.h"

namespace cplab {

struct PlanProblem {
  index_t seq = 131072, heads = 32, kv_heads = 8, head_dim = 128;
  index_t gpus = 8;
  bool causal = true, backward = true;
  std::optional<index_t> window = {}, chunk = {};  // the mask rule (cp_spec.h CpFields: the same rules)
};

struct PlanOption {
  CpFields cp;              // the candidate (mode, layout, icp x ocp, replicate_kv), valid or not
  std::string label, note;  // e.g. "a2a+p2p 8x2", "KV heads replicated 2x"
  bool valid = true;
  std::string why_not;      // the rule a forbidden candidate breaks
  PerfPrediction pred;
  index_t ring_hops = -1, ring_size = 0;  // a ring's hops of ring_size - 1 (CpSpec::ring_hops); -1: no ring
};

// The planner's limits, checked before anything is derived from the sizes (cplab::Error naming
// the rule and the value): gpus in [1, kMaxRanks] (a plan traces every rank, as the reference
// simulates them: layout.h), gpus-per-node in [1, kMaxGpusPerNode] (more than any NVLink domain;
// with gpus <= kMaxRanks, any size >= gpus means one node), seq in [1, 2^40] (kMaxPackedTokens),
// heads, kv-heads and head-dim in [1, kMaxHeads] (cp_spec.h), the mask rules (cp_spec.h
// check_mask_rules: window, chunk). Each candidate then meets CpSpec's rules and
// the planner's FLOP and trace-memory limits (trace_plan.h), or is listed with the rule it breaks.
inline constexpr index_t kMaxGpusPerNode = 4096;
void check_plan_problem(const PlanProblem& p, index_t gpus_per_node);
void check_gpus_per_node(index_t gpus_per_node);  // the gpus-per-node rule alone (perf_options.h)

// check_plan_problem(p, a.gpus_per_node), then every candidate, sorted
std::vector<PlanOption> plan_options(const PlanProblem& p, const PerfAssumptions& a);

// The choice and its reason, one line: the fastest candidate, what decided it (its ring's hops
// under a window or chunk, its balance, its exposed communication) and the next best for
// comparison; "no candidate is possible for this shape" when none is valid.
std::string plan_choice(const PlanProblem& p, const std::vector<PlanOption>& sorted);

}  // namespace cplab
