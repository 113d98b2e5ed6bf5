// cp_gpu.h: "attention with CP mode M" on GPU ranks: one rank type and one forward / backward for
// every mode, the GPU twin of reference/modes/cp_attention.h.
//
// What it is: GpuCpRank, one rank of a GpuCpSpec (cp_spec.h) on a Comm: it builds the mode's rank
// (GpuRingRank for p2p, GpuAgRank, GpuUlyssesRank, GpuHcpRank: a switch on s.cp.mode()) and gives
// uniform access to the inputs and outputs in the rank's data layout; gpu_cp_forward /
// gpu_cp_backward drive the driven ranks (all P of a LocalWorld, or this thread's one rank under
// NCCL) through the mode.
// Where the LSE lives follows the mode, as in the reference: in the data layout (h, n) for p2p and
// allgather; head-sharded for a2a (this rank's h/P heads of all S tokens, sequence order) and
// a2a+p2p (this rank's h/icp heads of its ring position's S/ocp tokens, outer zigzag order).
// lse_in_data_layout() says which; the reference's lse_in_place reassembles the head-sharded ones.
// Attention sinks: set_sinks hands the logits to the mode's rank, dsinks() reads this rank's part
// of their gradient (each mode applies a sink once per row: ring_gpu.h, allgather_gpu.h, ...).
// What it is not: a timing (cplab-bench cp) or the choice of a mode (cplab plan).
#pragma once

#include <memory>
#include <vector>

#include "allgather_gpu.h"
#include "cp_spec.h"
#include "hcp_gpu.h"
#include "ring_gpu.h"
#include "ulysses_gpu.h"

namespace cplab::cuda {

class GpuCpRank {
 public:
  GpuCpRank(const GpuCpSpec& s, Comm& comm);  // s.check(), then allocates the mode's rank
  ~GpuCpRank();
  GpuCpRank(const GpuCpRank&) = delete;
  GpuCpRank& operator=(const GpuCpRank&) = delete;

  // inputs, dtype, set before the forward: q (n, h, d), kv = K (n, hk, d) then V (n, hk, dv);
  // before the backward: dout (n, h, dv). They are never overwritten, so a run can be repeated.
  std::byte* q();
  std::byte* kv();
  std::byte* dout();
  // outputs: o (n, h, dv) dtype, lse fp32 (see the header comment), after the forward;
  // dq (n, h, d) and dkv = dK (n, hk, d) then dV (n, hk, dv), fp32, after the backward
  const std::byte* o() const;
  const float* lse() const;
  // true for the ring (p2p) and all-gather ranks; the all-to-all modes keep it head-sharded
  bool lse_in_data_layout() const { return ring_ || ag_; }
  const float* dq() const;
  const float* dkv() const;
  // attention sinks (s.cp.sinks()): every query head's logit (h of them), before the forward; the
  // rank keeps the heads it computes (all of them, or its head group under a2a and a2a+p2p).
  // Without a call the spec's sink_logits are used, or zeros when it has none
  void set_sinks(const std::vector<float>& logits);
  // after the backward, with the rank's streams synchronized: this rank's rows' part of d s_h for
  // every query head (0 for the heads it does not compute); the ranks' parts add up to d s_h
  std::vector<double> dsinks();
  Comm& comm() { return *comm_; }
  // the streams this rank's work runs on (the outputs are complete once they are synchronized)
  std::vector<cudaStream_t> streams();

  GpuRingRank* ring() { return ring_.get(); }
  GpuAgRank* allgather() { return ag_.get(); }
  GpuUlyssesRank* ulysses() { return uly_.get(); }
  GpuHcpRank* hcp() { return hcp_.get(); }

 private:
  Comm* comm_;
  DeviceBuffer<std::byte> kv_;  // p2p: the rank's own K|V (the ring reads it through kv_in)
  std::unique_ptr<GpuRingRank> ring_;
  std::unique_ptr<GpuAgRank> ag_;
  std::unique_ptr<GpuUlyssesRank> uly_;
  std::unique_ptr<GpuHcpRank> hcp_;  // one of the four is set: the spec's mode (its rank type)
  RankIO* io_ = nullptr;  // the data-layout tensors of ag_, uly_ or hcp_
  std::int64_t h_ = 0;    // the spec's query heads
  bool sinks_ = false;    // the spec's sinks()
  // the mode rank's sink buffers and the first query head they hold
  struct SinkSlot {
    DeviceBuffer<float>* sinks;
    DeviceBuffer<float>* ds;
    std::int64_t head0;
  };
  SinkSlot sink_slot();
};

// every driven rank through the mode (TileTimes: reset to s.cp.fwd_steps() / s.cp.bwd_steps() steps
// x ranks.size() here; steps numbered as in the reference's trace: the mode table's step counts)
void gpu_cp_forward(const GpuCpSpec& s, const std::vector<GpuCpRank*>& ranks, CpWork work = CpWork::all,
                    TileTimes* times = nullptr);
void gpu_cp_backward(const GpuCpSpec& s, const std::vector<GpuCpRank*>& ranks, CpWork work = CpWork::all,
                     TileTimes* times = nullptr);

}  // namespace cplab::cuda
