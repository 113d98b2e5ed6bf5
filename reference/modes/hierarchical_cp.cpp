// hierarchical_cp.cpp: inner all-to-all, outer rings, inner all-to-all back (see hierarchical_cp.h).
#include "modes/hierarchical_cp.h"

#include <stdexcept>

#include "core/util.h"

namespace cplab {

Partition hcp_outer_partition(const Partition& data, index_t ocp) { return Partition(Layout::zigzag, data.seq(), ocp); }

CpSpec hcp_ring_spec(const CpSpec& s) {
  const Partition outer = hcp_outer_partition(s.partition(), s.ocp());  // the one definition of the rings' layout
  CpFields f;
  f.mode = Mode::p2p;
  f.layout = outer.layout();
  f.cp = outer.cp();
  f.seq = outer.seq();
  f.heads = s.h() / s.icp();
  f.kv_heads = s.hk() * s.kv_replication() / s.icp();
  f.head_dim = s.d();
  f.v_head_dim = s.dv();
  f.causal = s.causal();
  f.window = s.fields().window;
  f.chunk = s.fields().chunk;
  f.scale = s.scale();
  f.merge = s.merge();
  f.partials_dtype = s.partials_dtype();
  f.merge_dtype = s.merge_dtype();
  return CpSpec(f);
}

A2aPlan hcp_inner_plan(const Partition& data, index_t icp, index_t ocp, index_t p) {
  const Partition outer = hcp_outer_partition(data, ocp);
  A2aPlan plan;
  plan.members = hcp_inner_members(icp, p);
  for (index_t a = 0; a < icp; ++a) {
    plan.from.push_back(data.indices(hcp_rank(icp, p, a)));
    plan.to.push_back(outer.indices(p));  // every member of the group: the group's tokens, outer order
  }
  return plan;
}

std::vector<int> hcp_inner_members(index_t icp, index_t p) {
  std::vector<int> m;
  for (index_t a = 0; a < icp; ++a) m.push_back(static_cast<int>(hcp_rank(icp, p, a)));
  return m;
}

std::vector<int> hcp_ring_members(index_t icp, index_t ocp, index_t a) {
  std::vector<int> m;
  for (index_t p = 0; p < ocp; ++p) m.push_back(static_cast<int>(hcp_rank(icp, p, a)));
  return m;
}

template <class T>
HcpForward<T> hcp_forward(const CpSpec& cfg, const PerRank<T>& q,
                          const PerRank<T>& k, const PerRank<T>& v, SimComm& comm, const std::vector<T>& sinks) {
  const index_t icp = cfg.icp(), ocp = cfg.ocp();  // I x O = P, zigzag, unpacked: the CpSpec's rules
  if (q[0].h % icp != 0 || k[0].h % icp != 0)  // the tensors' heads (after any KV replication)
    throw std::logic_error("hcp: heads and KV heads of the tensors must be divisible by icp");
  const index_t P = cfg.partition().cp();
  HcpForward<T> f;
  f.q.resize(sz(P));
  f.k.resize(sz(P));
  f.v.resize(sz(P));
  comm.set_step(Phase::fwd, 0);
  for (const char* name : {"q", "k", "v"}) {
    const PerRank<T>& src = name[0] == 'q' ? q : (name[0] == 'k' ? k : v);
    PerRank<T>& dst = name[0] == 'q' ? f.q : (name[0] == 'k' ? f.k : f.v);
    for (index_t p = 0; p < ocp; ++p) {
      PerRank<T> group;
      for (index_t a = 0; a < icp; ++a) group.push_back(src[sz(hcp_rank(icp, p, a))]);
      PerRank<T> got = a2a_before(hcp_inner_plan(cfg.partition(), icp, ocp, p), group, name, comm);
      for (index_t a = 0; a < icp; ++a) dst[sz(hcp_rank(icp, p, a))] = std::move(got[sz(a)]);
    }
  }
  const CpSpec rc = hcp_ring_spec(cfg);
  const index_t hg = rc.h();  // ring a holds head group a
  for (index_t a = 0; a < icp; ++a) {
    const std::vector<int> members = hcp_ring_members(icp, ocp, a);
    PerRank<T> rq, rk, rv;
    for (int g : members) rq.push_back(f.q[sz(g)]), rk.push_back(f.k[sz(g)]), rv.push_back(f.v[sz(g)]);
    const std::vector<T> group_sinks = sinks.empty() ? std::vector<T>{}
                                                     : std::vector<T>(sinks.begin() + a * hg, sinks.begin() + (a + 1) * hg);
    f.rings.push_back(ring_forward(rc, rq, rk, rv, comm, RingGroup{members, 1}, group_sinks));
  }
  comm.set_step(Phase::fwd, static_cast<int>(rc.ring_hops()) + 2);
  f.out.o.resize(sz(P));
  for (index_t p = 0; p < ocp; ++p) {
    PerRank<T> group;
    for (index_t a = 0; a < icp; ++a) group.push_back(f.rings[sz(a)].o[sz(p)]);
    PerRank<T> back = a2a_after(hcp_inner_plan(cfg.partition(), icp, ocp, p), group, "o", comm);
    for (index_t a = 0; a < icp; ++a) f.out.o[sz(hcp_rank(icp, p, a))] = std::move(back[sz(a)]);
  }
  // LSE stays head-sharded in the rings; for the report it is read in place (not a message)
  f.out.lse.resize(sz(P));
  for (index_t p = 0; p < ocp; ++p) {
    std::vector<Rows<T>> group;
    for (index_t a = 0; a < icp; ++a) group.push_back(f.rings[sz(a)].lse[sz(p)]);
    std::vector<Rows<T>> back = lse_in_place(hcp_inner_plan(cfg.partition(), icp, ocp, p), group);
    for (index_t a = 0; a < icp; ++a) f.out.lse[sz(hcp_rank(icp, p, a))] = std::move(back[sz(a)]);
  }
  if (comm.pending() != 0) throw std::logic_error("hierarchical forward left undelivered messages");
  return f;
}

template <class T>
CpGrads<T> hcp_backward(const CpSpec& cfg, const HcpForward<T>& f,
                        const PerRank<T>& dout, SimComm& comm) {
  const index_t icp = cfg.icp(), ocp = cfg.ocp();
  const index_t P = cfg.partition().cp();
  PerRank<T> dO(sz(P));
  comm.set_step(Phase::bwd, 0);
  for (index_t p = 0; p < ocp; ++p) {
    PerRank<T> group;
    for (index_t a = 0; a < icp; ++a) group.push_back(dout[sz(hcp_rank(icp, p, a))]);
    PerRank<T> got = a2a_before(hcp_inner_plan(cfg.partition(), icp, ocp, p), group, "do", comm);
    for (index_t a = 0; a < icp; ++a) dO[sz(hcp_rank(icp, p, a))] = std::move(got[sz(a)]);
  }
  const CpSpec rc = hcp_ring_spec(cfg);
  std::vector<RingGrads<T>> rg;
  for (index_t a = 0; a < icp; ++a) {
    const std::vector<int> members = hcp_ring_members(icp, ocp, a);
    PerRank<T> rq, rk, rv, rdo;
    for (int g : members)
      rq.push_back(f.q[sz(g)]), rk.push_back(f.k[sz(g)]), rv.push_back(f.v[sz(g)]), rdo.push_back(dO[sz(g)]);
    rg.push_back(ring_backward(rc, rq, rk, rv, f.rings[sz(a)], rdo, comm, RingGroup{members, 1}));
  }
  comm.set_step(Phase::bwd, static_cast<int>(rc.ring_hops()) + 2);
  CpGrads<T> grads{PerRank<T>(sz(P)), PerRank<T>(sz(P)), PerRank<T>(sz(P))};
  for (index_t p = 0; p < ocp; ++p) {
    const A2aPlan plan = hcp_inner_plan(cfg.partition(), icp, ocp, p);
    PerRank<T> gq, gk, gv;
    for (index_t a = 0; a < icp; ++a) gq.push_back(rg[sz(a)].dq[sz(p)]), gk.push_back(rg[sz(a)].dk[sz(p)]), gv.push_back(rg[sz(a)].dv[sz(p)]);
    PerRank<T> bq = a2a_after(plan, gq, "dq", comm), bk = a2a_after(plan, gk, "dk", comm), bv = a2a_after(plan, gv, "dv", comm);
    for (index_t a = 0; a < icp; ++a) {
      grads.dq[sz(hcp_rank(icp, p, a))] = std::move(bq[sz(a)]);
      grads.dk[sz(hcp_rank(icp, p, a))] = std::move(bk[sz(a)]);
      grads.dv[sz(hcp_rank(icp, p, a))] = std::move(bv[sz(a)]);
    }
  }
  if (comm.pending() != 0) throw std::logic_error("hierarchical backward left undelivered messages");
  return grads;
}

#define CPLAB_INSTANTIATE(T)                                                                                    \
  template HcpForward<T> hcp_forward<T>(const CpSpec&, const PerRank<T>&,                \
                                        const PerRank<T>&, const PerRank<T>&, SimComm&, const std::vector<T>&); \
  template CpGrads<T> hcp_backward<T>(const CpSpec&, const HcpForward<T>&,               \
                                      const PerRank<T>&, SimComm&);
CPLAB_INSTANTIATE(float)
CPLAB_INSTANTIATE(double)
#undef CPLAB_INSTANTIATE

}  // namespace cplab
