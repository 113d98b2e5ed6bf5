// emu_kernels.h: the attention kernels v1, v2 and v3 (forward) of cuda/ run on the CPU by the host emulation of
// emu.h / mma_emu.h, with the grids and shared-memory sizes of their launchers in cuda/; and the
// attention-sink kernels of sink_kernels.cu.
//
// What it is: for tests (test_kernel_emu.cpp). Each launcher here is defined in emu_v1.cpp,
// emu_v2_fwd.cpp, emu_v2_bwd.cpp, emu_v3.cpp or emu_sinks.cpp, which #include the kernel file itself (compiled with
// CPLAB_EMULATE by g++), so the kernels have one definition. Arguments are those of
// cuda/attention_impl.cuh's launchers, on host memory, without the stream; the v2 ones also take
// when cp.async copies land (mma_emu.h), v3 when its TMA copies land (the same CpAsync: immediate =
// emu.h's Async::early, at issue; deferred = Async::late, only when no thread can run without them).
// What it is not: the library's launchers (cuda/attention_v*.cu, cut under CPLAB_EMULATE) or fast.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "attention.h"
#include <cstdint>

#include "core/mask_rule.h"

namespace cplab_emu {

enum class CpAsync { deferred, immediate };  // at cp_async_wait (the latest allowed), or at once

using cplab::MaskRule;
using cplab::cuda::AttnDims;

template <class T>
void v1_forward(const AttnDims& d, const T* q, const T* k, const T* v, const MaskRule& mask, float scale, T* o,
                float* lse, const float* sinks);
template <class T>
void v1_backward(const AttnDims& d, const T* q, const T* k, const T* v, const T* dout, const float* lse,
                 const float* delta, const MaskRule& mask, float scale, float* dq, float* dk, float* dv);
template <class T>
void v2_forward(CpAsync mode, const AttnDims& d, const T* q, const T* k, const T* v, const MaskRule& mask, float scale,
                T* o, float* lse, const float* sinks);
template <class T>
void v2_backward(CpAsync mode, const AttnDims& d, const T* q, const T* k, const T* v, const T* dout, const float* lse,
                 const float* delta, const MaskRule& mask, float scale, float* dq, float* dk, float* dv);
template <class T>
void v3_forward(CpAsync mode, const AttnDims& d, const T* q, const T* k, const T* v, const MaskRule& mask, float scale,
                T* o, float* lse, const float* sinks);

// sink_kernels.cu's kernels (sink_kernels.h apply_sinks_f32, sink_grad_f32) on host memory
void apply_sinks(std::int64_t n, std::int64_t h, std::int64_t dv, float* o, float* lse, const float* sinks);
void sink_grad(std::int64_t n, std::int64_t h, const float* lse, const float* delta, const float* sinks, float* ds);

}  // namespace cplab_emu
