// attention_impl.cuh: what the attention kernels of cuda/ share, inside cuda/ only.
//
// What it is: element conversions (to_float / from_float for float, __half, __nv_bfloat16), the
// DType -> element type dispatch, the plain-data dims a kernel receives, the attention-sink fold of a
// row (fold_sink, sink_grad_term: sinks.h's rules), and the launchers each
// kernel file defines (attention_v1.cu, attention_v2_fwd.cu, attention_v2_bwd.cu,
// attention_v3_fwd.cu) for the host API in attention.cu (merge.cu uses the conversions, dispatch,
// check_launch and blocks_for too).
// What it is not: public API (attention.h is), or the softmax / mask rules (softmax_rules.h,
// mask_rule.h in reference/, shared with the CPU).
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <stdexcept>
#include <string>

#include "attention.h"
#include "check.h"
#include "core/mask_rule.h"
#include "core/softmax_rules.h"

#include "emulation_seam.h"  // CPLAB_EMULATE: the kernels' source run on the CPU (g++), no launchers

// A kernel's dynamic shared memory, `extern __shared__ T name[]` (_ALIGN16: `__align__(16)`); under
// CPLAB_EMULATE a pointer to the emulated block's buffer (the emulation of emulation_seam.h, 16-byte aligned).
#ifdef CPLAB_EMULATE
#define CPLAB_DYNAMIC_SMEM(T, name) T* const name = reinterpret_cast<T*>(cplab_emu::block_smem())
#define CPLAB_DYNAMIC_SMEM_ALIGN16(T, name) CPLAB_DYNAMIC_SMEM(T, name)
#else
#define CPLAB_DYNAMIC_SMEM(T, name) extern __shared__ T name[]
#define CPLAB_DYNAMIC_SMEM_ALIGN16(T, name) extern __shared__ __align__(16) T name[]
#endif

namespace cplab::cuda::detail {

__device__ __forceinline__ float to_float(float x) { return x; }
__device__ __forceinline__ float to_float(__half x) { return __half2float(x); }
__device__ __forceinline__ float to_float(__nv_bfloat16 x) { return __bfloat162float(x); }

template <class T>
__device__ __forceinline__ T from_float(float x);
template <>
__device__ __forceinline__ float from_float<float>(float x) { return x; }
template <>
__device__ __forceinline__ __half from_float<__half>(float x) { return __float2half_rn(x); }
template <>
__device__ __forceinline__ __nv_bfloat16 from_float<__nv_bfloat16>(float x) { return __float2bfloat16_rn(x); }

// calls f(T{}) with T the element type of `dtype`
template <class F>
void dispatch(DType dtype, F&& f) {
  switch (dtype) {
    case DType::f32: f(float{}); return;
    case DType::f16: f(__half{}); return;
    case DType::bf16: f(__nv_bfloat16{}); return;
  }
}

// a kernel launch's own error (bad configuration, too much shared memory), named after the kernel
inline void check_launch(const char* what) {
  const cudaError_t err = cudaGetLastError();
  if (err != cudaSuccess) throw std::runtime_error(std::string("CUDA error: launching ") + what + ": " + cudaGetErrorString(err));
}

// ---- attention sinks (reference/core/sinks.h, with its rules: softmax_rules.h lse_merge, merge_weight)
// A row's FINAL lse gains its head's sink s: lse' = lse_merge(lse, s); the row's O is multiplied by
// weight = merge_weight(lse, lse') = exp(lse - lse'). A row that sees no key (lse = -inf) stays
// empty: lse' = -inf, weight 1 (O is 0), as sinks.cpp apply_sinks.
struct SinkFold {
  float lse, weight;
};
__device__ __forceinline__ SinkFold fold_sink(float lse, float s) {
  if (lse == neg_inf<float>()) return {lse, 1.f};
  const float merged = lse_merge(lse, s);
  return {merged, merge_weight(lse, merged)};
}
// one row's term of d s_h (sinks.cpp sink_grad), before the minus sign: exp(s - lse') Delta, 0 for
// a row that sees no key
__device__ __forceinline__ float sink_grad_term(float s, float lse, float delta) {
  return lse == neg_inf<float>() ? 0.f : hd_exp(s - lse) * delta;
}

// ---- launchers (dims already checked by check_supported); sinks: null, or (h) logits folded into
// every row as it is stored (fold_sink) ----
template <class T>
void v1_forward(const AttnDims& d, const T* q, const T* k, const T* v, const MaskRule& mask, float scale, T* o,
                float* lse, const float* sinks, cudaStream_t s);
template <class T>
void v1_backward(const AttnDims& d, const T* q, const T* k, const T* v, const T* dout, const float* lse,
                 const float* delta, const MaskRule& mask, float scale, float* dq, float* dk, float* dv,
                 cudaStream_t s);
template <class T>
void v2_forward(const AttnDims& d, const T* q, const T* k, const T* v, const MaskRule& mask, float scale, T* o,
                float* lse, const float* sinks, cudaStream_t s);
template <class T>
void v2_backward(const AttnDims& d, const T* q, const T* k, const T* v, const T* dout, const float* lse,
                 const float* delta, const MaskRule& mask, float scale, float* dq, float* dk, float* dv,
                 cudaStream_t s);

template <class T>
void v3_forward(const AttnDims& d, const T* q, const T* k, const T* v, const MaskRule& mask, float scale, T* o,
                float* lse, const float* sinks, cudaStream_t s);
bool v3_built();  // attention_v3_fwd.cu was compiled for sm_90a

// allows `kernel` `bytes` of dynamic shared memory (above the default 48 KB) on the current device.
// Called before every launch: the attribute belongs to the kernel as loaded in each device's
// context, and NCCL runs launch from a thread per GPU, so a process-wide "done once" flag is wrong.
template <class F>
void allow_smem(F kernel, size_t bytes) {
  CPLAB_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(bytes)));
}

inline unsigned blocks_for(std::int64_t n, int per_block) { return static_cast<unsigned>((n + per_block - 1) / per_block); }

}  // namespace cplab::cuda::detail
