// test_infer_plan_checks.cpp: the GPU inference plan (cuda/cp/infer_gpu_plan.h; issue 37) and the GPU
// inference rules, checked without a GPU (in cplab_cuda_host_tests): for every variant, cache layout
// and a grid of uneven sizes, the ranks' tiles cover every (query owner, KV owner) pair exactly once,
// their visible pairs add up to the reference's dense count (infer_request_pairs), each tile's pairs
// are those of the reference's own tile mask, and the ring order is ring_schedule.h's; a spec the
// kernel cannot run, or a communicator of the wrong size, is refused with the rule's message before
// any CUDA call.
// What it is not: a test of the results (emu/test_infer_emu.cpp on the emulated kernels,
// test_infer_gpu.cpp on a GPU).
#include <doctest/doctest.h>

#include <set>
#include <string>
#include <utility>

#include "core/error.h"
#include "infer/infer_common.h"
#include "infer/infer_run.h"
#include "infer_test_fields.h"
#include "infer_gpu.h"
#include "local_comm.h"
#include "modes/ring_schedule.h"

using namespace cplab;
using namespace cplab::cuda;

namespace {

using cplab::cuda::test::infer_fields;
constexpr auto& kModes = cplab::cuda::test::kInferModes;

}  // namespace

TEST_CASE("gpu inference plan: every (query owner, KV owner) tile once, the reference's pairs, the ring's order") {
  for (InferMode m : kModes)
    for (CacheLayout cl : {CacheLayout::zigzag, CacheLayout::interleaved})
      for (index_t N : {1, 3, 8})
        for (index_t P : {0, 7, 1000})
          for (index_t T : {1, 5, 333}) {
            InferFields f = infer_fields(m, N, {P, 3}, {T, 2});  // two packed requests
            f.cache_layout = cl;
            f.window = P == 7 ? std::optional<index_t>(9) : std::nullopt;
            const InferSpec s(f);
            CAPTURE(to_string(m));
            CAPTURE(N);
            CAPTURE(P);
            CAPTURE(T);
            std::set<std::pair<std::int64_t, std::int64_t>> seen;
            std::int64_t pairs = 0;
            for (index_t r = 0; r < N; ++r) {
              const InferGpuPlan plan = infer_gpu_plan(s, r);
              REQUIRE(plan.tiles.size() == static_cast<size_t>(N));
              for (size_t i = 0; i < plan.tiles.size(); ++i) {
                const InferGpuTile& t = plan.tiles[i];
                CHECK(seen.insert({t.q_owner, t.kv_owner}).second);
                if (m == InferMode::pass_kv) {
                  CHECK(t.q_owner == r);
                  CHECK(t.kv_owner == ring_fwd_kv_block(N, r, static_cast<index_t>(i)));
                } else {
                  CHECK(t.kv_owner == r);
                  CHECK(t.q_owner == (m == InferMode::decode_ag ? static_cast<index_t>(i)
                                                                : ring_fwd_kv_block(N, r, static_cast<index_t>(i))));
                }
                const InferTile ref = infer_tile_mask(s, s.q_kv_rows(t.q_owner), s.kv_rows(t.kv_owner));
                CHECK(t.pairs == visible_pairs(ref.mask, t.nq, t.nk));
                CHECK(t.empty == (t.pairs == 0));
                pairs += t.pairs;
              }
            }
            CHECK(seen.size() == static_cast<size_t>(N * N));
            CHECK(pairs == infer_request_pairs(s, 0) + infer_request_pairs(s, 1));
          }
}

TEST_CASE("gpu inference: a step the kernel or the communicator cannot run is refused before any CUDA call") {
  InferFields f = infer_fields(InferMode::pass_q, 4, {100}, {10});
  f.head_dim = 96;
  const GpuInferSpec bad{InferSpec(f), DType::bf16, Kernel::v2};
  CHECK_THROWS_WITH_AS(bad.check(), doctest::Contains("kernel v2 needs head dim 64 or 128"), Error);
  f.head_dim = 64;
  const GpuInferSpec s{InferSpec(f), DType::bf16, Kernel::v2};
  LocalWorld three(3);  // no CUDA call
  CHECK_THROWS_WITH_AS(GpuInferRank(s, three.rank(0)), doctest::Contains("the communicator has 3 ranks, the inference step cp = 4"),
                       Error);
  CHECK(describe(s).find("mode=pass-q N=4 P=100 T=10") == 0);
}
