// ulysses_gpu.h: Ulysses (all-to-all) context parallelism on GPU ranks, forward and backward.
//
// What it is: the GPU twin of reference/modes/ulysses_a2a.h (--mode a2a) over all cp ranks, with the
// reference's plan (sequence_plan: every rank ends up with the whole sequence in order) and mask
// (ulysses_mask: causal, or the packed token mask as per-row key ranges):
//   forward   step 0: all-to-all Q, K, V (GpuA2a): rank g gets head group g of every token;
//             step 1: attention over the whole sequence with h/P heads, no merging;
//             step 2: all-to-all O back. The LSE stays head-sharded (TE keeps it there).
//   backward  step 0: dO inward; step 1: the backward; step 2: dQ, dK, dV back (fp32).
// The mask is the rule's (sliding window, chunk) over all S positions. Attention sinks: the rank
// sees every key of its head group's rows, so the kernel folds head group g's sinks in (the
// reference applies them before O leaves); the backward adds d s_h of those heads over all S rows.
// One stream per rank; the driver issues each phase for every driven rank before the next.
// What it is not: pipelined (TE overlaps the all-to-alls of Q, K and V with each other), or
// replicating KV heads: the KV heads must divide by cp (GpuCpSpec::check).
#pragma once

#include <vector>

#include "a2a_gpu.h"
#include "cp_spec.h"
#include "cp_work.h"
#include "stream.h"

namespace cplab::cuda {

struct GpuUlyssesRank : RankIO {  // RankIO: q, kv, dout, o, dq, dkv in the data layout
  GpuUlyssesRank(const GpuCpSpec& s, Comm& comm);  // allocates, builds the row lists and the mask
  Comm* comm;
  Stream stream;
  // head group g (= rank) of all S tokens, sequence order: (S, h/P, d), (S, hk/P, d), (S, hk/P, dv), (S, h/P, dv) x2
  DeviceBuffer<std::byte> qs, ks, vs, os, dos;
  DeviceBuffer<float> lse, delta;          // (h/P, S): the LSE stays head-sharded
  DeviceBuffer<float> dqs, dks, dvs;       // fp32, shaped like qs, ks, vs
  A2aSet a2a;                              // sequence_plan over every rank
  DeviceMask mask;
  DeviceBuffer<float> sinks, dsinks;       // (h/P): head group g's sinks and d s_h; empty without
  cudaStream_t main_stream() { return stream.get(); }
};

void gpu_ulysses_forward(const GpuCpSpec& s, const std::vector<GpuUlyssesRank*>& ranks, CpWork work = CpWork::all,
                         TileTimes* times = nullptr);
void gpu_ulysses_backward(const GpuCpSpec& s, const std::vector<GpuUlyssesRank*>& ranks, CpWork work = CpWork::all,
                          TileTimes* times = nullptr);

}  // namespace cplab::cuda
