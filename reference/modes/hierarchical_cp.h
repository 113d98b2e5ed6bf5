// hierarchical_cp.h: hierarchical a2a+p2p context parallelism (TE's "a2a+p2p", USP/LongVILA), on
// simulated ranks.
//
// What it is: cp = icp * ocp ranks. Rank g = p*icp + a: the all-to-all (inner) groups are the
// contiguous runs {p*icp .. p*icp + icp-1}, the rings (outer) are strided by icp: {a, icp + a, ...}.
// The data is zigzag over all cp ranks. Forward:
//   step 0        inner all-to-all of Q, K, V (ulysses_a2a.h a2a_before): rank (p, a) gets head
//                 group a (heads/icp heads) of its group's tokens, which are super-chunks p and
//                 2*ocp-1-p of icp*c tokens each: exactly the zigzag layout over ocp ranks, causal
//                 order inside each super-chunk
//   steps 1..ocp  ring attention (ring_p2p.h) over each ring with that outer zigzag layout
//   step ocp+1    inner all-to-all back of O
// Backward: dO inward, the ring backward, dQ/dK/dV back out.
// The rings keep the run's window or chunk (they may stop early: ring_schedule.h), and ring a
// applies its head group's attention sinks (core/sinks.h) before O goes back.
// What it is not: packed sequences (refused) or a fallback: icp = 1 or ocp = 1 are run as they are.
#pragma once

#include "modes/ring_p2p.h"
#include "modes/ulysses_a2a.h"

namespace cplab {

template <class T>
struct HcpForward {
  CpOutput<T> out;                    // per rank, data layout
  PerRank<T> q, k, v;                 // per global rank: after the inner all-to-all
  std::vector<RingForward<T>> rings;  // per inner index a (ring positions p = 0..ocp-1)
};

template <class T>
HcpForward<T> hcp_forward(const CpSpec& cfg, const PerRank<T>& q,
                          const PerRank<T>& k, const PerRank<T>& v, SimComm& comm, const std::vector<T>& sinks = {});
template <class T>
CpGrads<T> hcp_backward(const CpSpec& cfg, const HcpForward<T>& fwd,
                        const PerRank<T>& dout, SimComm& comm);

// the inner all-to-all plan of group p, the ranks of ring a, and the rings' layout (zigzag of the
// same sequence over ocp ranks); read by the execution and by trace_plan.h
A2aPlan hcp_inner_plan(const Partition& data, index_t icp, index_t ocp, index_t p);
std::vector<int> hcp_ring_members(index_t icp, index_t ocp, index_t a);
// the global rank of inner position a in group p (the one definition of the grid: g = p*icp + a),
// and the members of inner all-to-all group p
inline index_t hcp_rank(index_t icp, index_t p, index_t a) { return p * icp + a; }
std::vector<int> hcp_inner_members(index_t icp, index_t p);
Partition hcp_outer_partition(const Partition& data, index_t ocp);
// the spec of hierarchical CP's rings: p2p over O ranks, zigzag over the whole sequence, heads / I
// query and (KV heads x kv_replication) / I KV heads, the same mask (window, chunk), scale and merge
CpSpec hcp_ring_spec(const CpSpec& s);

}  // namespace cplab
