// ring_gpu.cpp: the GPU ring (see ring_gpu.h), step by step from reference/ring_schedule.h.
#include "ring_gpu.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "error.h"

namespace cplab::cuda {

namespace {

std::size_t es(const GpuRingSpec& s) { return dtype_size(s.dtype); }
std::size_t kv_elems(const GpuRingSpec& s) { return static_cast<std::size_t>(s.n() * s.hk * (s.d + s.dv)); }
template <class T>
T* at(DeviceBuffer<T>& b, std::size_t off) {
  return b.data() + off;
}
std::byte* bytes_at(DeviceBuffer<std::byte>& b, std::int64_t elems, const GpuRingSpec& s) {
  return b.data() + static_cast<std::size_t>(elems) * es(s);
}

// rows [r0, r0 + m) of every head of x (h, n) fp32 -> y (h, m)
void copy_rows(float* y, const float* x, std::int64_t h, std::int64_t n, std::int64_t r0, std::int64_t m, cudaStream_t st) {
  CPLAB_CUDA_CHECK(cudaMemcpy2DAsync(y, static_cast<std::size_t>(m) * sizeof(float), x + r0, static_cast<std::size_t>(n) * sizeof(float),
                                     static_cast<std::size_t>(m) * sizeof(float), static_cast<std::size_t>(h), cudaMemcpyDeviceToDevice, st));
}

const std::byte* held_at(const GpuRingRank& x, std::int64_t elems, const GpuRingSpec& s) {
  return x.held + static_cast<std::size_t>(elems) * es(s);
}

// the global rank of ring position p
int peer(const GpuRingRank& x, std::int64_t p) { return x.members[static_cast<std::size_t>(p)]; }

// After EVERY driven rank has posted its step's transfers: `received` marks them on each transfer
// stream. Not inside the posting loop: LocalComm enqueues a pair's copy (on the receiver's stream)
// and the sender's wait for it only when the second half is posted, which for rank 0's receive
// from rank P-1 is later in the same loop (local_comm.h, THE RULE). Under NCCL (one driven rank per
// thread) group_end() has enqueued everything already, so this is the same as recording there.
void mark_received(const std::vector<GpuRingRank*>& ranks) {
  for (GpuRingRank* x : ranks) x->received.record(x->transfer.get());
}

}  // namespace

Partition GpuRingSpec::partition() const {
  return packed() ? Partition(layout, packing.cu_seqlens_padded, P) : Partition(layout, seq, P);
}

void GpuRingSpec::check() const {
  if (packed()) {
    check_cu_seqlens(packing.cu_seqlens);
    check_cu_seqlens(packing.cu_seqlens_padded);
    require(packing.total() == seq, "seq " + std::to_string(seq) + " disagrees with the packed total " + std::to_string(packing.total()));
  }
  (void)partition();  // the layout's divisibility rules, per packed sequence
  check_supported(kernel, dtype, AttnDims{seq / P, seq / P, h, hk, d, dv});
}

GpuRingRank::GpuRingRank(const GpuRingSpec& s, Comm& c, std::vector<int> ring)
    : comm(&c),
      members(std::move(ring)),
      q(static_cast<std::size_t>(s.n() * s.h * s.d) * dtype_size(s.dtype)),
      kv_cur(kv_elems(s) * dtype_size(s.dtype)),
      kv_next(kv_elems(s) * dtype_size(s.dtype)),
      dout(static_cast<std::size_t>(s.n() * s.h * s.dv) * dtype_size(s.dtype)),
      o(static_cast<std::size_t>(s.n() * s.h * s.dv) * dtype_size(s.dtype)),
      o_part(static_cast<std::size_t>(s.n() * s.h * s.dv) * dtype_size(s.dtype)),
      lse_part(static_cast<std::size_t>(s.h * s.n())),
      o_acc(static_cast<std::size_t>(s.n() * s.h * s.dv)),
      lse(static_cast<std::size_t>(s.h * s.n())),
      delta(static_cast<std::size_t>(s.h * s.n())),
      lse_t(static_cast<std::size_t>(s.h * s.n())),
      delta_t(static_cast<std::size_t>(s.h * s.n())),
      dq(static_cast<std::size_t>(s.n() * s.h * s.d)),
      dkv_acc(kv_elems(s)),
      dkv_in(kv_elems(s)),
      dkv_step(kv_elems(s)) {
  if (members.empty())
    for (int r = 0; r < c.size(); ++r) members.push_back(r);
  require(static_cast<std::int64_t>(members.size()) == s.P, "the ring has " + std::to_string(members.size()) +
                                                                 " members, the spec P = " + std::to_string(s.P));
  const auto me = std::find(members.begin(), members.end(), c.rank());
  require(me != members.end(), "rank " + std::to_string(c.rank()) + " is not a member of its ring");
  pos = me - members.begin();
  const Partition part = s.partition();
  const Packing* packing = s.packed() ? &s.packing : nullptr;
  for (std::int64_t i = 0; i < s.P; ++i) {
    fwd_tiles.push_back(ring_plan_tile(part, packing, s.causal, pos, ring_fwd_kv_block(s.P, pos, i)));
    bwd_tiles.push_back(ring_plan_tile(part, packing, s.causal, pos, ring_bwd_kv_block(s.P, pos, i)));
  }
  for (const RingTile& t : fwd_tiles) fwd_masks.emplace_back(t.mask, t.nq);
  for (const RingTile& t : bwd_tiles) bwd_masks.emplace_back(t.mask, t.nq);
}

void gpu_ring_forward(const GpuRingSpec& s, const std::vector<GpuRingRank*>& ranks, CpWork work, TileTimes* times,
                      std::int64_t step0) {
  s.check();
  const Nvtx range("ring forward");
  const std::int64_t P = s.P, n = s.n();
  const std::vector<float> ninf(static_cast<std::size_t>(s.h * n), -INFINITY);
  for (GpuRingRank* x : ranks) {
    require(static_cast<std::int64_t>(x->members.size()) == P, "a rank's ring has " + std::to_string(x->members.size()) +
                                                                   " members, the spec P = " + std::to_string(P));
    CPLAB_CUDA_CHECK(cudaMemsetAsync(x->o_acc.data(), 0, x->o_acc.size() * sizeof(float), x->compute.get()));
    CPLAB_CUDA_CHECK(cudaMemcpyAsync(x->lse.data(), ninf.data(), ninf.size() * sizeof(float), cudaMemcpyHostToDevice, x->compute.get()));
    x->computed.record(x->compute.get());
    x->held = x->kv_in ? x->kv_in : x->kv_cur.data();
  }
  const std::size_t kv_bytes = kv_elems(s) * es(s);
  for (std::int64_t i = 0; i < P; ++i) {
    const Nvtx step_range("forward step " + std::to_string(i));
    const RingPost post = ring_fwd_post(P, i);
    if (post.posts && does_comm(work))
      for (GpuRingRank* x : ranks) {  // the held block travels to r+1 while this step computes
        const std::int64_t r = x->pos;
        x->computed.wait_on(x->transfer.get());  // kv_next was last read by the previous step
        x->comm->group_start();
        x->comm->send(x->held, kv_bytes, peer(*x, ring_fwd_dst(P, r)), x->transfer.get());
        x->comm->recv(x->kv_next.data(), kv_bytes, peer(*x, ring_fwd_src(P, r)), x->transfer.get());
        x->comm->group_end();
      }
    if (post.posts && does_comm(work)) mark_received(ranks);
    for (std::size_t xi = 0; xi < ranks.size(); ++xi) {
      GpuRingRank* x = ranks[xi];
      const RingTile& t = x->fwd_tiles[static_cast<std::size_t>(i)];
      if (!t.skipped && does_compute(work)) {
        const DeviceMask& m = x->fwd_masks[static_cast<std::size_t>(i)];
        cudaStream_t st = x->compute.get();
        if (times) times->start(step0 + i, xi, st);
        attention_forward(s.kernel, s.dtype, AttnDims{t.nq, t.nk, s.h, s.hk, s.d, s.dv}, bytes_at(x->q, t.q0 * s.h * s.d, s),
                          held_at(*x, t.k0 * s.hk * s.d, s), held_at(*x, n * s.hk * s.d + t.k0 * s.hk * s.dv, s),
                          m.rule(), s.scale, x->o_part.data(), x->lse_part.data(), st);
        merge_streaming(s.dtype, n, s.h, s.dv, x->o_acc.data(), x->lse.data(), t.q0, t.nq, x->o_part.data(), x->lse_part.data(), st);
        if (times) times->stop(step0 + i, xi, st);
      }
      x->computed.record(x->compute.get());
    }
    if (post.posts && does_comm(work))
      for (GpuRingRank* x : ranks) {
        x->received.wait_on(x->compute.get());
        std::swap(x->kv_cur, x->kv_next);
        x->held = x->kv_cur.data();
      }
  }
  for (GpuRingRank* x : ranks) {
    cast_from_f32(s.dtype, x->o_acc.data(), x->o.data(), n * s.h * s.dv, x->compute.get());
    x->computed.record(x->compute.get());
  }
}

void gpu_ring_backward(const GpuRingSpec& s, const std::vector<GpuRingRank*>& ranks, CpWork work, TileTimes* times,
                       std::int64_t step0) {
  s.check();
  const Nvtx range("ring backward");
  const std::int64_t P = s.P, n = s.n();
  const std::size_t kv_bytes = kv_elems(s) * es(s), dkv_bytes = kv_elems(s) * sizeof(float);
  for (GpuRingRank* x : ranks) {
    require(x->held != nullptr, "gpu_ring_backward needs gpu_ring_forward on the same ranks first");
    cudaStream_t st = x->compute.get();
    softmax_delta(s.dtype, n, s.h, s.dv, x->o.data(), x->dout.data(), x->delta.data(), st);
    for (DeviceBuffer<float>* b : {&x->dq, &x->dkv_acc, &x->dkv_in})
      CPLAB_CUDA_CHECK(cudaMemsetAsync(b->data(), 0, b->size() * sizeof(float), st));
    x->computed.record(st);
  }
  for (std::int64_t i = 0; i < P; ++i) {
    const Nvtx step_range("backward step " + std::to_string(i));
    const RingPost post = ring_bwd_post(P, i);
    const bool transfer = post.posts && does_comm(work);
    if (transfer)
      for (GpuRingRank* x : ranks) {  // K, V and/or the dK, dV accumulated so far travel to r-1
        const int dst = peer(*x, ring_bwd_dst(P, x->pos)), src = peer(*x, ring_bwd_src(P, x->pos));
        x->computed.wait_on(x->transfer.get());
        x->comm->group_start();
        if (post.kv) x->comm->send(x->held, kv_bytes, dst, x->transfer.get());
        if (post.dkv) x->comm->send(x->dkv_acc.data(), dkv_bytes, dst, x->transfer.get());
        if (post.kv) x->comm->recv(x->kv_next.data(), kv_bytes, src, x->transfer.get());
        if (post.dkv) x->comm->recv(x->dkv_in.data(), dkv_bytes, src, x->transfer.get());
        x->comm->group_end();
      }
    if (transfer) mark_received(ranks);
    for (std::size_t xi = 0; xi < ranks.size(); ++xi) {
      GpuRingRank* x = ranks[xi];
      const RingTile& t = x->bwd_tiles[static_cast<std::size_t>(i)];
      cudaStream_t st = x->compute.get();
      CPLAB_CUDA_CHECK(cudaMemsetAsync(x->dkv_step.data(), 0, x->dkv_step.size() * sizeof(float), st));
      if (!t.skipped && does_compute(work)) {
        const DeviceMask& m = x->bwd_masks[static_cast<std::size_t>(i)];
        if (times) times->start(step0 + i, xi, st);
        copy_rows(x->lse_t.data(), x->lse.data(), s.h, n, t.q0, t.nq, st);
        copy_rows(x->delta_t.data(), x->delta.data(), s.h, n, t.q0, t.nq, st);
        attention_backward(s.kernel, s.dtype, AttnDims{t.nq, t.nk, s.h, s.hk, s.d, s.dv}, bytes_at(x->q, t.q0 * s.h * s.d, s),
                           held_at(*x, t.k0 * s.hk * s.d, s), held_at(*x, n * s.hk * s.d + t.k0 * s.hk * s.dv, s),
                           bytes_at(x->dout, t.q0 * s.h * s.dv, s), x->lse_t.data(), x->delta_t.data(), m.rule(), s.scale,
                           at(x->dq, static_cast<std::size_t>(t.q0 * s.h * s.d)),
                           at(x->dkv_step, static_cast<std::size_t>(t.k0 * s.hk * s.d)),
                           at(x->dkv_step, static_cast<std::size_t>(n * s.hk * s.d + t.k0 * s.hk * s.dv)), st);
        if (times) times->stop(step0 + i, xi, st);
      }
      x->computed.record(st);
    }
    for (GpuRingRank* x : ranks) {
      cudaStream_t st = x->compute.get();
      if (transfer) x->received.wait_on(st);
      // the held block's dK, dV so far: what arrived (zero when nothing did) plus this step's
      if (!post.dkv || !transfer) CPLAB_CUDA_CHECK(cudaMemsetAsync(x->dkv_in.data(), 0, dkv_bytes, st));
      accumulate_f32(x->dkv_in.data(), x->dkv_step.data(), static_cast<std::int64_t>(kv_elems(s)), st);
      x->computed.record(st);
      std::swap(x->dkv_acc, x->dkv_in);  // the old accumulator (sent this step) is the next receive buffer
      if (post.kv && transfer) {
        std::swap(x->kv_cur, x->kv_next);
        x->held = x->kv_cur.data();
      }
    }
  }
}

}  // namespace cplab::cuda
