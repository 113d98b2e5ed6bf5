// ring_schedule.h: the ONE definition of what ring (p2p) attention computes at each step.
//
// What it is: for rank r at step i, which rank's KV block it holds, and which tile of
// (its local Q rows) x (that block's KV rows) it computes under which mask:
//   forward  KV travels r -> r+1, at step i rank r holds block j = (r - i) mod P
//   backward KV and dKV travel r -> r-1, at step i rank r holds block j = (r - H + i) mod P
//            (= (r + 1 + i) mod P for the whole ring: it starts from the block it received last in
//            the forward, as TE does)
// How far the ring goes: H hops, H + 1 steps per phase. H = P-1 (the whole ring) unless a window
// or chunk (mask_rule.h PositionRule) leaves every tile at offset (r - j) mod P > H without a
// visible pair: then the ring stops early (ring_hops), in both phases, sending H messages of KV
// forward (not P-1) and H+1 backward. Contiguous layout, causal window W: H = min(P-1,
// ceil((W-1)/n)), one hop when 2 <= W <= n; zigzag needs block r+1 (the last hop) for any W >= 2.
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
// A window or chunk (unpacked): the section's rows and cols above, masked by token_mask over their
// positions (the rule's), "skipped" when no pair is visible (ring_rule_tile). No tile is computed
// that the rule leaves empty.
// Messages: at forward step i every position posts its held KV block to r+1 ("kv", i < H) before
// computing and receives the next one from r-1 after; at backward step i it posts to r-1 and
// receives from r+1 (ring_fwd_post / ring_bwd_post say what, given the H + 1 steps).
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
// steps = H + 1 of the ring (P: the whole ring)
inline index_t ring_bwd_kv_block(index_t P, index_t r, index_t i, index_t steps) {
  return ((r - steps + 1 + i) % P + P) % P;
}
inline index_t ring_bwd_kv_block(index_t P, index_t r, index_t i) { return ring_bwd_kv_block(P, r, i, P); }

// tile of rank r holding KV block j; n = local token count (seq / cp)
RingTile ring_tile(Layout layout, bool causal, index_t P, index_t r, index_t j, index_t n);

// the packed-sequence tile for the section tile t: all of q_pos (rank r's positions, part.indices(r))
// x all of k_pos (block j's) under token_mask(p, q_pos, k_pos, rule)
RingTile ring_packed_tile(const RingTile& t, const Packing& p, const std::vector<index_t>& q_pos,
                          const std::vector<index_t>& k_pos, const PositionRule& rule);

// The section tile t of rank r x block j as the run computes it, given ALL positions of r (q_all)
// and of j (k_all) in one sequence of S tokens or a packing: t itself for a plain rule; packed,
// ring_packed_tile; a window or chunk, t's rows x cols under token_mask of the rule ("skipped" when
// no pair is visible)
RingTile ring_rule_tile(const RingTile& t, const Packing* packing, const PositionRule& rule, index_t S,
                        const std::vector<index_t>& q_all, const std::vector<index_t>& k_all);

// The tile a run computes (the one composition the CPU ring and the GPU ring share): position r of
// a ring over `part` holding block j; ring_tile, then ring_rule_tile when packed or windowed.
RingTile ring_plan_tile(const Partition& part, const Packing* packing, const PositionRule& rule, index_t r, index_t j);

// H, the hops the ring makes (its steps are H + 1): the largest offset (r - j) mod P of a rank r and
// a block j with a visible (query, key) pair, P-1 for a plain rule (every step has work), and never
// more than P-1. Computed from positions without building a tile, per distinct sequence shape
// (padded length, real length): O(P) each for contiguous and zigzag, O(1) for striped.
index_t ring_hops(const Partition& part, const Packing* packing, const PositionRule& rule);

// What every ring position posts at a step (all positions post alike): nothing, or one message
// named `tensor` carrying its held KV block (kv) and/or the dKV accumulated for it (dkv); each
// part is one (n, hk, d) K plus one (n, hk, dv) V of the run's dtype.
// `steps` = H + 1: P for the whole ring.
struct RingPost {
  bool posts = false, kv = false, dkv = false;
  std::string tensor;
  index_t parts() const { return (kv ? 1 : 0) + (dkv ? 1 : 0); }
};
RingPost ring_fwd_post(index_t steps, index_t i);  // "kv" for i < steps-1
RingPost ring_bwd_post(index_t steps, index_t i);  // "kv" (i = 0), "kv+dkv", "dkv" (i = steps-1); none if steps = 1
// where position r posts to and receives from
inline index_t ring_fwd_dst(index_t P, index_t r) { return (r + 1) % P; }
inline index_t ring_fwd_src(index_t P, index_t r) { return (r - 1 + P) % P; }
inline index_t ring_bwd_dst(index_t P, index_t r) { return (r - 1 + P) % P; }
inline index_t ring_bwd_src(index_t P, index_t r) { return (r + 1) % P; }

}  // namespace cplab
