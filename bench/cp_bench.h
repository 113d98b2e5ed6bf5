// cp_bench.h: `cplab-bench cp`: one context-parallel attention layer on GPU ranks, timed and checked.
//
// What it is: the arguments, their checks (before any CUDA call) and the run: the mode on P ranks
// (cuda/cp: the ring so far) against the baseline of the same attention as one kernel launch on
// this GPU, forward (and backward): ms per layer, TFLOP/s per rank, bytes moved, the fraction of
// communication hidden behind compute, efficiency = baseline time / CP time, the CP result checked
// against the baseline on sampled rows; a table, optional JSON, and the measured tile times as a
// cplab trace for cplab-viz's timeline.
// What it is not: a multi-GPU NCCL run yet (the LocalComm virtual ranks share one GPU: their
// "links" are device copies, so report compute overlap, not link speed), or the kernel benchmark
// (cplab-bench attention).
#pragma once

#include <cstdint>
#include <string>

namespace cplab::bench {

struct CpArgs {
  std::string mode = "p2p", layout = "zigzag", dtype = "bf16", backend = "local", pass = "both";
  std::int64_t cp = 8, seq = 65536, heads = 32, kv_heads = 8, head_dim = 128;
  bool no_causal = false;
  int warmup = 2, iters = 5;
  std::string json_path, trace_path;
};

// throws cplab::Error naming the rule (no CUDA call)
void check_cp_args(const CpArgs& a);
// runs it (a usable GPU is required); returns the exit status: 0 PASS, 1 FAIL
int run_cp(const CpArgs& a);

}  // namespace cplab::bench
