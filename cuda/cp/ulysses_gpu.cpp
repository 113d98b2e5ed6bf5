// ulysses_gpu.cpp: Ulysses all-to-all on GPU ranks (see ulysses_gpu.h).
#include "ulysses_gpu.h"

#include "error.h"

namespace cplab::cuda {

namespace {

std::size_t sz(std::int64_t x) { return static_cast<std::size_t>(x); }

Mask mask_of(const GpuCpSpec& s) { return ulysses_mask(s.tokens(), s.packed(), s.run.causal, s.S()); }

}  // namespace

GpuUlyssesRank::GpuUlyssesRank(const GpuCpSpec& s, Comm& c)
    : RankIO(s),
      comm(&c),
      a2a(sequence_plan(s.partition()), c.rank(), s),
      mask(mask_of(s), s.S()) {
  require(c.size() == s.P(), "the communicator has " + std::to_string(c.size()) + " ranks, the spec cp = " + std::to_string(s.P()));
  const std::int64_t P = s.P(), S = s.S(), d = s.d(), dv = s.dv(), hg = s.h() / P, hkg = s.hk() / P;
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
}

void gpu_ulysses_forward(const GpuCpSpec& s, const std::vector<GpuUlyssesRank*>& ranks, CpWork work, TileTimes* times) {
  s.check();
  const Nvtx range("a2a forward");
  const std::int64_t S = s.S(), n = s.n(), hk = s.hk(), d = s.d(), dv = s.dv(), hg = s.h() / s.P(), hkg = hk / s.P();
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
      attention_forward(s.kernel, s.dtype, AttnDims{S, S, hg, hkg, d, dv}, x->qs.data(), x->ks.data(), x->vs.data(), x->mask.rule(),
                        s.scale(), x->os.data(), x->lse.data(), x->stream.get());
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
  const std::int64_t S = s.S(), n = s.n(), hk = s.hk(), d = s.d(), dv = s.dv(), hg = s.h() / s.P(), hkg = hk / s.P();
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
      attention_backward(s.kernel, s.dtype, AttnDims{S, S, hg, hkg, d, dv}, x->qs.data(), x->ks.data(), x->vs.data(), x->dos.data(),
                         x->lse.data(), x->delta.data(), x->mask.rule(), s.scale(), x->dqs.data(), x->dks.data(), x->dvs.data(), st);
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
