// ring_gpu.cpp: the GPU ring (see ring_gpu.h), step by step from reference/ring_schedule.h.
#include "ring_gpu.h"

#include <cmath>
#include <utility>

#include <nvtx3/nvToolsExt.h>

#include "error.h"
#include "ring_schedule.h"

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

// an NVTX range for Nsight Systems, closed at the end of the scope
struct Nvtx {
  explicit Nvtx(const std::string& name) { nvtxRangePushA(name.c_str()); }
  ~Nvtx() { nvtxRangePop(); }
  Nvtx(const Nvtx&) = delete;
  Nvtx& operator=(const Nvtx&) = delete;
};

}  // namespace

void RingTileTimes::reset(std::int64_t steps, std::size_t ranks) {
  ranks_ = ranks;
  const std::size_t n = static_cast<std::size_t>(steps) * ranks;
  while (start_.size() < n) {
    cudaEvent_t a = nullptr, b = nullptr;
    CPLAB_CUDA_CHECK(cudaEventCreate(&a));
    CPLAB_CUDA_CHECK(cudaEventCreate(&b));
    start_.push_back(a);
    stop_.push_back(b);
  }
  used_.assign(n, 0);
}
void RingTileTimes::start(std::int64_t step, std::size_t i, cudaStream_t s) {
  CPLAB_CUDA_CHECK(cudaEventRecord(start_[static_cast<std::size_t>(step) * ranks_ + i], s));
}
void RingTileTimes::stop(std::int64_t step, std::size_t i, cudaStream_t s) {
  const std::size_t k = static_cast<std::size_t>(step) * ranks_ + i;
  CPLAB_CUDA_CHECK(cudaEventRecord(stop_[k], s));
  used_[k] = 1;
}
double RingTileTimes::ms(std::int64_t step, std::size_t i) const {
  const std::size_t k = static_cast<std::size_t>(step) * ranks_ + i;
  if (k >= used_.size() || !used_[k]) return 0;
  CPLAB_CUDA_CHECK(cudaEventSynchronize(stop_[k]));
  float ms = 0;
  CPLAB_CUDA_CHECK(cudaEventElapsedTime(&ms, start_[k], stop_[k]));
  return ms;
}
RingTileTimes::~RingTileTimes() {
  for (cudaEvent_t e : start_) (void)cudaEventDestroy(e);
  for (cudaEvent_t e : stop_) (void)cudaEventDestroy(e);
}

void GpuRingSpec::check() const {
  check_partition(layout, seq, P);
  check_supported(kernel, dtype, AttnDims{seq / P, seq / P, h, hk, d, dv});
}

GpuRingRank::GpuRingRank(const GpuRingSpec& s, Comm& c)
    : comm(&c),
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
      dkv_step(kv_elems(s)) {}

void gpu_ring_forward(const GpuRingSpec& s, const std::vector<GpuRingRank*>& ranks, RingWork work, RingTileTimes* times) {
  s.check();
  const Nvtx range("ring forward");
  if (times) times->reset(s.P, ranks.size());
  const std::int64_t P = s.P, n = s.n();
  const std::vector<float> ninf(static_cast<std::size_t>(s.h * n), -INFINITY);
  for (GpuRingRank* x : ranks) {
    require(x->comm->size() == P, "the communicator has " + std::to_string(x->comm->size()) + " ranks, the ring needs P = " + std::to_string(P));
    CPLAB_CUDA_CHECK(cudaMemsetAsync(x->o_acc.data(), 0, x->o_acc.size() * sizeof(float), x->compute.get()));
    CPLAB_CUDA_CHECK(cudaMemcpyAsync(x->lse.data(), ninf.data(), ninf.size() * sizeof(float), cudaMemcpyHostToDevice, x->compute.get()));
    x->computed.record(x->compute.get());
  }
  const std::size_t kv_bytes = kv_elems(s) * es(s);
  for (std::int64_t i = 0; i < P; ++i) {
    const Nvtx step_range("forward step " + std::to_string(i));
    const RingPost post = ring_fwd_post(P, i);
    if (post.posts && work != RingWork::compute_only)
      for (GpuRingRank* x : ranks) {  // the held block travels to r+1 while this step computes
        const std::int64_t r = x->comm->rank();
        x->computed.wait_on(x->transfer.get());  // kv_next was last read by the previous step
        x->comm->group_start();
        x->comm->send(x->kv_cur.data(), kv_bytes, static_cast<int>(ring_fwd_dst(P, r)), x->transfer.get());
        x->comm->recv(x->kv_next.data(), kv_bytes, static_cast<int>(ring_fwd_src(P, r)), x->transfer.get());
        x->comm->group_end();
        x->received.record(x->transfer.get());
      }
    for (std::size_t xi = 0; xi < ranks.size(); ++xi) {
      GpuRingRank* x = ranks[xi];
      const std::int64_t r = x->comm->rank();
      const RingTile t = ring_tile(s.layout, s.causal, P, r, ring_fwd_kv_block(P, r, i), n);
      if (!t.skipped && work != RingWork::comm_only) {
        const DeviceMask m(t.mask, t.nq);
        cudaStream_t st = x->compute.get();
        if (times) times->start(i, xi, st);
        attention_forward(s.kernel, s.dtype, AttnDims{t.nq, t.nk, s.h, s.hk, s.d, s.dv}, bytes_at(x->q, t.q0 * s.h * s.d, s),
                          bytes_at(x->kv_cur, t.k0 * s.hk * s.d, s), bytes_at(x->kv_cur, n * s.hk * s.d + t.k0 * s.hk * s.dv, s),
                          m.rule(), s.scale, x->o_part.data(), x->lse_part.data(), st);
        merge_streaming(s.dtype, n, s.h, s.dv, x->o_acc.data(), x->lse.data(), t.q0, t.nq, x->o_part.data(), x->lse_part.data(), st);
        if (times) times->stop(i, xi, st);
      }
      x->computed.record(x->compute.get());
    }
    if (post.posts && work != RingWork::compute_only)
      for (GpuRingRank* x : ranks) {
        x->received.wait_on(x->compute.get());
        std::swap(x->kv_cur, x->kv_next);
      }
  }
  for (GpuRingRank* x : ranks) {
    cast_from_f32(s.dtype, x->o_acc.data(), x->o.data(), n * s.h * s.dv, x->compute.get());
    x->computed.record(x->compute.get());
  }
}

