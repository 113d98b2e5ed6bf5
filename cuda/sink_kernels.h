// sink_kernels.h: attention sinks (gpt-oss) on the GPU, the rules of reference/core/sinks.h for
// results that CP modes merged from several tiles, and the sink's gradient.
//
// What it is: the host API of sink_kernels.cu:
//   apply_sinks_f32  a row's FINAL merged (O, LSE) (fp32, the modes' accumulators) gains its head's
//                    sink: LSE' = lse_merge(LSE, s_h), O' = O exp(LSE - LSE') (sinks.h apply_sinks:
//                    the merge with the partial (0, s_h)); a row with LSE = -inf (it sees no key:
//                    padding) stays O = 0, LSE = -inf. Applied ONCE per row, after the last merge:
//                    that is what makes the sink enter each row exactly once under CP.
//   sink_grad_f32    ds (h) -= sum over the rows t of exp(s_h - LSE'(h, t)) Delta(h, t), Delta =
//                    rowsum(dO * O') of the FINAL (sink-including) results (sinks.h sink_grad),
//                    rows with LSE' = -inf skipped; one block per head, a fixed-order tree sum
//                    (deterministic). A rank adds its rows' partial; the ranks' partials add up to
//                    d s_h (the data-parallel all-reduce of any parameter, outside the attention).
// A kernel that computes a row's whole key set in one call takes the sinks itself
// (attention.h attention_forward's `sinks`: folded in when the row is stored, same rule).
// Shapes: o (n, h, dv) fp32, lse and delta (h, n) fp32, sinks and ds (h) fp32; device memory;
// work queued on `stream`; bad sizes throw cplab::Error naming the rule, before any CUDA call.
// What it is not: the choice of the logits (the caller's: --sink-logits or drawn from the seed),
// or where a mode applies them (cp/ring_gpu.cpp, allgather_gpu.cpp, ulysses_gpu.cpp, hcp_gpu.cpp).
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

namespace cplab::cuda {

// o (n, h, dv) and lse (h, n), fp32, in place; sinks (h)
void apply_sinks_f32(std::int64_t n, std::int64_t h, std::int64_t dv, float* o, float* lse, const float* sinks,
                     cudaStream_t stream);

// ds (h) -= sum_t exp(sinks[i] - lse(i, t)) delta(i, t); lse, delta (h, n); ACCUMULATES
void sink_grad_f32(std::int64_t n, std::int64_t h, const float* lse, const float* delta, const float* sinks, float* ds,
                   cudaStream_t stream);

}  // namespace cplab::cuda
