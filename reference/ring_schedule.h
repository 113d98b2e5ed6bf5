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
// Why each is exact is derived in docs/ring.md; tests check every tile against the global causal
// mask token by token.
// What it is not: the execution (ring_p2p.h), or the communication (sim/comm.h).
#pragma once

#include <string>

#include "layout_index.h"
#include "mask.h"
#include "tensor.h"

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

}  // namespace cplab
