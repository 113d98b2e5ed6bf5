// cmd_run_infer.h: `cplab run --kv-cache P`, one inference CP step checked against dense attention
// with the offset (issue 37; reference/infer/infer_run.h).
//
// What it is: InferRunArgs (what cmd_run.cpp parsed, the inference options included) and
// run_infer_action, which cmd_run.cpp calls when infer_wanted() (infer_options.h) says so. It reads
// optional .npy inputs (q.npy (T, h, d) the new tokens; k.npy (P+T, hk, d) and v.npy (P+T, hk, dv)
// per request the cache first, global order), runs the variant on simulated ranks, writes --out-dir
// o.npy (T, h, dv) and lse.npy (h, T) and the traces, and prints the human summary or --json
// (infer_report_json). --plan-only writes the planned trace (infer_plan.h) and its per-rank table.
// What it is not: the training run (cmd_run.cpp) or an algorithm (reference/infer/).
#pragma once

#include <cstdint>
#include <string>

#include "cp_options.h"
#include "infer_options.h"
#include "run_files.h"

namespace cplab::app {

struct InferRunArgs {
  const CpOptions& cp;
  const InferOptions& io;
  RunFiles files;
  std::string dtype = "double";
  std::uint64_t seed = 0;
  bool backward = false, allow_long = false, json = false, plan_only = false;
};

// the action; its exit status (0 ok, 1 the check failed; bad input throws cplab::Error)
int run_infer_action(InferRunArgs& a);

}  // namespace cplab::app
