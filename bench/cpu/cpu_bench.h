// cpu_bench.h: what `cplab-cpu-bench` measures: the machine's GEMM peak and the CPU reference's CP
// modes, in the same run, and the modes' error against dense attention.
//
// What it is:
//   gemm_peak<T>(size, threads, reps)  GFLOP/s of gemm.h's product (the one the attention kernel
//                                      calls: OpenBLAS or Eigen) on size x size x size, best of reps
//                                      calls, with `threads` OpenMP threads (OpenBLAS's OpenMP build
//                                      follows them)
//   time_mode<T>(spec, reps)           the CP part of a run, as `cplab run` times it (cp_attention_
//                                      forward, then cp_attention_backward on simulated ranks, the
//                                      inputs sharded beforehand), best of reps, forward and
//                                      backward apart, with the useful FLOPs of flops.h
//   check_mode(spec, dtype)            run_experiment (run/experiment.h) on spec, on the fast kernel
//                                      route the timings run (kernel_route.h): the max error of
//                                      O, LSE, dQ, dK, dV against the dense oracle in double
// What it is not: a test (nothing here asserts on a time), or a profiler.
#pragma once

#include <string>

#include "modes/cp_spec.h"

namespace cplab::cpubench {

template <class T>
double gemm_peak(index_t size, int threads, int reps);

struct ModeTime {
  double fwd_s = 0, bwd_s = 0;          // best of the reps, each pass on its own
  double fwd_flops = 0, bwd_flops = 0;  // useful FLOPs of the whole attention (flops.h)
};
template <class T>
ModeTime time_mode(const CpSpec& spec, int reps);

// max relative error over O, LSE, dQ, dK, dV of a forward + backward run of spec in dtype
double check_mode(const CpSpec& spec, const std::string& dtype);

}  // namespace cplab::cpubench
