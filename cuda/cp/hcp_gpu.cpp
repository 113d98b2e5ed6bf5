// hcp_gpu.cpp: hierarchical a2a+p2p on GPU ranks (see hcp_gpu.h).
#include "hcp_gpu.h"

#include "core/error.h"
#include "core/util.h"
#include "modes/hierarchical_cp.h"

namespace cplab::cuda {

namespace {

std::vector<GpuRingRank*> rings(const std::vector<GpuHcpRank*>& ranks) {
  std::vector<GpuRingRank*> r;
  for (GpuHcpRank* x : ranks) r.push_back(&x->ring);
  return r;
}

}  // namespace

GpuHcpRank::GpuHcpRank(const GpuCpSpec& s, Comm& c)
    : RankIO(s),
      comm(&c),
      p(c.rank() / s.cp.icp()),
      a(c.rank() % s.cp.icp()),
      ring(s.ring(), c, hcp_ring_members(s.cp.icp(), s.cp.ocp(), a)),
      a2a(hcp_inner_plan(s.cp.partition(), s.cp.icp(), s.cp.ocp(), p), a, s) {
  require(c.size() == s.cp.P(), "the communicator has " + num(c.size()) + " ranks, the spec cp = " + num(s.cp.P()));
  // ring a holds head group a: its sinks (hierarchical_cp.cpp hcp_forward gives ring a the same)
  const std::int64_t hg = s.cp.h() / s.cp.icp();
  ring.sinks = sink_buffer(s.cp, a * hg, hg);
  ring.dsinks = DeviceBuffer<float>(ring.sinks.size());
}

void gpu_hcp_forward(const GpuCpSpec& s, const std::vector<GpuHcpRank*>& ranks, CpWork work, TileTimes* times) {
  s.check();
  const Nvtx range("a2a+p2p forward");
  const CpSpec& c = s.cp;
  const std::int64_t n = c.n(), hk = c.hk(), d = c.d(), no = c.S() / c.ocp(), hkg = hk / c.icp();
  const std::size_t e = dtype_size(s.dtype);
  if (does_comm(work)) {
    const Nvtx step("a2a+p2p forward step 0: inner Q, K, V all-to-all");
    a2a_all(ranks, &A2aSet::q, true, [](GpuHcpRank& x) { return x.q.data(); }, [](GpuHcpRank& x) { return x.ring.q.data(); });
    a2a_all(ranks, &A2aSet::k, true, [](GpuHcpRank& x) { return x.kv.data(); }, [](GpuHcpRank& x) { return x.ring.kv_cur.data(); });
    a2a_all(ranks, &A2aSet::v, true, [&](GpuHcpRank& x) { return x.kv.data() + sz(n * hk * d) * e; },
                       [&](GpuHcpRank& x) { return x.ring.kv_cur.data() + sz(no * hkg * d) * e; });
  }
  gpu_ring_forward(s.ring(), rings(ranks), work, times, 1);
  if (does_comm(work)) {
    const Nvtx step("a2a+p2p forward: inner O all-to-all back");
    a2a_all(ranks, &A2aSet::o, false, [](GpuHcpRank& x) { return x.ring.o.data(); }, [](GpuHcpRank& x) { return x.o.data(); });
  }
}

void gpu_hcp_backward(const GpuCpSpec& s, const std::vector<GpuHcpRank*>& ranks, CpWork work, TileTimes* times) {
  s.check();
  const Nvtx range("a2a+p2p backward");
  const CpSpec& c = s.cp;
  const std::int64_t n = c.n(), hk = c.hk(), d = c.d(), no = c.S() / c.ocp(), hkg = hk / c.icp();
  if (does_comm(work)) {
    const Nvtx step("a2a+p2p backward step 0: inner dO all-to-all");
    a2a_all(ranks, &A2aSet::o, true, [](GpuHcpRank& x) { return x.dout.data(); }, [](GpuHcpRank& x) { return x.ring.dout.data(); });
  }
  gpu_ring_backward(s.ring(), rings(ranks), work, times, 1);
  if (does_comm(work)) {
    const Nvtx step("a2a+p2p backward: inner dQ, dK, dV all-to-all back");
    a2a_all(ranks, &A2aSet::dq, false, [](GpuHcpRank& x) { return x.ring.dq.data(); }, [](GpuHcpRank& x) { return x.dq.data(); });
    a2a_all(ranks, &A2aSet::dk, false, [](GpuHcpRank& x) { return x.ring.dkv_acc.data(); }, [](GpuHcpRank& x) { return x.dkv.data(); });
    a2a_all(ranks, &A2aSet::dv, false, [&](GpuHcpRank& x) { return x.ring.dkv_acc.data() + sz(no * hkg * d); },
                       [&](GpuHcpRank& x) { return x.dkv.data() + sz(n * hk * d); });
  }
}

}  // namespace cplab::cuda
