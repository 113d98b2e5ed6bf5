// planner.h: which CP mode to use for an attention shape on a set of GPUs, by the performance model.
//
// What it is: plan_options(problem, assumptions) builds every candidate the reference implements
// (the ring with each layout, all-gather KV, Ulysses all-to-all, and a2a+p2p with every power-of-two
// inner size that fits in a node), plans its trace (trace_plan.h: the same schedule the reference
// runs, no compute) and predicts its time with perf_model.h. Candidates a rule forbids (heads not
// divisible by the a2a size, a sequence the layout cannot split, ...) are kept with the reason.
// Sorted: valid candidates by predicted forward + backward time, then the invalid ones.
// What it is not: a measurement (cplab-bench cp measures; perf_model.h says what is assumed).
#pragma once

#include <string>
#include <vector>

#include "plan/perf_model.h"

namespace cplab {

struct PlanProblem {
  index_t seq = 131072, heads = 32, kv_heads = 8, head_dim = 128;
  index_t gpus = 8;
  bool causal = true, backward = true;
};

struct PlanOption {
  CpFields cp;              // the candidate (mode, layout, icp x ocp, replicate_kv), valid or not
  std::string label, note;  // e.g. "a2a+p2p 8x2", "KV heads replicated 2x"
  bool valid = true;
  std::string why_not;      // the rule a forbidden candidate breaks
  PerfPrediction pred;
};

std::vector<PlanOption> plan_options(const PlanProblem& p, const PerfAssumptions& a);

}  // namespace cplab
