// ring_gpu.cpp: the GPU ring (see ring_gpu.h), step by step from reference/modes/ring_schedule.h.
#include "ring_gpu.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "core/error.h"
#include "core/util.h"

namespace cplab::cuda {

namespace {

std::size_t es(const GpuCpSpec& s) { return dtype_size(s.dtype); }
// K then V of one block: n tokens, hk heads, d + dv elements
std::size_t kv_elems(const CpSpec& c) { return sz(c.n() * c.hk() * (c.d() + c.dv())); }
template <class T>
T* at(DeviceBuffer<T>& b, std::size_t off) {
  return b.data() + off;
}
std::byte* bytes_at(DeviceBuffer<std::byte>& b, std::int64_t elems, const GpuCpSpec& s) {
  return b.data() + sz(elems) * es(s);
}

// rows [r0, r0 + m) of every head of x (h, n) fp32 -> y (h, m)
void copy_rows(float* y, const float* x, std::int64_t h, std::int64_t n, std::int64_t r0, std::int64_t m,
               cudaStream_t st) {
  CPLAB_CUDA_CHECK(cudaMemcpy2DAsync(y, sz(m) * sizeof(float), x + r0, sz(n) * sizeof(float), sz(m) * sizeof(float),
                                     sz(h), cudaMemcpyDeviceToDevice, st));
}

const std::byte* held_at(const GpuRingRank& x, std::int64_t elems, const GpuCpSpec& s) {
  return x.held + sz(elems) * es(s);
}

// the global rank of ring position p
int peer(const GpuRingRank& x, std::int64_t p) { return x.members[sz(p)]; }

// After EVERY driven rank has posted its step's transfers: `received` marks them on each transfer
// stream. Not inside the posting loop: LocalComm enqueues a pair's copy (on the receiver's stream)
// and the sender's wait for it only when the second half is posted, which for rank 0's receive
// from rank P-1 is later in the same loop (local_comm.h, THE RULE). Under NCCL (one driven rank per
// thread) group_end() has enqueued everything already, so this is the same as recording there.
void mark_received(const std::vector<GpuRingRank*>& ranks) {
  for (GpuRingRank* x : ranks) x->received.record(x->transfer.get());
}

// a ring runs a p2p spec (GpuCpSpec::ring()), then the GPU's rules (GpuCpSpec::check)
void check_ring(const GpuCpSpec& s) {
  require(s.cp.mode() == Mode::p2p, "a GPU ring runs a p2p spec (GpuCpSpec::ring()), not --mode " +
                                        to_string(s.cp.mode()));
  s.check();
}
// the rank's communicator, once the spec is checked (before the first CUDA call: the streams)
Comm* checked(const GpuCpSpec& s, Comm& c) {
  check_ring(s);
  return &c;
}

}  // namespace

RingGpuPlan ring_gpu_plan(const CpSpec& c, std::int64_t pos) {
  require(c.mode() == Mode::p2p, "ring_gpu_plan takes a p2p spec (GpuCpSpec::ring()), not --mode " + to_string(c.mode()));
  const std::int64_t P = c.P();
  require(pos >= 0 && pos < P, "ring position " + num(pos) + " is outside the ring of " + num(P));
  const Partition& part = c.partition();
  const Packing* packing = c.packed() ? &c.packing() : nullptr;
  RingGpuPlan plan;
  plan.steps = c.ring_hops() + 1;  // the reference's: ring_schedule.h ring_hops
  for (std::int64_t i = 0; i < plan.steps; ++i) {
    plan.fwd.push_back(ring_plan_tile(part, packing, c.rule(), pos, ring_fwd_kv_block(P, pos, i)));
    plan.bwd.push_back(ring_plan_tile(part, packing, c.rule(), pos, ring_bwd_kv_block(P, pos, i, plan.steps)));
  }
  return plan;
}

GpuRingRank::GpuRingRank(const GpuCpSpec& s, Comm& cm, std::vector<int> ring)
    : comm(checked(s, cm)),
      members(std::move(ring)),
      q(sz(s.cp.n() * s.cp.h() * s.cp.d()) * es(s)),
      kv_cur(kv_elems(s.cp) * es(s)),
      kv_next(kv_elems(s.cp) * es(s)),
      dout(sz(s.cp.n() * s.cp.h() * s.cp.dv()) * es(s)),
      o(sz(s.cp.n() * s.cp.h() * s.cp.dv()) * es(s)),
      o_part(sz(s.cp.n() * s.cp.h() * s.cp.dv()) * es(s)),
      lse_part(sz(s.cp.h() * s.cp.n())),
      o_acc(sz(s.cp.n() * s.cp.h() * s.cp.dv())),
      lse(sz(s.cp.h() * s.cp.n())),
      delta(sz(s.cp.h() * s.cp.n())),
      lse_t(sz(s.cp.h() * s.cp.n())),
      delta_t(sz(s.cp.h() * s.cp.n())),
      dq(sz(s.cp.n() * s.cp.h() * s.cp.d())),
      dkv_acc(kv_elems(s.cp)),
      dkv_in(kv_elems(s.cp)),
      dkv_step(kv_elems(s.cp)),
      sinks(sink_buffer(s.cp, 0, s.cp.h())),
      dsinks(sinks.size()) {
  const CpSpec& c = s.cp;
  const std::int64_t P = c.P();
  if (members.empty())
    for (int r = 0; r < comm->size(); ++r) members.push_back(r);
  require(static_cast<std::int64_t>(members.size()) == P,
          "the ring has " + std::to_string(members.size()) + " members, the spec P = " + num(P));
  const auto me = std::find(members.begin(), members.end(), comm->rank());
  require(me != members.end(), "rank " + std::to_string(comm->rank()) + " is not a member of its ring");
  pos = me - members.begin();
  RingGpuPlan plan = ring_gpu_plan(c, pos);
  fwd_tiles = std::move(plan.fwd);
  bwd_tiles = std::move(plan.bwd);
  for (const RingTile& t : fwd_tiles) fwd_masks.emplace_back(t.mask, t.nq);
  for (const RingTile& t : bwd_tiles) bwd_masks.emplace_back(t.mask, t.nq);
}

void gpu_ring_forward(const GpuCpSpec& s, const std::vector<GpuRingRank*>& ranks, CpWork work, TileTimes* times,
                      std::int64_t step0) {
  check_ring(s);
  const Nvtx range("ring forward");
  const CpSpec& c = s.cp;
  const std::int64_t P = c.P(), n = c.n(), h = c.h(), hk = c.hk(), d = c.d(), dv = c.dv();
  const float scale = s.kernel_scale();
  for (GpuRingRank* x : ranks) {
    require(static_cast<std::int64_t>(x->members.size()) == P,
            "a rank's ring has " + std::to_string(x->members.size()) + " members, the spec P = " + num(P));
    CPLAB_CUDA_CHECK(cudaMemsetAsync(x->o_acc.data(), 0, x->o_acc.size() * sizeof(float), x->compute.get()));
    fill_f32(x->lse.data(), h * n, -INFINITY, x->compute.get());  // on the device: no pageable host copy
    x->computed.record(x->compute.get());
    x->held = x->kv_in ? x->kv_in : x->kv_cur.data();
  }
  const std::size_t kv_bytes = kv_elems(c) * es(s);
  const std::int64_t steps = c.ring_hops() + 1;  // H hops: fewer than P - 1 when a window or chunk allows
  for (GpuRingRank* x : ranks)
    require(static_cast<std::int64_t>(x->fwd_tiles.size()) == steps,
            "a rank's ring plan has " + num(static_cast<std::int64_t>(x->fwd_tiles.size())) + " steps, the spec's ring " +
                num(steps) + " (the rank was built for another spec)");
  for (std::int64_t i = 0; i < steps; ++i) {
    const Nvtx step_range("forward step " + std::to_string(i));
    const RingPost post = ring_fwd_post(steps, i);
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
      const RingTile& t = x->fwd_tiles[sz(i)];
      if (!t.skipped && does_compute(work)) {
        const DeviceMask& m = x->fwd_masks[sz(i)];
        cudaStream_t st = x->compute.get();
        if (times) times->start(step0 + i, xi, st);
        attention_forward(s.kernel, s.dtype, AttnDims{t.nq, t.nk, h, hk, d, dv}, bytes_at(x->q, t.q0 * h * d, s),
                          held_at(*x, t.k0 * hk * d, s), held_at(*x, n * hk * d + t.k0 * hk * dv, s), m.rule(), scale,
                          x->o_part.data(), x->lse_part.data(), st);
        merge_streaming(s.dtype, n, h, dv, x->o_acc.data(), x->lse.data(), t.q0, t.nq, x->o_part.data(),
                        x->lse_part.data(), st);
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
    // the sink enters each row once, into its final merged result (the reference's ring_forward)
    if (x->sinks.size() > 0 && does_compute(work))
      apply_sinks_f32(n, h, dv, x->o_acc.data(), x->lse.data(), x->sinks.data(), x->compute.get());
    cast_from_f32(s.dtype, x->o_acc.data(), x->o.data(), n * h * dv, x->compute.get());
    x->computed.record(x->compute.get());
  }
}

void gpu_ring_backward(const GpuCpSpec& s, const std::vector<GpuRingRank*>& ranks, CpWork work, TileTimes* times,
                       std::int64_t step0) {
  check_ring(s);
  const Nvtx range("ring backward");
  const CpSpec& c = s.cp;
  const std::int64_t P = c.P(), n = c.n(), h = c.h(), hk = c.hk(), d = c.d(), dv = c.dv();
  const float scale = s.kernel_scale();
  const std::size_t kv_bytes = kv_elems(c) * es(s), dkv_bytes = kv_elems(c) * sizeof(float);
  for (GpuRingRank* x : ranks) {
    require(x->held != nullptr, "gpu_ring_backward needs gpu_ring_forward on the same ranks first");
    cudaStream_t st = x->compute.get();
    softmax_delta(s.dtype, n, h, dv, x->o.data(), x->dout.data(), x->delta.data(), st);
    for (DeviceBuffer<float>* b : {&x->dq, &x->dkv_acc, &x->dkv_in})
      CPLAB_CUDA_CHECK(cudaMemsetAsync(b->data(), 0, b->size() * sizeof(float), st));
    if (x->sinks.size() > 0) {  // d s_h of this rank's rows, from the final (sink-including) LSE and Delta
      CPLAB_CUDA_CHECK(cudaMemsetAsync(x->dsinks.data(), 0, x->dsinks.size() * sizeof(float), st));
      if (does_compute(work)) sink_grad_f32(n, h, x->lse.data(), x->delta.data(), x->sinks.data(), x->dsinks.data(), st);
    }
    x->computed.record(st);
  }
  const std::int64_t steps = c.ring_hops() + 1;
  for (std::int64_t i = 0; i < steps; ++i) {
    const Nvtx step_range("backward step " + std::to_string(i));
    const RingPost post = ring_bwd_post(steps, i);
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
      const RingTile& t = x->bwd_tiles[sz(i)];
      cudaStream_t st = x->compute.get();
      CPLAB_CUDA_CHECK(cudaMemsetAsync(x->dkv_step.data(), 0, x->dkv_step.size() * sizeof(float), st));
      if (!t.skipped && does_compute(work)) {
        const DeviceMask& m = x->bwd_masks[sz(i)];
        if (times) times->start(step0 + i, xi, st);
        copy_rows(x->lse_t.data(), x->lse.data(), h, n, t.q0, t.nq, st);
        copy_rows(x->delta_t.data(), x->delta.data(), h, n, t.q0, t.nq, st);
        attention_backward(s.kernel, s.dtype, AttnDims{t.nq, t.nk, h, hk, d, dv}, bytes_at(x->q, t.q0 * h * d, s),
                           held_at(*x, t.k0 * hk * d, s), held_at(*x, n * hk * d + t.k0 * hk * dv, s),
                           bytes_at(x->dout, t.q0 * h * dv, s), x->lse_t.data(), x->delta_t.data(), m.rule(), scale,
                           at(x->dq, sz(t.q0 * h * d)), at(x->dkv_step, sz(t.k0 * hk * d)),
                           at(x->dkv_step, sz(n * hk * d + t.k0 * hk * dv)), st);
        if (times) times->stop(step0 + i, xi, st);
      }
      x->computed.record(st);
    }
    for (GpuRingRank* x : ranks) {
      cudaStream_t st = x->compute.get();
      if (transfer) x->received.wait_on(st);
      // the held block's dK, dV so far: what arrived (zero when nothing did) plus this step's
      if (!post.dkv || !transfer) CPLAB_CUDA_CHECK(cudaMemsetAsync(x->dkv_in.data(), 0, dkv_bytes, st));
      accumulate_f32(x->dkv_in.data(), x->dkv_step.data(), static_cast<std::int64_t>(kv_elems(c)), st);
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