void gpu_ring_backward(const GpuRingSpec& s, const std::vector<GpuRingRank*>& ranks, RingWork work, RingTileTimes* times) {
  s.check();
  const Nvtx range("ring backward");
  if (times) times->reset(s.P, ranks.size());
  const std::int64_t P = s.P, n = s.n();
  const std::size_t kv_bytes = kv_elems(s) * es(s), dkv_bytes = kv_elems(s) * sizeof(float);
  for (GpuRingRank* x : ranks) {
    cudaStream_t st = x->compute.get();
    softmax_delta(s.dtype, n, s.h, s.dv, x->o.data(), x->dout.data(), x->delta.data(), st);
    for (DeviceBuffer<float>* b : {&x->dq, &x->dkv_acc, &x->dkv_in})
      CPLAB_CUDA_CHECK(cudaMemsetAsync(b->data(), 0, b->size() * sizeof(float), st));
    x->computed.record(st);
  }
  for (std::int64_t i = 0; i < P; ++i) {
    const Nvtx step_range("backward step " + std::to_string(i));
    const RingPost post = ring_bwd_post(P, i);
    const bool transfer = post.posts && work != RingWork::compute_only;
    if (transfer)
      for (GpuRingRank* x : ranks) {  // K, V and/or the dK, dV accumulated so far travel to r-1
        const std::int64_t r = x->comm->rank();
        const int dst = static_cast<int>(ring_bwd_dst(P, r)), src = static_cast<int>(ring_bwd_src(P, r));
        x->computed.wait_on(x->transfer.get());
        x->comm->group_start();
        if (post.kv) x->comm->send(x->kv_cur.data(), kv_bytes, dst, x->transfer.get());
        if (post.dkv) x->comm->send(x->dkv_acc.data(), dkv_bytes, dst, x->transfer.get());
        if (post.kv) x->comm->recv(x->kv_next.data(), kv_bytes, src, x->transfer.get());
        if (post.dkv) x->comm->recv(x->dkv_in.data(), dkv_bytes, src, x->transfer.get());
        x->comm->group_end();
        x->received.record(x->transfer.get());
      }
    for (std::size_t xi = 0; xi < ranks.size(); ++xi) {
      GpuRingRank* x = ranks[xi];
      const std::int64_t r = x->comm->rank();
      const RingTile t = ring_tile(s.layout, s.causal, P, r, ring_bwd_kv_block(P, r, i), n);
      cudaStream_t st = x->compute.get();
      CPLAB_CUDA_CHECK(cudaMemsetAsync(x->dkv_step.data(), 0, x->dkv_step.size() * sizeof(float), st));
      if (!t.skipped && work != RingWork::comm_only) {
        const DeviceMask m(t.mask, t.nq);
        if (times) times->start(i, xi, st);
        copy_rows(x->lse_t.data(), x->lse.data(), s.h, n, t.q0, t.nq, st);
        copy_rows(x->delta_t.data(), x->delta.data(), s.h, n, t.q0, t.nq, st);
        attention_backward(s.kernel, s.dtype, AttnDims{t.nq, t.nk, s.h, s.hk, s.d, s.dv}, bytes_at(x->q, t.q0 * s.h * s.d, s),
                           bytes_at(x->kv_cur, t.k0 * s.hk * s.d, s), bytes_at(x->kv_cur, n * s.hk * s.d + t.k0 * s.hk * s.dv, s),
                           bytes_at(x->dout, t.q0 * s.h * s.dv, s), x->lse_t.data(), x->delta_t.data(), m.rule(), s.scale,
                           at(x->dq, static_cast<std::size_t>(t.q0 * s.h * s.d)),
                           at(x->dkv_step, static_cast<std::size_t>(t.k0 * s.hk * s.d)),
                           at(x->dkv_step, static_cast<std::size_t>(n * s.hk * s.d + t.k0 * s.hk * s.dv)), st);
        if (times) times->stop(i, xi, st);
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
      if (post.kv && transfer) std::swap(x->kv_cur, x->kv_next);
    }
  }
}

}  // namespace cplab::cuda
