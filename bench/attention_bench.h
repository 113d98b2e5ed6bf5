// attention_bench.h: `cplab-bench attention` once its plan is checked and a GPU is known usable.
//
// What it is: run_attention(): the baseline first, then SDPA's outputs for the accuracy yardstick
// (sdpa_error.h; both before, so they never share the GPU with our kernels), then the header, then
// every shape: run on the GPU, check against the reference (with SDPA's outputs on the yardstick
// shapes), print its rows; a shape that throws (CUDA error, out of memory) becomes an ERROR row and
// the others still run; then the yardstick table.
// Returns the exit status: 0 every row PASS, 1 any FAIL or ERROR, or a measured yardstick FAIL (a
// yardstick not measured, e.g. without torch, is not a failure).
// What it is not: argument checking or the no-GPU skip (main.cpp), or a test.
#pragma once

#include "attention_config.h"

namespace cplab::bench {

int run_attention(const AttentionPlan& plan);

}  // namespace cplab::bench
