// attention_run.h: one shape of `cplab-bench attention` on the GPU: inputs, one checked run, timing.
//
// What it is: run_shape() allocates the batch (b sequences of s tokens, token-major like the
// reference: q/o/dO (b*s, h, d), k/v (b*s, hk, d), LSE/Delta (b, h, s)), fills it from inputs.h,
// runs the forward (and, if asked, the backward) once and copies back the part the CPU reference
// checks (GpuSamples), then times each pass with cudaEvents: --warmup untimed iterations, then
// --iters timed ones, each iteration being the b sequences launched back to back on one stream.
//   fwd iteration: attention_forward per sequence
//   bwd iteration: softmax_delta + attention_backward per sequence (the fp32 dQ/dK/dV are zeroed
//                  once before the checked run, not per iteration: accumulating into them changes
//                  no work)
// What it is not: the reference comparison (attention_check.h), or anything printed.
#pragma once

#include <cstdint>
#include <vector>

#include "attention_config.h"

namespace cplab::bench {

// What the checked run produced on the GPU, as doubles (sequence 0 only). Also filled from
// SDPA's output files for the yardstick (sdpa_error.h), which have no LSE (has_lse false).
struct GpuSamples {
  std::vector<std::int64_t> rows;  // sample_rows(s): the sampled query rows
  std::vector<double> o;           // (rows, d): O of head 0 at the sampled rows
  bool has_lse = true;             // false: no LSE to compare (lse empty)
  std::vector<double> lse;         // (rows): LSE of head 0 at the sampled rows
  std::vector<double> dq_rows;     // (rows, d): dQ of head 0 at the sampled rows (bwd)
  bool full = false;               // bwd and s <= kFullBackwardMaxSeq: the three below are filled
  std::vector<double> dq;          // (s, g, d): dQ of query heads [0, g), g = h / hk
  std::vector<double> dk, dv;      // (s, d): dK, dV of KV head 0
};

struct ShapeTimes {
  double fwd_ms = 0.0, bwd_ms = 0.0;  // per iteration (all b sequences); 0 when not run
};

// Throws std::runtime_error on CUDA errors, cplab::Error on shapes the kernel refuses.
ShapeTimes run_shape(const AttentionPlan& plan, const Shape& x, GpuSamples& samples);

}  // namespace cplab::bench
