// attention.h: cplab's CUDA attention for one tile: forward (O, LSE), backward (dQ, dK, dV), with
// the CPU reference's shapes, masks and conventions; the (O, LSE) merges of partial results, the
// fp32 accumulation and the casts are merge.h (included here).
//
// What it is: the host API of the kernels in attention_v1.cu (tier 0: one thread per row, fp32
// everywhere, head dims up to 128, every dtype; the readable baseline), attention_v2_fwd.cu /
// attention_v2_bwd.cu (tier 1: FlashAttention-2 style, mma.sync m16n8k16 tensor cores, bf16/fp16
// inputs, fp32 accumulation, head dim 64 or 128, sm_80+) and attention_v3_fwd.cu (tier 2, forward only:
// wgmma tensor cores fed by TMA, bf16/fp16, head dim 64 or 128, compute capability 9.0; its
// backward is v2's). All implement exactly the reference's attention_kernel.h:
//   forward   O = softmax(scale Q K^T + mask) V, LSE = natural-log logsumexp of the scaled logits
//             (fp32; -inf and O = 0 for a fully masked row)
//   backward  from dO and the FINAL (merged) LSE and Delta = rowsum(dO * O):
//             P = exp(scale Q K^T - LSE), dV += P^T dO, dS = P (dO V^T - Delta),
//             dQ += scale dS K, dK += scale dS^T Q       (ACCUMULATES, fp32)
// GQA by head mapping (query head i reads KV head i / (h / hk)); masks are mask_rule.h's MaskRule
// (none, causal with an offset: the CP sections, ranges: THD per-sequence masks and the sliding
// windows and chunks of mask_rule.h's PositionRule, whose per-row runs the reference's tiles carry),
// applied per element and used to skip key blocks no row of a query block can see, never
// materialised. Attention sinks: attention_forward's `sinks`, and sink_kernels.h (apply_sinks_f32
// after a merge, sink_grad_f32 for d s_h; the backward itself needs nothing more: with the final,
// sink-including LSE and Delta it is already the gradient of the extended softmax).
// The per-row arithmetic is softmax_rules.h, shared with the reference and tested on the CPU.
// Tensors are token-major like the reference: q (sq, h, d), k (sk, hk, d), v (sk, hk, dv),
// o (sq, h, dv), lse and delta (h, sq); all pointers are device memory, contiguous, and work is
// queued on `stream` (asynchronous; errors of the launch itself throw std::runtime_error naming
// the call, CPLAB_CUDA_CHECK). Bad shapes or an unsupported kernel / dtype / head dim throw
// cplab::Error naming the rule, before any CUDA call.
// What it is not: a CP algorithm (the modes on GPU ranks are cuda/cp/: cp_gpu.h, ring_gpu.h, ...),
// or FP8. Tolerances against the reference are in cuda/README.md.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "device_buffer.h"
#include "core/dtype.h"  // reference/: DType
#include "core/mask.h"
#include "core/mask_rule.h"
#include "merge.h"  // merge_streaming, merge_lse, fold_correction, accumulate_f32, cast_from_f32
#include "sink_kernels.h"  // apply_sinks_f32, sink_grad_f32

namespace cplab::cuda {

using cplab::DType;

// v1: scalar baseline; v2: mma.sync (FA2-style); v3: wgmma + TMA forward on sm_90a, v2 backward
enum class Kernel : int { v1 = 1, v2 = 2, v3 = 3 };

// "v1", "v2", "v3"
const char* to_string(Kernel k);

// whether this build holds kernel v3 (CMAKE_CUDA_ARCHITECTURES included 90)
bool kernel_v3_built();

struct AttnDims {
  std::int64_t sq = 0, sk = 0;  // query rows, key rows
  std::int64_t h = 0, hk = 0;   // query heads, KV heads (h % hk == 0)
  std::int64_t d = 0, dv = 0;   // head dims of Q/K and of V
};

// Throws cplab::Error if `kernel` cannot run these dims / this dtype (names the rule), e.g.
// "kernel v2 needs head dim 64 or 128 (got d = 96)". Kernel v3 also needs a build that holds it;
// that the device is compute capability 9.0 is checked at launch (cplab::Error as well).
void check_supported(Kernel kernel, DType dtype, const AttnDims& dims);

// Throws cplab::Error unless the current device can run `kernel` (v3: compute capability 9.0);
// v1 and v2 run on any device this build targets. Makes CUDA calls: call after a device is known.
void check_device_supports(Kernel kernel);

// A mask on the device: the MaskRule of a host Mask, with its ranges arrays (if any) copied to
// device memory it owns. sq must be the number of query rows the mask describes.
class DeviceMask {
 public:
  DeviceMask(const Mask& mask, std::int64_t sq);
  const MaskRule& rule() const { return rule_; }

 private:
  DeviceBuffer<std::int64_t> lo_, hi_;
  MaskRule rule_;
};

// o (sq, h, dv) of `dtype`, lse (h, sq) fp32. sinks: null, or (h) fp32 device logits s_i: each row's
// softmax denominator gains exp(s_i), nothing is added to O, the LSE includes it (sink_kernels.h,
// reference/core/sinks.h; a row that sees no key stays O = 0, LSE = -inf). Only right when this call
// sees the row's every key: a CP mode that merges tiles applies apply_sinks_f32 after its last merge.
void attention_forward(Kernel kernel, DType dtype, const AttnDims& dims, const void* q, const void* k,
                       const void* v, const MaskRule& mask, float scale, void* o, float* lse,
                       cudaStream_t stream, const float* sinks = nullptr);

// delta (h, n) fp32 = sum_e dO(t, i, e) O(t, i, e); o and dout (n, h, dv) of `dtype`
void softmax_delta(DType dtype, std::int64_t n, std::int64_t h, std::int64_t dv, const void* o,
                   const void* dout, float* delta, cudaStream_t stream);

// ACCUMULATES into fp32 dq (sq, h, d), dk (sk, hk, d), dv (sk, hk, dv); lse and delta (h, sq)
void attention_backward(Kernel kernel, DType dtype, const AttnDims& dims, const void* q, const void* k,
                        const void* v, const void* dout, const float* lse, const float* delta,
                        const MaskRule& mask, float scale, float* dq, float* dk, float* dv,
                        cudaStream_t stream);

}  // namespace cplab::cuda
