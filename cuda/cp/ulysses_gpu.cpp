// ulysses_gpu.cpp: Ulysses all-to-all on GPU ranks (see ulysses_gpu.h).
#include "ulysses_gpu.h"

#include <algorithm>

#include "error.h"

namespace cplab::cuda {

namespace {

std::size_t sz(std::int64_t x) { return static_cast<std::size_t>(x); }

Mask mask_of(const GpuCpSpec& s) { return ulysses_mask(s.tokens(), s.packed(), s.run.causal, s.S()); }

}  // namespace

void a2a_lockstep(const std::vector<A2aCall>& calls, bool before) {
  for (const A2aCall& c : calls) before ? c.a->pack_before(c.in, c.send, c.stream) : c.a->pack_after(c.in, c.send, c.stream);
  for (const A2aCall& c : calls) c.a->exchange(c.send, c.recv, *c.comm, c.stream);
  for (const A2aCall& c : calls) before ? c.a->unpack_before(c.recv, c.out, c.stream) : c.a->unpack_after(c.recv, c.out, c.stream);
}

GpuUlyssesRank::GpuUlyssesRank(const GpuCpSpec& s, Comm& c) : comm(checked(s, c)), mask(mask_of(s), s.S()) {
  require(c.size() == s.P(), "the communicator has " + std::to_string(c.size()) + " ranks, the spec cp = " + std::to_string(s.P()));
  const std::int64_t P = s.P(), S = s.S(), n = s.n(), h = s.h(), hk = s.hk(), d = s.d(), dv = s.dv();
  const std::int64_t hg = h / P, hkg = hk / P;
  const std::size_t e = dtype_size(s.dtype);
  q = DeviceBuffer<std::byte>(sz(n * h * d) * e);
  kv = DeviceBuffer<std::byte>(sz(n * hk * (d + dv)) * e);
  dout = DeviceBuffer<std::byte>(sz(n * h * dv) * e);
  o = DeviceBuffer<std::byte>(sz(n * h * dv) * e);
  dq = DeviceBuffer<float>(sz(n * h * d));
  dkv = DeviceBuffer<float>(sz(n * hk * (d + dv)));
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
  const A2aPlan plan = sequence_plan(s.partition());
  const std::int64_t me = c.rank();
  a_q = GpuA2a(plan, me, h, d, e);
  a_k = GpuA2a(plan, me, hk, d, e);
  a_v = GpuA2a(plan, me, hk, dv, e);
  a_o = GpuA2a(plan, me, h, dv, e);
  a_dq = GpuA2a(plan, me, h, d, 4);
  a_dk = GpuA2a(plan, me, hk, d, 4);
  a_dv = GpuA2a(plan, me, hk, dv, 4);
  std::size_t ws = 0;
  for (const GpuA2a* a : {&a_q, &a_k, &a_v, &a_o, &a_dq, &a_dk, &a_dv}) ws = std::max(ws, a->bytes());
  send = DeviceBuffer<std::byte>(ws);
  recv = DeviceBuffer<std::byte>(ws);
}

void gpu_ulysses_forward(const GpuCpSpec& s, const std::vector<GpuUlyssesRank*>& ranks, CpWork work, TileTimes* times) {
  s.check();
  const Nvtx range("a2a forward");
  const std::int64_t S = s.S(), n = s.n(), hk = s.hk(), d = s.d(), dv = s.dv(), hg = s.h() / s.P(), hkg = hk / s.P();
  const std::size_t e = dtype_size(s.dtype);
  auto calls = [&](GpuA2a GpuUlyssesRank::*a, auto in, auto out) {
    std::vector<A2aCall> c;
    for (GpuUlyssesRank* x : ranks) c.push_back({&(x->*a), in(*x), out(*x), x->send.data(), x->recv.data(), x->comm, x->stream.get()});
    return c;
  };
  if (does_comm(work)) {
    const Nvtx step("a2a forward step 0: Q, K, V all-to-all");
    a2a_lockstep(calls(&GpuUlyssesRank::a_q, [](GpuUlyssesRank& x) { return x.q.data(); }, [](GpuUlyssesRank& x) { return x.qs.data(); }), true);
    a2a_lockstep(calls(&GpuUlyssesRank::a_k, [](GpuUlyssesRank& x) { return x.kv.data(); }, [](GpuUlyssesRank& x) { return x.ks.data(); }), true);
    a2a_lockstep(calls(&GpuUlyssesRank::a_v, [&](GpuUlyssesRank& x) { return x.kv.data() + sz(n * hk * d) * e; },
                       [](GpuUlyssesRank& x) { return x.vs.data(); }), true);
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
    a2a_lockstep(calls(&GpuUlyssesRank::a_o, [](GpuUlyssesRank& x) { return x.os.data(); }, [](GpuUlyssesRank& x) { return x.o.data(); }), false);
  }
}

void gpu_ulysses_backward(const GpuCpSpec& s, const std::vector<GpuUlyssesRank*>& ranks, CpWork work, TileTimes* times) {
  s.check();
  const Nvtx range("a2a backward");
  const std::int64_t S = s.S(), n = s.n(), hk = s.hk(), d = s.d(), dv = s.dv(), hg = s.h() / s.P(), hkg = hk / s.P();
  auto calls = [&](GpuA2a GpuUlyssesRank::*a, auto in, auto out) {
    std::vector<A2aCall> c;
    for (GpuUlyssesRank* x : ranks) c.push_back({&(x->*a), in(*x), out(*x), x->send.data(), x->recv.data(), x->comm, x->stream.get()});
    return c;
  };
  if (does_comm(work)) {
    const Nvtx step("a2a backward step 0: dO all-to-all");
    a2a_lockstep(calls(&GpuUlyssesRank::a_o, [](GpuUlyssesRank& x) { return x.dout.data(); }, [](GpuUlyssesRank& x) { return x.dos.data(); }), true);
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
    a2a_lockstep(calls(&GpuUlyssesRank::a_dq, [](GpuUlyssesRank& x) { return x.dqs.data(); }, [](GpuUlyssesRank& x) { return x.dq.data(); }), false);
    a2a_lockstep(calls(&GpuUlyssesRank::a_dk, [](GpuUlyssesRank& x) { return x.dks.data(); }, [](GpuUlyssesRank& x) { return x.dkv.data(); }), false);
    a2a_lockstep(calls(&GpuUlyssesRank::a_dv, [](GpuUlyssesRank& x) { return x.dvs.data(); },
                       [&](GpuUlyssesRank& x) { return x.dkv.data() + sz(n * hk * d); }), false);
  }
}

}  // namespace cplab::cuda
