// cp_spec.h: GpuCpSpec, one context-parallel attention layer to run on GPU ranks: the CPU
// reference's RunSpec (mode, layout, sizes, causal, packed sequences, hierarchical sizes) plus the
// GPU's dtype and kernel.
//
// What it is: the one description every GPU mode (ring_gpu.h, allgather_gpu.h, ulysses_gpu.h,
// hcp_gpu.h), the facade cp_gpu.h and cplab-bench cp read. check() applies the reference's own
// rules (experiment.h validate_rules: the one definition of what each mode accepts) and then the
// GPU's: the kernel must support the mode's tiles (check_supported), no --replicate-kv, streaming
// merges. Tensors on every rank are in the data layout of partition() (layout.h), as in the
// reference: q (n, h, d), kv = K (n, hk, d) then V (n, hk, dv), dout and o (n, h, dv) of the
// dtype; lse fp32; dq (n, h, d) and dkv = dK then dV fp32. Gradients travel in fp32 in every mode
// (the ring's dK/dV accumulate as they travel; all-gather reduce-scatters, a2a returns them).
// What it is not: the CPU reference's limits (memory, kMaxCpuFlops) or a run.
#pragma once

#include <cstdint>

#include "attention.h"
#include "comm.h"
#include "device_buffer.h"
#include "experiment.h"
#include "layout.h"
#include "ring_gpu.h"

namespace cplab::cuda {

struct GpuCpSpec {
  RunSpec run;  // run.dtype (the reference's float/double) plays no role on the GPU
  DType dtype = DType::bf16;
  Kernel kernel = Kernel::v2;

  void check() const;  // cplab::Error naming the rule
  Partition partition() const { return Partition(run.layout, run.packing().cu_seqlens_padded, run.cp); }
  std::int64_t P() const { return run.cp; }
  std::int64_t S() const { return run.seq; }
  std::int64_t n() const { return run.seq / run.cp; }
  std::int64_t h() const { return run.heads; }
  std::int64_t hk() const { return run.kv_heads; }
  std::int64_t d() const { return run.head_dim; }
  std::int64_t dv() const { return run.dv(); }
  float scale() const { return static_cast<float>(run.softmax_scale()); }
  // the packing token masks use (Packing::single(S) when unpacked), and whether the run is packed
  // (several sequences or padding): the reference's CpConfig::tokens() / packed()
  Packing tokens() const { return run.packing(); }
  bool packed() const;
  // the ring of --mode p2p (all cp ranks), and the outer rings of a2a+p2p (ocp ranks, heads / icp)
  GpuRingSpec ring() const;
  GpuRingSpec hcp_ring() const;
  // steps of the reference's trace (trace_plan.h numbering), forward and backward: TileTimes sizes
  std::int64_t fwd_steps() const;
  std::int64_t bwd_steps() const;
};

// A rank's tensors in its data layout (partition()): inputs q (n, h, d), kv = K (n, hk, d) then
// V (n, hk, dv), dout (n, h, dv) of the dtype; outputs o (n, h, dv) of the dtype, dq (n, h, d) and
// dkv = dK then dV, fp32. The base of the all-gather, a2a and a2a+p2p ranks (the ring keeps its own).
struct RankIO {
  explicit RankIO(const GpuCpSpec& s);  // s.check(), then allocates
  DeviceBuffer<std::byte> q, kv, dout, o;
  DeviceBuffer<float> dq, dkv;
};

// the spec, as its ranks compare it across processes (Comm::check_same_config)
std::string describe(const GpuCpSpec& s);


}  // namespace cplab::cuda
