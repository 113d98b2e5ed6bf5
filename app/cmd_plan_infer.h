// cmd_plan_infer.h: `cplab plan --kv-cache P --seq T` (one inference step) and `cplab plan
// --infer-table` (docs/plan.md's table), called by cmd_plan.cpp when either option is given.
//
// What it is: the inference step's options as cmd_plan.cpp read them, and the action that prints
// the variants' predicted times (plan/infer_plan_model.h), the recommendation with its reason, the
// paper's rule beside it (plan/paper_rule.h) and why they differ; or the markdown table of both
// over T/(T+P). print_plan_assumptions is the assumptions block both plan actions end with.
// What it is not: the model (perf_model.h) or the rule (paper_rule.h).
#pragma once

#include <optional>
#include <string>

#include "plan/perf_options.h"

namespace cplab::app {

struct PlanInferArgs {
  index_t seq = 0;             // T (with --infer-table: the context T + P)
  std::string kv_cache;        // --kv-cache P (parse_kv_cache's spelling, one request)
  bool given_kv_cache = false; // --kv-cache was on the command line (--infer-table refuses it)
  bool table = false;          // --infer-table
  index_t heads = 0, kv_heads = 0, head_dim = 0, gpus = 0;
  bool causal = true;
  std::optional<index_t> window, chunk;
  std::string cache_layout = "zigzag";
  PerfOptions perf;
  bool json = false;
};

int plan_infer_action(const PlanInferArgs& o);

// the "assumptions (presets are published figures, ...)" block of `cplab plan` (cmd_plan.cpp)
void print_plan_assumptions(const PerfAssumptions& a);

}  // namespace cplab::app
