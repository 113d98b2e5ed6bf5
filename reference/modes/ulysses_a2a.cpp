// ulysses_a2a.cpp: the head <-> sequence all-to-all and Ulysses attention (see ulysses_a2a.h).
#include "modes/ulysses_a2a.h"

#include <map>
#include <stdexcept>

namespace cplab {

namespace {

// where each position lives in a list: position -> local index
std::map<index_t, index_t> where(const std::vector<index_t>& pos) {
  std::map<index_t, index_t> m;
  for (size_t l = 0; l < pos.size(); ++l) m[pos[l]] = static_cast<index_t>(l);
  return m;
}

// rows `rows` (local indices) of x, as a new tensor
template <class T>
Tensor3<T> take_rows(const Tensor3<T>& x, const std::vector<index_t>& rows) {
  Tensor3<T> y(static_cast<index_t>(rows.size()), x.h, x.d);
  for (size_t i = 0; i < rows.size(); ++i)
    std::copy(x.token(rows[i]), x.token(rows[i]) + x.h * x.d, y.token(static_cast<index_t>(i)));
  return y;
}

}  // namespace

A2aPlan sequence_plan(const Partition& part) {
  A2aPlan p;
  const std::vector<index_t> all = iota_positions(0, part.seq());
  for (index_t r = 0; r < part.cp(); ++r) {
    p.members.push_back(static_cast<int>(r));
    p.from.push_back(part.indices(r));
    p.to.push_back(all);
  }
  return p;
}

Mask ulysses_mask(const Packing& tokens, bool packed, const PositionRule& rule, index_t S) {
  if (!packed && rule.plain()) return rule.causal ? Mask::causal() : Mask::none();
  const std::vector<index_t> all = iota_positions(0, S);
  return token_mask(tokens, all, all, rule);
}

std::string ulysses_section(index_t g, index_t hg) {
  return "heads " + std::to_string(g * hg) + ".." + std::to_string((g + 1) * hg - 1);
}

TileShape ulysses_tile_shape(const Mask& mask, index_t S) {
  return tile_shape(mask, false, range_spans(0, S), S, range_spans(0, S), S);
}

std::vector<index_t> chunk_ids_before_attn(index_t P) {
  const Partition chunks(Layout::zigzag, 2 * P, P);  // one token per chunk
  std::vector<index_t> ids;
  for (index_t p = 0; p < 2 * P; ++p) {
    const RankLocal o = chunks.owner(p);
    ids.push_back(rank_concat_index(2 * P, P, o.rank, o.local));
  }
  return ids;
}

std::vector<index_t> chunk_ids_after_attn(index_t P) {
  const Partition chunks(Layout::zigzag, 2 * P, P);
  std::vector<index_t> ids;
  for (index_t i = 0; i < 2 * P; ++i) ids.push_back(chunks.global(i / 2, i % 2));
  return ids;
}

template <class T>
PerRank<T> a2a_before(const A2aPlan& plan, const PerRank<T>& x, const std::string& name, SimComm& comm) {
  const size_t G = plan.members.size();
  if (x[0].h % static_cast<index_t>(G) != 0) throw std::logic_error("a2a: heads must be divisible by the group size");
  const index_t hg = x[0].h / static_cast<index_t>(G);
  // in[i][g]: member i's tokens that member g needs, head group g, in g's target order
  std::vector<std::vector<std::vector<T>>> in(G, std::vector<std::vector<T>>(G));
  std::vector<std::vector<std::vector<index_t>>> order(G, std::vector<std::vector<index_t>>(G));  // [g][i]: positions
  for (size_t g = 0; g < G; ++g) {
    for (size_t i = 0; i < G; ++i) {
      const auto at = where(plan.from[i]);
      std::vector<index_t> rows;
      for (index_t pos : plan.to[g]) {
        const auto it = at.find(pos);
        if (it != at.end()) rows.push_back(it->second), order[g][i].push_back(pos);
      }
      in[i][g] = slice_heads(take_rows(x[i], rows), static_cast<index_t>(g) * hg, hg).data;
    }
  }
  const auto out = comm.all_to_all<T>(name, in, plan.members);
  PerRank<T> y;
  for (size_t g = 0; g < G; ++g) {  // concatenated blocks of members 0..G-1 -> target order
    std::map<index_t, size_t> src;  // position -> row in the concatenation
    size_t row = 0;
    for (size_t i = 0; i < G; ++i)
      for (index_t pos : order[g][i]) src[pos] = row++;
    Tensor3<T> t(static_cast<index_t>(plan.to[g].size()), hg, x[0].d);
    const size_t width = static_cast<size_t>(hg * x[0].d);
    for (size_t l = 0; l < plan.to[g].size(); ++l) {
      const size_t r = src.at(plan.to[g][l]);
      std::copy(out[g].begin() + static_cast<std::ptrdiff_t>(r * width),
                out[g].begin() + static_cast<std::ptrdiff_t>((r + 1) * width), t.token(static_cast<index_t>(l)));
    }
    y.push_back(std::move(t));
  }
  return y;
}

template <class T>
PerRank<T> a2a_after(const A2aPlan& plan, const PerRank<T>& y, const std::string& name, SimComm& comm) {
  const size_t G = plan.members.size();
  const index_t hg = y[0].h, h = hg * static_cast<index_t>(G);
  // in[g][i]: member g's rows for the positions member i holds in the data layout, in i's local order
  std::vector<std::vector<std::vector<T>>> in(G, std::vector<std::vector<T>>(G));
  for (size_t g = 0; g < G; ++g) {
    const auto at = where(plan.to[g]);
    for (size_t i = 0; i < G; ++i) {
      std::vector<index_t> rows;
      for (index_t pos : plan.from[i]) rows.push_back(at.at(pos));
      in[g][i] = take_rows(y[g], rows).data;
    }
  }
  const auto out = comm.all_to_all<T>(name, in, plan.members);
  PerRank<T> x;
  for (size_t i = 0; i < G; ++i) {
    const index_t n = static_cast<index_t>(plan.from[i].size());
    Tensor3<T> t(n, h, y[0].d);
    for (size_t g = 0; g < G; ++g) {
      Tensor3<T> blk(n, hg, y[0].d);
      const size_t sz = blk.data.size();
      std::copy(out[i].begin() + static_cast<std::ptrdiff_t>(g * sz), out[i].begin() + static_cast<std::ptrdiff_t>((g + 1) * sz),
                blk.data.begin());
      place_heads(t, static_cast<index_t>(g) * hg, blk);
    }
    x.push_back(std::move(t));
  }
  return x;
}

template <class T>
std::vector<Rows<T>> lse_in_place(const A2aPlan& plan, const std::vector<Rows<T>>& lse) {
  const size_t G = plan.members.size();
  const index_t hg = lse[0].rows();
  std::vector<Rows<T>> out;
  for (size_t i = 0; i < G; ++i) {
    Rows<T> l(hg * static_cast<index_t>(G), static_cast<index_t>(plan.from[i].size()));
    for (size_t g = 0; g < G; ++g) {
      const auto at = where(plan.to[g]);
      for (size_t t = 0; t < plan.from[i].size(); ++t)
        l.block(static_cast<index_t>(g) * hg, static_cast<index_t>(t), hg, 1) = lse[g].col(at.at(plan.from[i][t]));
    }
    out.push_back(std::move(l));
  }
  return out;
}

template <class T>
UlyssesForward<T> ulysses_forward(const CpSpec& cfg, const PerRank<T>& q, const PerRank<T>& k,
                                  const PerRank<T>& v, SimComm& comm, const std::vector<T>& sinks) {
  const int P = static_cast<int>(cfg.partition().cp());
  if (q[0].h % P != 0 || k[0].h % P != 0) throw std::logic_error("ulysses: heads must be divisible by cp");
  const A2aPlan plan = sequence_plan(cfg.partition());
  const index_t S = cfg.partition().seq(), hg = q[0].h / P, d = q[0].d, dv = v[0].d;
  UlyssesForward<T> f;
  comm.set_step(Phase::fwd, 0);
  f.q = a2a_before(plan, q, "q", comm);
  f.k = a2a_before(plan, k, "k", comm);
  f.v = a2a_before(plan, v, "v", comm);
  comm.set_step(Phase::fwd, 1);
  const Mask mask = ulysses_mask(cfg.packing(), cfg.packed(), cfg.rule(), S);
  for (int g = 0; g < P; ++g) {
    f.o.emplace_back(S, hg, dv);
    f.lse.emplace_back(hg, S);
    const auto t0 = TileClock::now();
    attention_forward<T>(f.q[g].view(), f.k[g].view(), f.v[g].view(), mask, static_cast<T>(cfg.scale()), f.o[g].view(), rows_view(f.lse[g]));
    if (!sinks.empty())  // head group g's sinks, before O leaves for the output all-to-all
      apply_sinks<T>(f.o[g].view(), rows_view(f.lse[g]), sinks.data() + g * hg);
    if (comm.trace())
      comm.trace()->add(cp_tile_event(Phase::fwd, 1, g, g, ulysses_section(g, hg), ulysses_tile_shape(mask, S), hg, d, dv,
                                      us_since(t0)));
  }
  comm.set_step(Phase::fwd, 2);
  f.out.o = a2a_after(plan, f.o, "o", comm);
  f.out.lse = lse_in_place(plan, f.lse);
  if (comm.pending() != 0) throw std::logic_error("ulysses forward left undelivered messages");
  return f;
}

template <class T>
CpGrads<T> ulysses_backward(const CpSpec& cfg, const UlyssesForward<T>& f, const PerRank<T>& dout,
                            SimComm& comm) {
  const int P = static_cast<int>(cfg.partition().cp());
  const A2aPlan plan = sequence_plan(cfg.partition());
  const index_t S = cfg.partition().seq(), hg = f.q[0].h, hkg = f.k[0].h, d = f.q[0].d, dvh = f.v[0].d;
  comm.set_step(Phase::bwd, 0);
  const PerRank<T> dO = a2a_before(plan, dout, "do", comm);
  comm.set_step(Phase::bwd, 1);
  const Mask mask = ulysses_mask(cfg.packing(), cfg.packed(), cfg.rule(), S);
  PerRank<T> dq, dk, dvs;
  for (int g = 0; g < P; ++g) {
    dq.emplace_back(S, hg, d);
    dk.emplace_back(S, hkg, d);
    dvs.emplace_back(S, hkg, dvh);
    const Rows<T> delta = softmax_delta<T>(f.o[g].view(), dO[g].view());
    const auto t0 = TileClock::now();
    attention_backward<T>(f.q[g].view(), f.k[g].view(), f.v[g].view(), dO[g].view(), rows_view(f.lse[g]),
                          rows_view(delta), mask, static_cast<T>(cfg.scale()), dq[g].view(), dk[g].view(), dvs[g].view());
    if (comm.trace())
      comm.trace()->add(cp_tile_event(Phase::bwd, 1, g, g, ulysses_section(g, hg), ulysses_tile_shape(mask, S), hg, d, dvh,
                                      us_since(t0)));
  }
  comm.set_step(Phase::bwd, 2);
  CpGrads<T> grads{a2a_after(plan, dq, "dq", comm), a2a_after(plan, dk, "dk", comm), a2a_after(plan, dvs, "dv", comm)};
  if (comm.pending() != 0) throw std::logic_error("ulysses backward left undelivered messages");
  return grads;
}

#define CPLAB_INSTANTIATE(T)                                                                                \
  template PerRank<T> a2a_before<T>(const A2aPlan&, const PerRank<T>&, const std::string&, SimComm&);      \
  template PerRank<T> a2a_after<T>(const A2aPlan&, const PerRank<T>&, const std::string&, SimComm&);       \
  template std::vector<Rows<T>> lse_in_place<T>(const A2aPlan&, const std::vector<Rows<T>>&);              \
  template UlyssesForward<T> ulysses_forward<T>(const CpSpec&, const PerRank<T>&, const PerRank<T>&,  \
                                                const PerRank<T>&, SimComm&, const std::vector<T>&);        \
  template CpGrads<T> ulysses_backward<T>(const CpSpec&, const UlyssesForward<T>&, const PerRank<T>&, \
                                          SimComm&);
CPLAB_INSTANTIATE(float)
CPLAB_INSTANTIATE(double)
#undef CPLAB_INSTANTIATE

}  // namespace cplab
