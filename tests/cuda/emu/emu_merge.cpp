// emu_merge.cpp: the merge kernels (cuda/merge.cu, included, compiled with CPLAB_EMULATE) launched
// on the host emulation with the grids of merge.cu's launchers: merge_streaming is the O kernel (a
// warp per (row, head)) then the LSE kernel, as in merge.cu; fold_correction the fold kernel; fill_f32.
#include "merge.cu"

#include "emu.h"
#include "emu_merge.h"

namespace cplab_emu {

using namespace cplab::cuda;
using cplab::cuda::detail::blocks_for;

void merge_streaming_f32(std::int64_t n, std::int64_t h, std::int64_t dv, float* o_acc, float* lse_acc, std::int64_t row0,
                         std::int64_t m, const float* o_part, const float* lse_part) {
  launch(dim3(blocks_for(m * h, kRowsPerBlock)), kThreads, 0,
         [&] { merge_kernel<float>(o_acc, lse_acc, n, h, dv, row0, m, o_part, lse_part); });
  launch(dim3(blocks_for(m * h, kThreads)), kThreads, 0, [&] { merge_lse_kernel(lse_acc, n, h, row0, m, lse_part); });
}

void fold_correction_f32(std::int64_t n, std::int64_t h, std::int64_t dv, float* o_acc, const float* lse_final,
                         std::int64_t row0, std::int64_t m, const float* o_part, const float* lse_part) {
  launch(dim3(blocks_for(m * h, kRowsPerBlock)), kThreads, 0,
         [&] { fold_kernel<float>(o_acc, lse_final, n, h, dv, row0, m, o_part, lse_part); });
}

void fill_f32(float* y, std::int64_t count, float value) {
  launch(dim3(blocks_for(count, kThreads)), kThreads, 0, [&] { fill_kernel(y, count, value); });
}

}  // namespace cplab_emu
