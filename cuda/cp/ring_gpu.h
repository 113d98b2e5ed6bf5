// ring_gpu.h: ring (p2p) context-parallel attention on GPU ranks, forward and backward.
//
// What it is: the GPU twin of reference/ring_p2p.h, driven by the SAME schedule
// (reference/ring_schedule.h: which KV block each rank holds at each step, which tile of it under
// which mask, what is posted where), the kernels of cuda/attention.h and a Comm (cuda/comm/comm.h:
// LocalComm virtual ranks on one GPU, or NcclComm). Per rank, two streams: compute and
// communication. At a forward step a rank posts its held KV block to r+1 and receives the next
// one from r-1 on the communication stream while the compute stream runs the step's tile and
// merges it into an fp32 (O, LSE) accumulator (double-buffered KV; the receive into a buffer waits
// for the compute that last read it). The backward sends K, V and the fp32 dK/dV accumulated so far
// to r-1 (TE's order) while computing the held block's tile; dQ accumulates in place.
// Tensors are the rank's local order of the layout (reference/layout.h Partition::indices):
// q (n, h, d), kv = K (n, hk, d) then V (n, hk, dv), dout (n, h, dv) of the dtype; o the same
// dtype; lse (h, n), dq (n, h, d), dkv = dK then dV, fp32.
// The driving code issues every rank it owns step by step (all P for a LocalWorld, its one rank
// under NCCL): gpu_ring_forward / gpu_ring_backward take those ranks.
// What it is not: THD (packed) sequences yet, or a benchmark (cplab-bench cp times it).
#pragma once

#include <vector>

#include "attention.h"
#include "comm.h"
#include "device_buffer.h"
#include "layout_index.h"
#include "stream.h"

namespace cplab::cuda {

struct GpuRingSpec {
  Layout layout = Layout::zigzag;
  bool causal = true;
  std::int64_t P = 1, seq = 0;            // ranks, global tokens (n = seq / P per rank)
  std::int64_t h = 1, hk = 1, d = 64, dv = 64;
  DType dtype = DType::bf16;
  Kernel kernel = Kernel::v2;
  float scale = 0.125f;
  std::int64_t n() const { return seq / P; }
  // the layout's rules (check_partition) and the kernel's (check_supported); cplab::Error
  void check() const;
};

struct GpuRingRank {
  GpuRingRank(const GpuRingSpec& s, Comm& comm);  // allocates every buffer (device memory)
  Comm* comm;
  Stream compute, transfer;
  Event computed, received;  // last compute of a step; last receive of a step
  DeviceBuffer<std::byte> q, kv_cur, kv_next, dout, o;
  DeviceBuffer<std::byte> o_part;     // (n, h, dv): one tile's output
  DeviceBuffer<float> lse_part;       // (h, n): one tile's LSE
  DeviceBuffer<float> o_acc, lse;     // (n, h, dv), (h, n)
  DeviceBuffer<float> delta, lse_t, delta_t;  // (h, n): Delta; a tile's rows of LSE and Delta
  DeviceBuffer<float> dq, dkv_acc, dkv_in, dkv_step;
};

// What a run does, for benchmarks: everything, or only its tiles (and merges), or only its
// transfers (the fraction of communication hidden behind compute is read from the three times).
// Only `all` computes attention; the others leave the outputs meaningless.
enum class RingWork { all, compute_only, comm_only };

// Optional per-tile GPU timing: when given, the start and end of every tile of every driven rank
// are recorded on its compute stream; after a device synchronize, ms(step, i) is the i-th driven
// rank's tile time at that step (0 for a skipped tile). Events are created on first use.
class RingTileTimes {
 public:
  void reset(std::int64_t steps, std::size_t ranks);
  void start(std::int64_t step, std::size_t i, cudaStream_t s);
  void stop(std::int64_t step, std::size_t i, cudaStream_t s);
  double ms(std::int64_t step, std::size_t i) const;  // synchronizes on the stop event
  ~RingTileTimes();

 private:
  std::size_t ranks_ = 0;
  std::vector<cudaEvent_t> start_, stop_;
  std::vector<char> used_;
};

// kv_cur holds the rank's own K, V on entry; on return o and lse are the rank's attention output,
// and kv_cur the block the backward starts from (TE saves it)
void gpu_ring_forward(const GpuRingSpec& s, const std::vector<GpuRingRank*>& ranks, RingWork work = RingWork::all,
                      RingTileTimes* times = nullptr);
// after gpu_ring_forward on the same ranks, with dout set: dq and dkv_acc (dK then dV of the
// rank's own block) on return
void gpu_ring_backward(const GpuRingSpec& s, const std::vector<GpuRingRank*>& ranks, RingWork work = RingWork::all,
                       RingTileTimes* times = nullptr);

}  // namespace cplab::cuda
