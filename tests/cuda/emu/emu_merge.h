// emu_merge.h: cuda/merge.cu's (O, LSE) merge kernels launched on the host emulation (emu_merge.cpp),
// with the grids of merge.cu's own launchers, fp32 partials, host memory, no stream.
// What it is not: the library's host API (cuda/merge.h; cut under CPLAB_EMULATE) or its checks.
#pragma once

#include <cstdint>

namespace cplab_emu {

// rows [row0, row0 + m) of (o_acc (n,h,dv), lse_acc (h,n)) merged with (o_part (m,h,dv), lse_part (h,m))
void merge_streaming_f32(std::int64_t n, std::int64_t h, std::int64_t dv, float* o_acc, float* lse_acc, std::int64_t row0,
                         std::int64_t m, const float* o_part, const float* lse_part);
// o_acc rows [row0, row0 + m) += exp(lse_part - lse_final) o_part; lse_final (h,n)
void fold_correction_f32(std::int64_t n, std::int64_t h, std::int64_t dv, float* o_acc, const float* lse_final,
                         std::int64_t row0, std::int64_t m, const float* o_part, const float* lse_part);

// y (count) = value (merge.cu fill_f32's kernel and grid)
void fill_f32(float* y, std::int64_t count, float value);

}  // namespace cplab_emu
