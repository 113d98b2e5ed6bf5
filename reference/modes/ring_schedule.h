// ring_schedule.h: the ONE definition of what ring (p2p) attention computes at each step.
//
// What it is: for rank r at step i, which rank's KV block it holds, and which tile of
// (its local Q rows) x (that block's KV rows) it computes under which mask:
//   forward  KV travels r -> r+1, at step i rank r holds block j = (r - i) mod P
//   backward KV and dKV travel r -> r-1, at step i rank r holds block j = (r + 1 + i) mod P
//            (it starts from the block it received last in the forward, as TE does)
// Tiles, with n = seq/cp local tokens and c = n/2 (zigzag chunk):
//   non-causal, any layout      "all"       Q[0,n) x KV[0,n)   no mask
//   zigzag     j == r           "diagonal"  Q[0,n) x KV[0,n)   causal (local order = global order)
//              j <  r           "lower"     Q[0,n) x KV[0,c)   none   (both Q chunks see chunk j)
//              j >  r           "upper"     Q[c,n) x KV[0,n)   none   (only chunk 2P-1-r sees it)
//   contiguous j == r           "diagonal"  causal;  j < r "lower" full;  j > r "skipped" (no work)
//   striped    j <= r           "diagonal"/"lower"  causal(0):  k_local <= q_local
//              j >  r           "upper"     causal(-1): k_local <  q_local
// Packed sequences (THD): every tile is all local Q x the whole held block under thd.h token_mask,
// still named by its section, "skipped" when no pair is visible (ring_packed_tile).
// Messages: at forward step i every position posts its held KV block to r+1 ("kv", i < P-1) before
// computing and receives the next one from r-1 after; at backward step i it posts to r-1 and
// receives from r+1 (ring_fwd_post / ring_bwd_post say what).
// Why each is exact is derived in docs/ring.md; tests check every tile against the global causal
// mask token by token. The execution (ring_p2p.cpp) and the planner (trace_plan.cpp) both read
// this table.
// What it is not: the execution (ring_p2p.h), or the communication (sim/comm.h).
#pragma once

#include <string>
#include <vector>

#include "layout/layout_index.h"
#include "core/mask.h"
#include "core/tensor.h"
#include "layout/thd.h"

namespace cplab {

struct RingTile {
  std::string section;  // "all" | "diagonal" | "lower" | "upper" | "skipped"
  index_t q0 = 0, nq = 0;  // local query rows [q0, q0 + nq)
  index_t k0 = 0, nk = 0;  // rows [k0, k0 + nk) of the held KV block
  Mask mask;
  bool skipped = false;  // nothing to compute: every pair is masked
};

inline index_t ring_fwd_kv_block(index_t P, index_t r, index_t i) { return ((r - i) % P + P) % P; }
inline index_t ring_bwd_kv_block(index_t P, index_t r, index_t i) { return (r + 1 + i) % P; }

// tile of rank r holding KV block j; n = local token count (seq / cp)
RingTile ring_tile(Layout layout, bool causal, index_t P, index_t r, index_t j, index_t n);

// the packed-sequence tile for the section tile t: all of q_pos (rank r's positions, part.indices(r))
// x all of k_pos (block j's) under token_mask(p, q_pos, k_pos, causal)
RingTile ring_packed_tile(const RingTile& t, const Packing& p, const std::vector<index_t>& q_pos,
                          const std::vector<index_t>& k_pos, bool causal);

// The tile a run computes (the one composition the CPU ring and the GPU ring share): position r of
// a ring over `part` holding block j; ring_tile, or ring_packed_tile when `packing` is given.
RingTile ring_plan_tile(const Partition& part, const Packing* packing, bool causal, index_t r, index_t j);

// What every ring position posts at a step (all positions post alike): nothing, or one message
// named `tensor` carrying its held KV block (kv) and/or the dKV accumulated for it (dkv); each
// part is one (n, hk, d) K plus one (n, hk, dv) V of the run's dtype.
struct RingPost {
  bool posts = false, kv = false, dkv = false;
  std::string tensor;
  index_t parts() const { return (kv ? 1 : 0) + (dkv ? 1 : 0); }
};
RingPost ring_fwd_post(index_t P, index_t i);  // "kv" for i < P-1
RingPost ring_bwd_post(index_t P, index_t i);  // "kv" (i = 0), "kv+dkv", "dkv" (i = P-1); none if P = 1
// where position r posts to and receives from
inline index_t ring_fwd_dst(index_t P, index_t r) { return (r + 1) % P; }
inline index_t ring_fwd_src(index_t P, index_t r) { return (r - 1 + P) % P; }
inline index_t ring_bwd_dst(index_t P, index_t r) { return (r - 1 + P) % P; }
inline index_t ring_bwd_src(index_t P, index_t r) { return (r + 1) % P; }

}  // namespace cplab
