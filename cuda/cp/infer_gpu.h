// infer_gpu.h: inference CP (issue 37) on GPU ranks: pass-KV, pass-Q, pass-Q ring decode and
// all-gather-Q decode, the GPU twins of reference/infer/infer_attention.h's variants.
//
// What it is: GpuInferSpec (the reference's InferSpec, validated when it was built, plus the GPU's
// dtype and kernel), GpuInferRank (one rank's device buffers, streams and tile masks) and
// gpu_infer_forward, which drives the given ranks (all N of a LocalWorld, or this thread's one rank
// under NCCL) through rank r's plan (infer_gpu_plan.h: the reference's ownership, token masks and
// ring order). Per variant (Yang et al., arXiv 2411.01783; vLLM's decode context parallelism):
//   p2p (pass-KV)   N steps: the held K|V block (padded to Mkv rows) goes to r+1 on the transfer
//                   stream while the compute stream runs the rank's queries against it and merges
//                   the tile's (O, LSE) into an fp32 accumulator (merge.h merge_streaming)
//   pass-q,         N steps: the held Q block (padded to Mq rows) goes to r+1 while the rank runs it
//   decode-pass-q   against its own K|V; the tile's partial (O of the dtype, LSE fp32) stays in the
//                   slot of the block's owner; then one all-to-all (Comm::all_to_all) returns every
//                   slot to its owner, who merges the N partials with their LSE (merge_streaming)
//   decode-ag       all-gather every Q block (Comm::all_gather, Mq rows each), one tile per owner
//                   against the rank's own K|V, then the same all-to-all and merge as pass-Q
// Attention sinks (spec.sinks()): applied once per row by the owner on its final merged (O, LSE)
// (sink_kernels.h apply_sinks_f32), as the reference does. The output is cast to the dtype last.
// Tensors per rank r (n_r = |q_rows(r)| real rows of Mq, m_r = |kv_rows(r)| real rows of Mkv,
// each in the rank's ascending row order, the rows beyond the real ones never read):
//   q  (Mq, h, d) dtype            the rank's new tokens
//   kv K (Mkv, hk, d) then V (Mkv, hk, dv), dtype: its cache shard and new tokens (KV space order)
//   o  (Mq, h, dv) dtype           output, first n_r rows
//   lse (h, n_r) fp32              output (natural log; -inf and O = 0 for a row that sees no key)
// What it is not: a backward (inference has none), a timing (cplab-bench cp times it), or the
// choice of variant (cplab plan).
#pragma once

#include <vector>

#include "attention.h"
#include "comm.h"
#include "cp_work.h"
#include "device_buffer.h"
#include "infer/infer_spec.h"
#include "infer_gpu_plan.h"
#include "stream.h"

namespace cplab::cuda {

struct GpuInferSpec {
  InferSpec spec;  // the inference step, valid by construction
  DType dtype = DType::bf16;
  Kernel kernel = Kernel::v2;

  // the GPU's rules (cplab::Error naming the rule): check_supported(kernel, dtype, tile_dims())
  void check() const;
  // the largest tile: a Q block (Mq rows, or all T with decode-ag's gather) x a KV shard (Mkv rows)
  AttnDims tile_dims() const;
  float kernel_scale() const { return static_cast<float>(spec.scale()); }
};

// "mode=pass-q N=8 T=... P=... dtype=bf16 kernel=v2 ...", as ranks compare it (Comm::check_same_config)
std::string describe(const GpuInferSpec& s);

struct GpuInferRank {
  GpuInferRank(const GpuInferSpec& s, Comm& comm);  // s.check(), the plan, then allocates
  Comm* comm;
  std::int64_t r = 0;         // this rank
  std::int64_t n = 0, m = 0;  // its real query rows n_r and KV rows m_r
  InferGpuPlan plan;          // its tiles (infer_gpu_plan.h)
  Stream compute, transfer;
  Event computed, received;
  DeviceBuffer<std::byte> q, kv, o;        // inputs and output (see the header comment)
  DeviceBuffer<float> lse, o_acc;          // (h, n_r) output; (Mq, h, dv) fp32 accumulator
  DeviceBuffer<std::byte> blk_cur, blk_next;  // the travelling block: K|V (pass-KV) or Q (pass-Q)
  DeviceBuffer<std::byte> o_part;          // pass-KV: one tile's O (Mq, h, dv) dtype
  DeviceBuffer<float> lse_part;            // pass-KV: one tile's LSE (h, n_r)
  DeviceBuffer<std::byte> gathered;        // decode-ag: N Q blocks (N, Mq, h, d)
  // pass-Q, decode: N slots of [O (Mq, h, dv) dtype | LSE (h, Mq) fp32], each part 16-byte aligned: slot j
  // the partial of owner j's queries (parts, sent), or of this rank's queries computed by rank j
  // (back, received)
  DeviceBuffer<std::byte> parts, back;
  std::size_t slot_bytes = 0, slot_lse = 0;  // a slot's size, and where its LSE starts
  std::vector<DeviceMask> masks;           // plan.tiles' masks (an empty tile's is unused)
  DeviceBuffer<float> sinks;               // (h) fp32 sink logits; empty without sinks

  // every query head's sink logit (h of them), before the forward; without a call the spec's
  // sink_logits are used, or zeros
  void set_sinks(const std::vector<float>& logits);
  // bytes of the block one ring step posts (pass-KV: Mkv rows of K|V; pass-Q: Mq rows of Q; 0 for
  // decode-ag), the gather's block, and an all-to-all slot: what the closed forms count
  std::size_t ring_block_bytes() const { return ring_bytes_; }

 private:
  std::size_t ring_bytes_ = 0;
};

// q and kv set on every driven rank: o and lse on return, once the compute streams are synchronized
// (times: reset to spec.steps() x ranks.size(); tile compute recorded at the trace's step numbers)
void gpu_infer_forward(const GpuInferSpec& s, const std::vector<GpuInferRank*>& ranks, CpWork work = CpWork::all,
                       TileTimes* times = nullptr);

}  // namespace cplab::cuda
