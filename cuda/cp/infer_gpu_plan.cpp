// infer_gpu_plan.cpp: rank r's tiles of an inference CP step (see infer_gpu_plan.h).
#include "infer_gpu_plan.h"

#include <algorithm>

#include "core/util.h"
#include "infer/infer_common.h"
#include "modes/ring_schedule.h"

namespace cplab::cuda {

InferGpuTile infer_gpu_tile(const InferSpec& s, std::int64_t q_owner, std::int64_t kv_owner, std::int64_t step) {
  const std::vector<index_t>& q = s.q_kv_rows(q_owner);  // the queries' own tokens, KV space
  const std::vector<index_t>& k = s.kv_rows(kv_owner);
  InferGpuTile t;
  t.step = step;
  t.q_owner = q_owner;
  t.kv_owner = kv_owner;
  t.nq = static_cast<std::int64_t>(q.size());
  t.nk = static_cast<std::int64_t>(k.size());
  if (t.nq > 0 && t.nk > 0) {
    const InferTile m = infer_tile_mask(s, q, k);  // the reference's own tile mask (infer_common.h)
    t.mask = m.mask;
    t.pairs = visible_pairs(t.mask, t.nq, t.nk);
  }
  t.empty = t.pairs == 0;
  return t;
}

InferGpuPlan infer_gpu_plan(const InferSpec& s, std::int64_t r) {
  const std::int64_t N = s.N();
  require(r >= 0 && r < N, "rank " + num(r) + " is outside the " + num(N) + " ranks of the inference step");
  InferGpuPlan plan;
  plan.rank = r;
  switch (s.mode()) {
    case InferMode::pass_kv:  // the KV block of ring_fwd_kv_block travels; the rank's own queries stay
      plan.steps = N;
      for (std::int64_t i = 0; i < N; ++i) plan.tiles.push_back(infer_gpu_tile(s, r, ring_fwd_kv_block(N, r, i), i));
      break;
    case InferMode::pass_q:
    case InferMode::decode_pass_q:  // the Q block travels the same ring; the rank's own KV stays
      plan.steps = N;
      for (std::int64_t i = 0; i < N; ++i) plan.tiles.push_back(infer_gpu_tile(s, ring_fwd_kv_block(N, r, i), r, i));
      break;
    case InferMode::decode_ag:  // step 0 gathers every Q block; step 1: one tile per owner
      plan.steps = 1;
      for (std::int64_t o = 0; o < N; ++o) plan.tiles.push_back(infer_gpu_tile(s, o, r, 1));
      break;
  }
  return plan;
}

InferGpuSizes infer_gpu_sizes(const InferSpec& s) {
  return InferGpuSizes{s.N(), s.Mq(), s.Mkv(), s.h(), s.hk(), s.d(), s.dv()};
}

bool infer_gpu_returns_partials(const InferSpec& s) { return s.mode() != InferMode::pass_kv; }

}  // namespace cplab::cuda
