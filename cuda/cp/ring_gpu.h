// ring_gpu.h: ring (p2p) context-parallel attention on GPU ranks, forward and backward.
//
// What it is: the GPU twin of reference/modes/ring_p2p.h, driven by the SAME schedule
// (reference/modes/ring_schedule.h: which KV block each rank holds at each step, which tile of it
// under which mask, what is posted where), the kernels of cuda/attention.h and a Comm (cuda/comm/comm.h:
// LocalComm virtual ranks on one GPU, or NcclComm). Per rank, two streams: compute and
// communication. At a forward step a rank posts its held KV block to r+1 and receives the next
// one from r-1 on the communication stream while the compute stream runs the step's tile and
// merges it into an fp32 (O, LSE) accumulator (double-buffered KV; the receive into a buffer waits
// for the compute that last read it). The backward sends K, V and the fp32 dK/dV accumulated so far
// to r-1 (TE's order) while computing the held block's tile; dQ accumulates in place.
// A ring is described by a GpuCpSpec whose cp.mode() is p2p (cp_spec.h GpuCpSpec::ring(): the spec
// itself for --mode p2p, the outer rings' spec for a2a+p2p), as the reference's ring by a p2p CpSpec:
// P = s.cp.P() positions, n = s.cp.n() tokens each, s.cp.partition() and, when s.cp.packed(),
// s.cp.packing()'s token masks.
// Tensors are the rank's local order of the layout (reference/layout/layout.h Partition::indices):
// q (n, h, d), kv = K (n, hk, d) then V (n, hk, dv), dout (n, h, dv) of the dtype; o the same
// dtype; lse (h, n), dq (n, h, d), dkv = dK then dV, fp32.
// The driving code issues every rank it owns step by step (all P for a LocalWorld, its one rank
// under NCCL): gpu_ring_forward / gpu_ring_backward take those ranks.
// A ring may be a sub-group of the communicator (the outer rings of hcp_gpu.h): its members are
// global ranks, position p of the ring is members[p]. Packed sequences (THD, s.cp.packed()) use
// ring_schedule.h's packed tiles (token masks as per-row key ranges); every tile's mask is copied
// to the device once, when the rank is built. Sliding windows and chunks (s.cp.rule()) come the
// same way, per-row key ranges of ring_plan_tile, and the ring makes H = s.cp.ring_hops() hops,
// H + 1 steps per phase (ring_schedule.h: it stops early when no tile beyond H hops sees a key),
// as the reference's ring. Attention sinks (non-empty `sinks`): applied once per row to the final
// merged (O, LSE) before the cast (sink_kernels.h apply_sinks_f32), and the backward adds this
// rank's rows' d s_h into `dsinks` (sink_grad_f32).
// What it is not: the other modes (cp_gpu.h dispatches), or a benchmark (cplab-bench cp times it).
#pragma once

#include <vector>

#include "attention.h"
#include "comm.h"
#include "cp_spec.h"
#include "cp_work.h"
#include "device_buffer.h"
#include "modes/ring_schedule.h"
#include "stream.h"

namespace cplab::cuda {

struct GpuRingRank {
  // s: the ring's spec (cp.mode() p2p; checked); allocates every buffer (device memory) and copies
  // every tile's mask to the device; `members`: the ring's global ranks in ring order (empty: the
  // whole communicator, position = rank)
  GpuRingRank(const GpuCpSpec& s, Comm& comm, std::vector<int> members = {});
  Comm* comm;
  // when set, the rank's own K, V are read from here (never written) instead of kv_cur, so a
  // forward can be repeated without restoring kv_cur (device memory laid out like kv_cur)
  const std::byte* kv_in = nullptr;
  const std::byte* held = nullptr;  // the KV block the last step computed with (set by the ring)
  std::vector<int> members;  // global rank of each ring position
  std::int64_t pos = 0;      // this rank's position in the ring
  Stream compute, transfer;
  Event computed, received;  // last compute of a step; last receive of a step
  DeviceBuffer<std::byte> q, kv_cur, kv_next, dout, o;
  DeviceBuffer<std::byte> o_part;     // (n, h, dv): one tile's output
  DeviceBuffer<float> lse_part;       // (h, n): one tile's LSE
  DeviceBuffer<float> o_acc, lse;     // (n, h, dv), (h, n)
  DeviceBuffer<float> delta, lse_t, delta_t;  // (h, n): Delta; a tile's rows of LSE and Delta
  DeviceBuffer<float> dq;             // (n, h, d)
  // dK (n, hk, d) then dV (n, hk, dv) of a held block: accumulated so far, arriving, this step's
  DeviceBuffer<float> dkv_acc, dkv_in, dkv_step;
  std::vector<RingTile> fwd_tiles, bwd_tiles;    // per step (H + 1 of them): ring_plan_tile of the held block
  std::vector<DeviceMask> fwd_masks, bwd_masks;  // their masks on the device
  // attention sinks: the logits of the ring's heads (h of the ring's spec) and this rank's rows'
  // d s_h; empty without sinks. Allocated here when s.cp.sinks(); a2a+p2p's rank allocates its
  // ring's (head group a) itself, as the reference's rings take the group's sinks
  DeviceBuffer<float> sinks, dsinks;
};

// The plan of ring position `pos` (host only, no CUDA call): the ring's H + 1 steps (H =
// c.ring_hops(), the reference's) and the tile of the held block at each forward and backward step
// (ring_schedule.h ring_plan_tile of ring_fwd_kv_block / ring_bwd_kv_block over H + 1 steps). What
// GpuRingRank builds and gpu_ring_forward / gpu_ring_backward step through.
struct RingGpuPlan {
  std::int64_t steps = 0;
  std::vector<RingTile> fwd, bwd;
};
RingGpuPlan ring_gpu_plan(const CpSpec& c, std::int64_t pos);

// s: the ring's spec (cp.mode() p2p: cplab::Error otherwise, before any CUDA call).
// kv_in (or, when null, kv_cur) holds the rank's own K, V on entry; on return o and lse are the
// rank's attention output (with the sinks, if any), and `held` the block the backward starts from
// (TE saves it). With
// `times`, the compute of ring step i is recorded as step step0 + i of the i-th driven rank (the
// caller reset()s it).
void gpu_ring_forward(const GpuCpSpec& s, const std::vector<GpuRingRank*>& ranks, CpWork work = CpWork::all,
                      TileTimes* times = nullptr, std::int64_t step0 = 0);
// after gpu_ring_forward on the same ranks, with dout set: dq and dkv_acc (dK then dV of the
// rank's own block) on return, and dsinks (this rank's rows' d s_h) when the ring has sinks
void gpu_ring_backward(const GpuCpSpec& s, const std::vector<GpuRingRank*>& ranks, CpWork work = CpWork::all,
                       TileTimes* times = nullptr, std::int64_t step0 = 0);

}  // namespace cplab::cuda
