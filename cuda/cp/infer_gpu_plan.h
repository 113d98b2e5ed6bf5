// infer_gpu_plan.h: what one GPU rank does in an inference CP step (issue 37), planned on the host
// from the CPU reference's InferSpec (reference/infer/infer_spec.h), before any CUDA call.
//
// What it is: InferGpuPlan, rank r's tiles in the order the GPU runs them, each a block of queries
// (whose new tokens: q_owner) against a block of KV rows (whose shard: kv_owner) under the mask the
// reference's variants use: infer_tile_mask (reference/infer/infer_common.h: token_mask over the
// spec's kv_packing), from q_kv_rows(q_owner) to kv_rows(kv_owner) with the run's PositionRule
// (causal with the offset P_b, window, chunk). Nothing here re-derives ownership, layouts or masks: every row list is the spec's.
// The ring order is reference/modes/ring_schedule.h's (at step i position r holds the block of
// ring_fwd_kv_block(N, r, i), sent to ring_fwd_dst and received from ring_fwd_src), for pass-KV
// (the block is KV) and pass-Q / pass-Q ring decode (the block is Q). decode-ag gathers every Q
// block first, then runs one tile per owner. Blocks travel padded to the largest shard (Mkv rows
// of KV, Mq rows of Q: the paper's equal-size messages); a tile reads only the block's real rows
// (nq = |q_rows(q_owner)|, nk = |kv_rows(kv_owner)|). A tile whose mask has no visible pair (or no
// row) is marked `empty`: the GPU writes O = 0, LSE = -inf for it instead of calling the kernel.
// Shapes of the GPU buffers (infer_gpu.h) are read from infer_gpu_sizes.
// What it is not: a CUDA call (host only; the kernel emulation test runs the same plan on the CPU),
// or the reference's variants (reference/infer/*.cpp, which it mirrors tile for tile).
#pragma once

#include <cstdint>
#include <vector>

#include "core/mask.h"
#include "infer/infer_spec.h"

namespace cplab::cuda {

struct InferGpuTile {
  std::int64_t step = 0;      // ring step (pass-KV, pass-Q), or 1 (decode-ag: the tiles' step)
  std::int64_t q_owner = 0;   // whose new tokens are the queries (rows q_rows(q_owner))
  std::int64_t kv_owner = 0;  // whose KV shard are the keys (rows kv_rows(kv_owner))
  std::int64_t nq = 0, nk = 0;  // real rows of each block
  std::int64_t pairs = 0;     // visible (query, key) pairs of the tile
  bool empty = true;          // no visible pair: O = 0, LSE = -inf, no kernel call
  Mask mask;                  // ranges over the nq x nk tile (infer_tile_mask)
};

struct InferGpuPlan {
  std::int64_t rank = 0, steps = 0;  // steps: the ring's N, or 1 tile step (decode-ag)
  std::vector<InferGpuTile> tiles;   // in the order the rank runs them (one per step, or per owner)
};

// rank r's plan (cplab::Error if r is outside [0, N))
InferGpuPlan infer_gpu_plan(const InferSpec& s, std::int64_t r);

// the tile of q_owner's queries against kv_owner's KV shard (infer_tile_mask, the reference's)
InferGpuTile infer_gpu_tile(const InferSpec& s, std::int64_t q_owner, std::int64_t kv_owner, std::int64_t step);

// the buffers' row counts: every rank's q and o hold Mq rows (n_r real), its kv Mkv rows (m_r real)
struct InferGpuSizes {
  std::int64_t N = 1, Mq = 0, Mkv = 0, h = 0, hk = 0, d = 0, dv = 0;
};
InferGpuSizes infer_gpu_sizes(const InferSpec& s);

// true for the variants whose partials return to their owners by an all-to-all (pass-Q, its ring
// decode, decode-ag); false for pass-KV (merged where computed)
bool infer_gpu_returns_partials(const InferSpec& s);

}  // namespace cplab::cuda
