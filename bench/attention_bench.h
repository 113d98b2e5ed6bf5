// attention_bench.h: `cplab-bench attention` once its plan is checked and a GPU is known usable.
//
// What it is: run_attention(): the baseline first (so it never shares the GPU with our kernels),
// then the header, then every shape: run on the GPU, check against the reference, print its rows;
// a shape that throws (CUDA error, out of memory) becomes an ERROR row and the others still run.
// Returns the exit status: 0 every row PASS, 1 any FAIL or ERROR.
// What it is not: argument checking or the no-GPU skip (main.cpp), or a test.
#pragma once

#include "attention_config.h"

namespace cplab::bench {

int run_attention(const AttentionPlan& plan);

}  // namespace cplab::bench
