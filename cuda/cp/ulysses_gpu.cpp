// ulysses_gpu.cpp: Ulysses all-to-all on GPU ranks (see ulysses_gpu.h).
#include "ulysses_gpu.h"

#include "core/error.h"
#include "core/util.h"

namespace cplab::cuda {

namespace {

Mask mask_of(const CpSpec& c) { return ulysses_mask(c.packing(), c.packed(), c.rule(), c.S()); }

}  // namespace

GpuUlyssesRank::GpuUlyssesRank(const GpuCpSpec& s, Comm& cm)
    : RankIO(s),
      comm(&cm),
      a2a(sequence_plan(s.cp.partition()), cm.rank(), s),
      mask(mask_of(s.cp), s.cp.S()) {
  const CpSpec& c = s.cp;
  require(cm.size() == c.P(), "the communicator has " + num(cm.size()) + " ranks, the spec cp = " + num(c.P()));
  const std::int64_t P = c.P(), S = c.S(), d = c.d(), dv = c.dv(), hg = c.h() / P, hkg = c.hk() / P;
  const std::size_t e = dtype_size(s.dtype);
  qs = DeviceBuffer<std::byte>(sz(S * hg * d) * e);
  ks = DeviceBuffer<std::byte>(sz(S * hkg * d) * e);
  vs = DeviceBuffer<std::byte>(sz(S * hkg * dv) * e);
  os = DeviceBuffer<std::byte>(sz(S * hg * dv) * e);
  dos = DeviceBuffer<std::byte>(sz(S * hg * dv) * e);
  lse = DeviceBuffer<float>(sz(hg * S));
  delta = DeviceBuffer<float>(sz(hg * S));
  dqs = DeviceBuffer<float>(sz(S * hg * d));
  dks = DeviceBuffer<float>(sz(S * hkg * d));
  dvs = DeviceBuffer<float>(sz(S * hkg * dv));
  sinks = sink_buffer(c, cm.rank() * hg, hg);  // head group g = rank (sequence_plan)
  dsinks = DeviceBuffer<float>(sinks.size());
}

void gpu_ulysses_forward(const GpuCpSpec& s, const std::vector<GpuUlyssesRank*>& ranks, CpWork work, TileTimes* times) {
  s.check();
  const Nvtx range("a2a forward");
  const CpSpec& c = s.cp;
  const std::int64_t S = c.S(), n = c.n(), hk = c.hk(), d = c.d(), dv = c.dv(), hg = c.h() / c.P(), hkg = hk / c.P();
  const float scale = s.kernel_scale();
  const std::size_t e = dtype_size(s.dtype);
  if (does_comm(work)) {
    const Nvtx step("a2a forward step 0: Q, K, V all-to-all");
    a2a_all(ranks, &A2aSet::q, true, [](GpuUlyssesRank& x) { return x.q.data(); }, [](GpuUlyssesRank& x) { return x.qs.data(); });
    a2a_all(ranks, &A2aSet::k, true, [](GpuUlyssesRank& x) { return x.kv.data(); }, [](GpuUlyssesRank& x) { return x.ks.data(); });
    a2a_all(ranks, &A2aSet::v, true, [&](GpuUlyssesRank& x) { return x.kv.data() + sz(n * hk * d) * e; },
                       [](GpuUlyssesRank& x) { return x.vs.data(); });
  }
  if (does_compute(work)) {
    const Nvtx step("a2a forward step 1: attention");
    for (std::size_t xi = 0; xi < ranks.size(); ++xi) {
      GpuUlyssesRank* x = ranks[xi];
      if (times) times->start(1, xi, x->stream.get());
      attention_forward(s.kernel, s.dtype, AttnDims{S, S, hg, hkg, d, dv}, x->qs.data(), x->ks.data(), x->vs.data(),
                        x->mask.rule(), scale, x->os.data(), x->lse.data(), x->stream.get(),
                        x->sinks.size() > 0 ? x->sinks.data() : nullptr);
      if (times) times->stop(1, xi, x->stream.get());
    }
  }
  if (does_comm(work)) {
    const Nvtx step("a2a forward step 2: O all-to-all back");
    a2a_all(ranks, &A2aSet::o, false, [](GpuUlyssesRank& x) { return x.os.data(); }, [](GpuUlyssesRank& x) { return x.o.data(); });
  }
}

void gpu_ulysses_backward(const GpuCpSpec& s, const std::vector<GpuUlyssesRank*>& ranks, CpWork work, TileTimes* times) {
  s.check();
  const Nvtx range("a2a backward");
  const CpSpec& c = s.cp;
  const std::int64_t S = c.S(), n = c.n(), hk = c.hk(), d = c.d(), dv = c.dv(), hg = c.h() / c.P(), hkg = hk / c.P();
  const float scale = s.kernel_scale();
  if (does_comm(work)) {
    const Nvtx step("a2a backward step 0: dO all-to-all");
    a2a_all(ranks, &A2aSet::o, true, [](GpuUlyssesRank& x) { return x.dout.data(); }, [](GpuUlyssesRank& x) { return x.dos.data(); });
  }
  if (does_compute(work)) {
    const Nvtx step("a2a backward step 1: attention backward");
    for (std::size_t xi = 0; xi < ranks.size(); ++xi) {
      GpuUlyssesRank* x = ranks[xi];
      cudaStream_t st = x->stream.get();
      if (times) times->start(1, xi, st);
      softmax_delta(s.dtype, S, hg, dv, x->os.data(), x->dos.data(), x->delta.data(), st);
      for (DeviceBuffer<float>* b : {&x->dqs, &x->dks, &x->dvs}) CPLAB_CUDA_CHECK(cudaMemsetAsync(b->data(), 0, b->size() * sizeof(float), st));
      if (x->sinks.size() > 0) {  // d s_h of head group g over every token
        CPLAB_CUDA_CHECK(cudaMemsetAsync(x->dsinks.data(), 0, x->dsinks.size() * sizeof(float), st));
        sink_grad_f32(S, hg, x->lse.data(), x->delta.data(), x->sinks.data(), x->dsinks.data(), st);
      }
      attention_backward(s.kernel, s.dtype, AttnDims{S, S, hg, hkg, d, dv}, x->qs.data(), x->ks.data(), x->vs.data(),
                         x->dos.data(), x->lse.data(), x->delta.data(), x->mask.rule(), scale, x->dqs.data(),
                         x->dks.data(), x->dvs.data(), st);
      if (times) times->stop(1, xi, st);
    }
  }
  if (does_comm(work)) {
    const Nvtx step("a2a backward step 2: dQ, dK, dV all-to-all back");
    a2a_all(ranks, &A2aSet::dq, false, [](GpuUlyssesRank& x) { return x.dqs.data(); }, [](GpuUlyssesRank& x) { return x.dq.data(); });
    a2a_all(ranks, &A2aSet::dk, false, [](GpuUlyssesRank& x) { return x.dks.data(); }, [](GpuUlyssesRank& x) { return x.dkv.data(); });
    a2a_all(ranks, &A2aSet::dv, false, [](GpuUlyssesRank& x) { return x.dvs.data(); },
                       [&](GpuUlyssesRank& x) { return x.dkv.data() + sz(n * hk * d); });
  }
}

}  // namespace cplab::cuda
