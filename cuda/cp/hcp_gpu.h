// hcp_gpu.h: hierarchical a2a+p2p context parallelism on GPU ranks, forward and backward.
//
// What it is: the GPU twin of reference/modes/hierarchical_cp.h: cp = icp * ocp ranks, rank
// g = p*icp + a (hcp_rank). The inner all-to-all groups (hcp_inner_members) and their plans
// (hcp_inner_plan), the outer rings (hcp_ring_members) and their zigzag layout over ocp ranks
// are the reference's:
//   forward   step 0: inner all-to-all of Q, K, V (GpuA2a) into the ring rank's buffers (head group
//             a of the group's two super-chunks); steps 1..ocp: the ring (ring_gpu.h) over ring a,
//             double-buffered KV on its transfer stream; step ocp+1: inner all-to-all back of O
//   backward  dO inward, the ring backward, dQ, dK, dV back (fp32)
// The LSE stays head-sharded in the ring (ring.lse, (h/icp, S/ocp)), as in TE. Windows and chunks:
// the ring's spec carries the rule (hcp_ring_spec) and makes the reference's H hops; attention
// sinks: ring a gets head group a's logits (ring.sinks), applied once per row after its last merge.
// What it is not: packed sequences (the reference refuses them for a2a+p2p too).
#pragma once

#include <vector>

#include "a2a_gpu.h"
#include "cp_spec.h"
#include "ring_gpu.h"

namespace cplab::cuda {

struct GpuHcpRank : RankIO {  // RankIO: q, kv, dout, o, dq, dkv in the data layout
  GpuHcpRank(const GpuCpSpec& s, Comm& comm);
  Comm* comm;
  std::int64_t p = 0, a = 0;  // inner group, position in it (rank = p*icp + a)
  GpuRingRank ring;           // the outer ring's rank: h/icp heads, S/ocp tokens
  A2aSet a2a;                 // hcp_inner_plan of group p
  cudaStream_t main_stream() { return ring.compute.get(); }
};

void gpu_hcp_forward(const GpuCpSpec& s, const std::vector<GpuHcpRank*>& ranks, CpWork work = CpWork::all,
                     TileTimes* times = nullptr);
void gpu_hcp_backward(const GpuCpSpec& s, const std::vector<GpuHcpRank*>& ranks, CpWork work = CpWork::all,
                      TileTimes* times = nullptr);

}  // namespace cplab::cuda
