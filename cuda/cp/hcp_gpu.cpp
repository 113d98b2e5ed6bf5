// hcp_gpu.cpp: hierarchical a2a+p2p on GPU ranks (see hcp_gpu.h).
#include "hcp_gpu.h"

#include <algorithm>

#include "error.h"
#include "hierarchical_cp.h"
#include "ulysses_gpu.h"  // a2a_lockstep

namespace cplab::cuda {

namespace {

std::size_t sz(std::int64_t x) { return static_cast<std::size_t>(x); }

template <class In, class Out>
std::vector<A2aCall> calls(const std::vector<GpuHcpRank*>& ranks, GpuA2a GpuHcpRank::*a, In in, Out out) {
  std::vector<A2aCall> c;
  for (GpuHcpRank* x : ranks) c.push_back({&(x->*a), in(*x), out(*x), x->send.data(), x->recv.data(), x->comm, x->ring.compute.get()});
  return c;
}

std::vector<GpuRingRank*> rings(const std::vector<GpuHcpRank*>& ranks) {
  std::vector<GpuRingRank*> r;
  for (GpuHcpRank* x : ranks) r.push_back(&x->ring);
  return r;
}

}  // namespace

GpuHcpRank::GpuHcpRank(const GpuCpSpec& s, Comm& c)
    : comm(checked(s, c)),
      p(c.rank() / s.run.icp),
      a(c.rank() % s.run.icp),
      ring(s.hcp_ring(), c, hcp_ring_members(s.run.icp, s.run.ocp, c.rank() % s.run.icp)) {
  require(c.size() == s.P(), "the communicator has " + std::to_string(c.size()) + " ranks, the spec cp = " + std::to_string(s.P()));
  const std::int64_t n = s.n(), h = s.h(), hk = s.hk(), d = s.d(), dv = s.dv(), icp = s.run.icp;
  const std::size_t e = dtype_size(s.dtype);
  q = DeviceBuffer<std::byte>(sz(n * h * d) * e);
  kv = DeviceBuffer<std::byte>(sz(n * hk * (d + dv)) * e);
  dout = DeviceBuffer<std::byte>(sz(n * h * dv) * e);
  o = DeviceBuffer<std::byte>(sz(n * h * dv) * e);
  dq = DeviceBuffer<float>(sz(n * h * d));
  dkv = DeviceBuffer<float>(sz(n * hk * (d + dv)));
  const A2aPlan plan = hcp_inner_plan(s.partition(), icp, s.run.ocp, p);
  a_q = GpuA2a(plan, a, h, d, e);
  a_k = GpuA2a(plan, a, hk, d, e);
  a_v = GpuA2a(plan, a, hk, dv, e);
  a_o = GpuA2a(plan, a, h, dv, e);
  a_dq = GpuA2a(plan, a, h, d, 4);
  a_dk = GpuA2a(plan, a, hk, d, 4);
  a_dv = GpuA2a(plan, a, hk, dv, 4);
  std::size_t ws = 0;
  for (const GpuA2a* x : {&a_q, &a_k, &a_v, &a_o, &a_dq, &a_dk, &a_dv}) ws = std::max(ws, x->bytes());
  send = DeviceBuffer<std::byte>(ws);
  recv = DeviceBuffer<std::byte>(ws);
}

void gpu_hcp_forward(const GpuCpSpec& s, const std::vector<GpuHcpRank*>& ranks, CpWork work, TileTimes* times) {
  s.check();
  const Nvtx range("a2a+p2p forward");
  const std::int64_t n = s.n(), hk = s.hk(), d = s.d(), no = s.S() / s.run.ocp, hkg = hk / s.run.icp;
  const std::size_t e = dtype_size(s.dtype);
  if (does_comm(work)) {
    const Nvtx step("a2a+p2p forward step 0: inner Q, K, V all-to-all");
    a2a_lockstep(calls(ranks, &GpuHcpRank::a_q, [](GpuHcpRank& x) { return x.q.data(); }, [](GpuHcpRank& x) { return x.ring.q.data(); }), true);
    a2a_lockstep(calls(ranks, &GpuHcpRank::a_k, [](GpuHcpRank& x) { return x.kv.data(); }, [](GpuHcpRank& x) { return x.ring.kv_cur.data(); }), true);
    a2a_lockstep(calls(ranks, &GpuHcpRank::a_v, [&](GpuHcpRank& x) { return x.kv.data() + sz(n * hk * d) * e; },
                       [&](GpuHcpRank& x) { return x.ring.kv_cur.data() + sz(no * hkg * d) * e; }), true);
  }
  gpu_ring_forward(s.hcp_ring(), rings(ranks), work, times, 1);
  if (does_comm(work)) {
    const Nvtx step("a2a+p2p forward: inner O all-to-all back");
    a2a_lockstep(calls(ranks, &GpuHcpRank::a_o, [](GpuHcpRank& x) { return x.ring.o.data(); }, [](GpuHcpRank& x) { return x.o.data(); }), false);
  }
}

void gpu_hcp_backward(const GpuCpSpec& s, const std::vector<GpuHcpRank*>& ranks, CpWork work, TileTimes* times) {
  s.check();
  const Nvtx range("a2a+p2p backward");
  const std::int64_t n = s.n(), hk = s.hk(), d = s.d(), no = s.S() / s.run.ocp, hkg = hk / s.run.icp;
  if (does_comm(work)) {
    const Nvtx step("a2a+p2p backward step 0: inner dO all-to-all");
    a2a_lockstep(calls(ranks, &GpuHcpRank::a_o, [](GpuHcpRank& x) { return x.dout.data(); }, [](GpuHcpRank& x) { return x.ring.dout.data(); }), true);
  }
  gpu_ring_backward(s.hcp_ring(), rings(ranks), work, times, 1);
  if (does_comm(work)) {
    const Nvtx step("a2a+p2p backward: inner dQ, dK, dV all-to-all back");
    a2a_lockstep(calls(ranks, &GpuHcpRank::a_dq, [](GpuHcpRank& x) { return x.ring.dq.data(); }, [](GpuHcpRank& x) { return x.dq.data(); }), false);
    a2a_lockstep(calls(ranks, &GpuHcpRank::a_dk, [](GpuHcpRank& x) { return x.ring.dkv_acc.data(); }, [](GpuHcpRank& x) { return x.dkv.data(); }), false);
    a2a_lockstep(calls(ranks, &GpuHcpRank::a_dv, [&](GpuHcpRank& x) { return x.ring.dkv_acc.data() + sz(no * hkg * d); },
                       [&](GpuHcpRank& x) { return x.dkv.data() + sz(n * hk * d); }), false);
  }
}

}  // namespace cplab::cuda
