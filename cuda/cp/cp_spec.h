// cp_spec.h: GpuCpSpec, one context-parallel attention layer to run on GPU ranks: the CP layer
// (reference/modes/cp_spec.h CpSpec: mode, layout, sizes, mask, scale, packed sequences,
// hierarchical sizes, validated when it was built) plus the GPU's dtype and kernel.
//
// What it is: the one description every GPU mode (ring_gpu.h, allgather_gpu.h, ulysses_gpu.h,
// hcp_gpu.h), the facade cp_gpu.h and cplab-bench cp read. Every CP quantity is read from `cp`
// (s.cp.P(), s.cp.S(), s.cp.partition(), s.cp.packed() ...): nothing here copies or re-derives
// one. What is added is the GPU's own: check() applies the GPU's rules only (the CpSpec's own are
// enforced by its construction): the kernel must support the mode's tiles (check_supported), no
// --replicate-kv, streaming merges. --window, --chunk (as the reference's per-row key ranges) and
// --sinks (once per row: sink_kernels.h) run in every mode with every kernel; tile_dims() is the attention each tile of the mode runs, kernel_scale() the softmax scale
// as the kernels take it (fp32), and ring() the spec of the mode's
// rings (ring_gpu.h: a GPU ring is described by a p2p GpuCpSpec, as the reference's ring by a p2p
// CpSpec). Tensors on every rank are in the data layout of cp.partition() (layout.h), as in the
// reference: q (n, h, d), kv = K (n, hk, d) then V (n, hk, dv), dout and o (n, h, dv) of the
// dtype; lse fp32; dq (n, h, d) and dkv = dK then dV fp32. Gradients travel in fp32 in every mode
// (the ring's dK/dV accumulate as they travel; all-gather reduce-scatters, a2a returns them).
// What it is not: the CPU reference's harness (run/experiment.h RunSpec: its dtype, seed and
// limits play no role here) or a run.
#pragma once

#include <cstdint>
#include <string>

#include "attention.h"
#include "device_buffer.h"
#include "modes/cp_spec.h"

namespace cplab::cuda {

struct GpuCpSpec {
  CpSpec cp;  // the CP layer, valid by construction
  DType dtype = DType::bf16;
  Kernel kernel = Kernel::v2;

  // the GPU's own rules (cplab::Error naming the rule): check_supported(kernel, dtype,
  // tile_dims()), no --replicate-kv, streaming merge
  void check() const;
  // the attention one tile of the mode runs: p2p a local Q block x a held KV block (n x n);
  // allgather local Q x all keys (n x S); a2a all tokens with h/P heads (S x S); a2a+p2p the
  // ring's blocks of S/ocp tokens with h/icp heads
  AttnDims tile_dims() const;
  // cp.scale() (the given scale or 1/sqrt(d)) rounded to fp32, as the kernels take it
  float kernel_scale() const { return static_cast<float>(cp.scale()); }
  // the spec of the mode's rings (p2p over P'): for p2p the spec itself, for a2a+p2p the outer
  // rings' (modes/hierarchical_cp.h hcp_ring_spec: p2p over ocp ranks, h/icp and hk/icp heads);
  // cplab::Error for the modes without a ring
  GpuCpSpec ring() const;
};

// A rank's tensors in its data layout (cp.partition()): inputs q (n, h, d), kv = K (n, hk, d) then
// V (n, hk, dv), dout (n, h, dv) of the dtype; outputs o (n, h, dv) of the dtype, dq (n, h, d) and
// dkv = dK then dV, fp32. The base of the all-gather, a2a and a2a+p2p ranks (the ring keeps its own).
struct RankIO {
  explicit RankIO(const GpuCpSpec& s);  // s.check(), then allocates
  DeviceBuffer<std::byte> q, kv, dout, o;
  DeviceBuffer<float> dq, dkv;
};

// the spec, as its ranks compare it across processes (Comm::check_same_config)
std::string describe(const GpuCpSpec& s);

// Attention sinks on a rank: the logits of query heads [head0, head0 + heads) as fp32 device memory
// (c.fields().sink_logits when given, else zeros until the caller uploads its own: GpuCpRank::set_sinks);
// an empty buffer when the spec has no sinks
DeviceBuffer<float> sink_buffer(const CpSpec& c, std::int64_t head0, std::int64_t heads);

}  // namespace cplab::cuda
