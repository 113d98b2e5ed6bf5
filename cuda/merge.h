// merge.h: combining partial attention results on the GPU: the (O, LSE) merges of
// reference/core/merge.h (streaming, and TE's fold in two phases), the fp32 accumulation of
// gradients, and the cast of an fp32 accumulator to the input dtype.
//
// What it is: the host API of merge.cu's element-wise kernels (a thread per (row, head) for the
// merges, a thread per element for the accumulation and the cast), with reference/core/merge.h's
// rule: a partial over rows [row0, row0 + m) of an fp32 accumulator of n rows (start: O = 0,
// LSE = -inf) is merged with the weights of core/softmax_rules.h (lse_merge, merge_weight, the
// reference's own -inf safe definitions). Token-major like the reference: o_acc (n, h, dv) fp32,
// lse_acc (h, n) fp32, o_part (m, h, dv) of `dtype`, lse_part (h, m) fp32. Work is queued on
// `stream`; bad rows throw cplab::Error naming the rule, before any CUDA call.
// What it is not: the attention of a tile (attention.h), or the choice of what is merged where
// (the CP modes: cp/ring_gpu.h, the reference's ring_schedule.h).
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "core/dtype.h"  // reference/: DType

namespace cplab::cuda {

// streaming: after every step, rows [row0, row0 + m) of (O, L) <- (w_acc O + w_part O_part,
// lse_merge(L, L_part)); o_acc (n, h, dv), lse_acc (h, n), o_part (m, h, dv), lse_part (h, m)
void merge_streaming(DType dtype, std::int64_t n, std::int64_t h, std::int64_t dv, float* o_acc,
                     float* lse_acc, std::int64_t row0, std::int64_t m, const void* o_part,
                     const float* lse_part, cudaStream_t stream);
// TE's fold, phase A: lse_acc (h, n) <- lse_merge(lse_acc, lse_part (h, m)) on rows [row0, row0 + m)
void merge_lse(std::int64_t n, std::int64_t h, float* lse_acc, std::int64_t row0, std::int64_t m,
               const float* lse_part, cudaStream_t stream);
// TE's fold, phase B (after every partial's LSE is merged into lse_final (h, n)):
// o_acc (n, h, dv) += exp(L_part - L) O_part on rows [row0, row0 + m); o_part (m, h, dv), lse_part (h, m)
void fold_correction(DType dtype, std::int64_t n, std::int64_t h, std::int64_t dv, float* o_acc,
                     const float* lse_final, std::int64_t row0, std::int64_t m, const void* o_part,
                     const float* lse_part, cudaStream_t stream);

// y (count) fp32 = value on the device, in stream order (e.g. a CP forward's LSE accumulator = -inf:
// no host buffer and no pageable host-to-device copy that would block the host)
void fill_f32(float* y, std::int64_t count, float value, cudaStream_t stream);

// y (count) fp32 += x (count) fp32 (e.g. a ring step's dK/dV into the accumulator that arrived)
void accumulate_f32(float* y, const float* x, std::int64_t count, cudaStream_t stream);

// y (count) of `dtype` = x (count) fp32, rounded to nearest even (e.g. the merged O to bf16)
void cast_from_f32(DType dtype, const float* x, void* y, std::int64_t count, cudaStream_t stream);

}  // namespace cplab::cuda
