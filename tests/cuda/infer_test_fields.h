// infer_test_fields.h: the inference steps the GPU-side tests share (test_infer_gpu.cpp,
// test_infer_plan_checks.cpp, emu/test_infer_emu.cpp): one InferFields maker and the variant list.
// What it is not: a test (each file states what it checks) or a tolerance (test_gpu_util.h).
#pragma once

#include <utility>
#include <vector>

#include "infer/infer_spec.h"

namespace cplab::cuda::test {

// variant m over N ranks, requests with cache lengths P and new-token counts T; 4 query heads over
// 2 KV heads of dim 64 (the kernels' head dims)
inline InferFields infer_fields(InferMode m, index_t N, std::vector<index_t> P, std::vector<index_t> T) {
  InferFields f;
  f.mode = m;
  f.cp = N;
  f.cached = std::move(P);
  f.fresh = std::move(T);
  f.heads = 4, f.kv_heads = 2, f.head_dim = 64;
  return f;
}

inline constexpr InferMode kInferModes[] = {InferMode::pass_kv, InferMode::pass_q, InferMode::decode_pass_q,
                                            InferMode::decode_ag};

}  // namespace cplab::cuda::test
