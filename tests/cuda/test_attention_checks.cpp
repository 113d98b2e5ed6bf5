// test_attention_checks.cpp: the attention host API refuses what it cannot run, with a message
// naming the rule, before any CUDA call, so this runs (and must pass) on machines without a GPU.
// What it is not: a numerical test (test_attention.cpp, GPU only).
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>

#include "attention.h"
#include "core/error.h"

#include <string>

using namespace cplab;
using namespace cplab::cuda;

TEST_CASE("attention checks: kernels, dtypes, head dims, heads and masks are checked before any launch") {
  CHECK_NOTHROW(check_supported(Kernel::v2, DType::bf16, AttnDims{100, 300, 8, 2, 128, 128}));
  CHECK_NOTHROW(check_supported(Kernel::v1, DType::f32, AttnDims{1, 1, 1, 1, 7, 3}));
  CHECK_THROWS_WITH_AS(check_supported(Kernel::v2, DType::f32, AttnDims{64, 64, 1, 1, 64, 64}),
                       "kernel v2 takes fp16 or bf16 inputs, not fp32", Error);
  CHECK_THROWS_WITH_AS(check_supported(Kernel::v2, DType::bf16, AttnDims{64, 64, 1, 1, 96, 96}),
                       "kernel v2 needs head dim 64 or 128 (got d = 96)", Error);
  CHECK_THROWS_WITH_AS(check_supported(Kernel::v2, DType::f16, AttnDims{64, 64, 1, 1, 64, 128}),
                       "kernel v2 needs dv == d (got d = 64, dv = 128)", Error);
  CHECK_THROWS_WITH_AS(check_supported(Kernel::v1, DType::bf16, AttnDims{64, 64, 1, 1, 256, 64}),
                       "kernel v1 needs head dims <= 128 (got d = 256, dv = 64)", Error);
  CHECK_THROWS_WITH_AS(check_supported(Kernel::v1, DType::bf16, AttnDims{64, 64, 6, 4, 64, 64}),
                       "query heads h = 6 must be a positive multiple of KV heads hk = 4", Error);
  CHECK_THROWS_WITH_AS(check_supported(Kernel::v1, DType::bf16, AttnDims{0, 64, 1, 1, 64, 64}),
                       "attention needs sq > 0 and sk > 0 (got sq = 0, sk = 64)", Error);
  CHECK_THROWS_WITH_AS(check_supported(Kernel::v3, DType::f32, AttnDims{64, 64, 1, 1, 64, 64}),
                       "kernel v3 takes fp16 or bf16 inputs, not fp32", Error);
  CHECK_THROWS_WITH_AS(check_supported(Kernel::v3, DType::bf16, AttnDims{64, 64, 1, 1, 256, 256}),
                       "kernel v3 needs head dim 64 or 128 (got d = 256)", Error);
  if (kernel_v3_built()) {
    CHECK_NOTHROW(check_supported(Kernel::v3, DType::f16, AttnDims{100, 300, 8, 2, 64, 64}));
  } else {
    CHECK_THROWS_WITH_AS(check_supported(Kernel::v3, DType::f16, AttnDims{100, 300, 8, 2, 64, 64}),
                         "kernel v3 (wgmma + TMA) is not in this build: configure with CMAKE_CUDA_ARCHITECTURES including 90", Error);
  }
  CHECK(std::string(to_string(Kernel::v3)) == "v3");
  // the forward itself checks first: no CUDA call happens (nullptr pointers are never touched)
  CHECK_THROWS_AS(attention_forward(Kernel::v2, DType::f32, AttnDims{64, 64, 1, 1, 64, 64}, nullptr, nullptr, nullptr,
                                    MaskRule{}, 1.0f, nullptr, nullptr, nullptr),
                  Error);
  CHECK_THROWS_WITH_AS(check_supported(Kernel::v1, DType::f32, AttnDims{64, 64, 70000, 70000, 64, 64}),
                       "query heads h = 70000: the kernels launch a grid row per head, and a grid's y dimension is at most 65535", Error);
  // the scale: the kernels' softmax takes each row's max over raw logits (softmax_rules.h fast path)
  CHECK_THROWS_WITH_AS(attention_forward(Kernel::v2, DType::bf16, AttnDims{64, 64, 1, 1, 64, 64}, nullptr, nullptr, nullptr,
                                         MaskRule{}, -0.125f, nullptr, nullptr, nullptr),
                       "the attention scale must be a finite number > 0 (got -0.125)", Error);
  // v2 / v3 pointers must suit their 16-byte copies: refused before any CUDA call (never dereferenced)
  const auto at = [](std::uintptr_t a) { return reinterpret_cast<void*>(a); };
  CHECK_THROWS_WITH_AS(attention_forward(Kernel::v2, DType::bf16, AttnDims{64, 64, 1, 1, 64, 64}, at(4096), at(4096 + 8), at(4096),
                                         MaskRule{}, 1.0f, at(4096), nullptr, nullptr),
                       "kernel v2 reads k with 16-byte copies: its address must be 16-byte aligned", Error);
  CHECK_THROWS_WITH_AS(attention_forward(Kernel::v2, DType::bf16, AttnDims{64, 64, 1, 1, 64, 64}, at(4096), at(4096), at(4096),
                                         MaskRule{}, 1.0f, at(4098), nullptr, nullptr),
                       "kernel v2 writes o in 4-byte words: its address must be 4-byte aligned", Error);
  CHECK_THROWS_WITH_AS(attention_backward(Kernel::v2, DType::f16, AttnDims{64, 64, 1, 1, 64, 64}, at(4096), at(4096), at(4096),
                                          at(4096 + 2), nullptr, nullptr, MaskRule{}, 1.0f, nullptr, nullptr, nullptr, nullptr),
                       "kernel v2 reads dout with 16-byte copies: its address must be 16-byte aligned", Error);
  CHECK_THROWS_WITH_AS(DeviceMask(Mask::ranges({0, 0}, {1, 2}), 3), "a ranges mask needs one [lo, hi) per query row (3 rows)", Error);
  CHECK_THROWS_WITH_AS(fill_f32(nullptr, -1, 0.f, nullptr), "fill_f32 needs count >= 0", Error);
  CHECK_THROWS_WITH_AS(merge_lse(10, 2, nullptr, 8, 4, nullptr, nullptr),
                       "a partial's rows [8, 12) must lie in the accumulator's [0, 10)", Error);
}
