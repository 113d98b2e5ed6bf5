// cmd_check_infer.h: `cplab check --kv-cache P`, another implementation's inference outputs against
// the reference (issue 37; reference/check/infer_check.h).
//
// What it is: CheckInferArgs (what cmd_check.cpp parsed) and check_infer_action, which cmd_check.cpp
// calls when infer_wanted() (infer_options.h) says so: the sizes come from --inputs' q.npy (T,
// heads, head-dim), k.npy and v.npy (P+T, kv-heads, ...) (a size also given must agree; T from
// --seq / --cu-seqlens when given, else q.npy's rows, one request), the step's limits are checked
// before any data is read, then the check runs and prints check.h's report (text or --json; --out
// FILE.png draws its error map with cplab-viz as for a training check).
// Exit status: 0 equivalent, 1 not equivalent, 2 bad input (thrown).
// What it is not: the comparison or the diagnosis (reference/check/infer_check.h, faults_infer.cpp).
#pragma once

#include <optional>
#include <string>

#include "cp_options.h"
#include "infer_options.h"

namespace cplab::app {

struct CheckInferArgs {
  const CpOptions& cp;
  const InferOptions& io;
  std::string inputs, outputs, png;
  std::optional<double> tolerance;
  bool json = false, allow_long = false;
};

int check_infer_action(const CheckInferArgs& a);

}  // namespace cplab::app
