// ring_p2p.h: ring (p2p) context-parallel attention, forward and backward, on simulated ranks.
//
// What it is: the reference implementation of TE's AttnFuncWithCPAndKVP2P on cp ranks in one
// process. Each rank keeps its Q (and O, dQ) and the KV blocks travel:
//   forward   P steps; before computing step i every rank posts its KV block to r+1 ("kv", P-1
//             messages per rank), computes ring_tile(...) against the block it holds, merges the
//             partial (O_i, LSE_i) (merge.h, streaming or TE's post-loop fold), then receives the
//             next block from r-1.
//   backward  P steps the other way (send to r-1, receive from r+1), starting from the KV block the
//             forward received last. Iteration i posts one message: "kv" (i = 0), "kv+dkv"
//             (0 < i < P-1) or "dkv" (i = P-1). dKV of block b is accumulated by ranks b-1, b-2, ...
//             and arrives complete at its owner on its diagonal step: no separate reduction.
//   GQA/MQA send only the hk KV heads.
//   Both phases make the spec's ring_hops() hops H (H + 1 steps): P-1, fewer when a window or
//   chunk lets the ring stop early (ring_schedule.h); the backward then starts from the block the
//   forward held last, (r - H) mod P, and dKV still arrives complete at its owner on the last step.
//   Attention sinks (core/sinks.h): given, the forward applies them to every rank's final merged
//   (O, LSE), once per row, so the backward's saved O and LSE already include them.
// Every tile and message goes into the Trace held by the SimComm.
// What it is not: the schedule table (ring_schedule.h: the one definition of the sections) or a
// kernel (attention_kernel.h).
#pragma once

#include <vector>

#include "modes/cp_common.h"
#include "sim/comm.h"

namespace cplab {

// A ring is a p2p CpSpec (cp_spec.h): its P ranks, layout, mask, scale, merge and packing (when
// packed(), every tile is all local Q x the held KV block under token_mask, thd.h; otherwise the
// schedule's sections). --mode p2p runs the spec itself; hierarchical CP runs hcp_ring_spec().
// Which simulated ranks form the ring (ring position i -> global rank ranks[i]; empty: 0..P-1), and
// the trace step of the ring's first step (hierarchical CP runs several rings after an all-to-all).
struct RingGroup {
  std::vector<int> ranks;
  int step0 = 0;
  int global(int i) const { return ranks.empty() ? i : ranks[static_cast<size_t>(i)]; }
};


template <class T>
struct RingForward {
  PerRank<T> o;                // (n, h, dv) per rank
  std::vector<Rows<T>> lse;    // (h, n) per rank
  PerRank<T> k_saved, v_saved; // KV block each rank held after the last step (TE saves it for backward)
};

template <class T>
using RingGrads = CpGrads<T>;

// q, k, v indexed by ring position; ring.mode() must be p2p. sinks: empty, or one logit per query
// head of the ring's tensors
template <class T>
RingForward<T> ring_forward(const CpSpec& ring, const PerRank<T>& q, const PerRank<T>& k,
                            const PerRank<T>& v, SimComm& comm, const RingGroup& group = {},
                            const std::vector<T>& sinks = {});

template <class T>
RingGrads<T> ring_backward(const CpSpec& ring, const PerRank<T>& q, const PerRank<T>& k,
                           const PerRank<T>& v, const RingForward<T>& fwd, const PerRank<T>& dout,
                           SimComm& comm, const RingGroup& group = {});

}  // namespace cplab
