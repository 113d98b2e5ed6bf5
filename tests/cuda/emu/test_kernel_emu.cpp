// test_kernel_emu.cpp: the attention kernels v1 and v2 (their own source, cuda/attention_v*.cu)
// run on the CPU by the host emulation of emu.h / mma_emu.h, against the double reference.
//
// What it is: a fast subset of tests/cuda/test_attention.cpp's cases, so the kernels' indexing, tiling,
// masking, barriers and cp.async pipelining are checked in every CI run without a GPU: v2 forward
// and backward for bf16 and fp16, head dims 64 and 128, MHA and GQA, masks none / causal /
// bottom-right causal with sq != sk / THD per-sequence causal ranges with an empty row, ragged
// sizes (sq 1, 72, 130, 200: below, just above and between multiples of v2's 128-row blocks),
// cp.async landing at its wait (deferred) and at once (immediate); v1 in fp32 with d != dv.
// As on the GPU: outputs poisoned with NaN first, backward accumulated onto a non-zero start,
// Delta from the kernel's own O, the reference reference/core/dense_attention.h on the same rounded
// inputs, the per-dtype tolerances of test_gpu_util.h (cuda/README.md).
// The masks of today's models (windows, chunks, packed, attention sinks) are test_kernel_emu_masks.cpp;
// run_case is emu_case.h; kernel v3 is test_kernel_emu_v3.cpp; the emulator's Hopper instructions
// test_emu_hopper.cpp.
// What it is not: a GPU test (emu.h and mma_emu.h say what the emulation cannot see: the memory
// model, the tensor cores' fp32 rounding, timing, bank conflicts), or every case of test_attention.cpp.
#include <doctest/doctest.h>

#include <vector>

#include "emu_case.h"

using namespace cplab_emu_test;

namespace {

// THD: three packed sequences [0, 30), [30, 100), [100, 130), causal inside each; row 110 sees nothing
Mask thd_mask() { return packed_causal({0, 30, 100, 130}, 110); }

const Case kNone{"none, 130 x 70", 130, 70, Mask::none()};
const Case kCausal{"causal, 130 x 130", 130, 130, Mask::causal(0)};
const Case kBottomRight{"bottom-right causal, 72 x 200", 72, 200, Mask::causal(200 - 72)};
const Case kOneRow{"bottom-right causal, 1 x 77", 1, 77, Mask::causal(76)};
const Case kThd{"THD ranges (one empty row), 130 x 130", 130, 130, thd_mask()};
// v2's 128-row blocks: a second block of 72 rows (its last two warps without a row); 4 key tiles of
// 64 (the double buffer refilled twice) and 3, the last of 8 keys
const Case kCausal200{"causal, 200 x 200", 200, 200, Mask::causal(0)};
const Case kNone200{"none, 200 x 136", 200, 136, Mask::none()};

}  // namespace

// h = 2: hk = 2 is MHA, hk = 1 GQA
TEST_CASE("emulated kernel v2 (fwd + bwd) equals the double reference: bf16") {
  using T = __nv_bfloat16;
  const DType t = DType::bf16;
  run_case<T>(2, t, 64, 64, 2, 2, kNone, CpAsync::deferred);
  run_case<T>(2, t, 64, 64, 2, 1, kThd, CpAsync::immediate);
  run_case<T>(2, t, 128, 128, 2, 1, kBottomRight, CpAsync::immediate);
  run_case<T>(2, t, 128, 128, 2, 2, kOneRow, CpAsync::deferred);
  run_case<T>(2, t, 128, 128, 2, 1, kCausal200, CpAsync::immediate);
  run_case<T>(2, t, 64, 64, 2, 2, kNone200, CpAsync::deferred);
}

TEST_CASE("emulated kernel v2 (fwd + bwd) equals the double reference: fp16") {
  using T = __half;
  const DType t = DType::f16;
  run_case<T>(2, t, 64, 64, 2, 1, kCausal, CpAsync::deferred);
  run_case<T>(2, t, 64, 64, 2, 2, kBottomRight, CpAsync::immediate);
  run_case<T>(2, t, 128, 128, 2, 2, kThd, CpAsync::deferred);
  run_case<T>(2, t, 128, 128, 2, 1, kNone, CpAsync::immediate);
  run_case<T>(2, t, 64, 64, 2, 1, kCausal200, CpAsync::immediate);
  run_case<T>(2, t, 128, 128, 2, 2, kNone200, CpAsync::deferred);
}

TEST_CASE("emulated kernel v1 (fwd + bwd) equals the double reference: fp32, d 40, dv 24") {
  run_case<float>(1, DType::f32, 40, 24, 2, 1, kBottomRight, CpAsync::deferred);
  run_case<float>(1, DType::f32, 40, 24, 2, 2, kThd, CpAsync::deferred);
}
