// allgather_kv.cpp: all-gather KV forward and backward (see allgather_kv.h).
#include "modes/allgather_kv.h"

#include <stdexcept>

namespace cplab {

std::vector<AgTile> allgather_tiles(const Partition& part, const Packing& tokens, bool packed, const PositionRule& rule,
                                    index_t r) {
  const index_t n = part.local_len(), S = part.seq();
  std::vector<AgTile> tiles;
  if (part.layout() == Layout::zigzag && !packed)
    tiles = {{"first chunk", 0, n / 2, 0, 0, {}}, {"second chunk", n / 2, n / 2, 0, 0, {}}};
  else
    tiles = {{"all", 0, n, 0, 0, {}}};
  const std::vector<index_t> all = iota_positions(0, S);
  for (AgTile& t : tiles) {
    const std::vector<index_t> rows = part.indices(r, t.q0, t.nq);
    const Mask full = token_mask(tokens, rows, all, rule);
    index_t lo = S, hi = 0;  // the key range some query sees
    for (index_t a = 0; a < t.nq; ++a) {
      const KeyRange kr = full.keys(a, S);
      if (kr.lo < kr.hi) lo = std::min(lo, kr.lo), hi = std::max(hi, kr.hi);
    }
    if (hi <= lo) lo = hi = 0;
    t.k0 = lo;
    t.nk = hi - lo;
    t.mask = simplify(token_mask(tokens, rows, iota_positions(lo, hi), rule), t.nq, t.nk);
  }
  return tiles;
}

TileShape allgather_tile_shape(const Partition& part, index_t r, const AgTile& t) {
  return tile_shape(t.mask, t.nk == 0, part.spans(r, t.q0, t.nq), t.nq, range_spans(t.k0, t.k0 + t.nk), t.nk);
}

namespace {

std::vector<AgTile> plan(const CpSpec& cfg, index_t r) {
  return allgather_tiles(cfg.partition(), cfg.packing(), cfg.packed(), cfg.rule(), r);
}

// all-gather the flattened K|V of every rank and rebuild sequence-ordered K and V on every rank
template <class T>
std::pair<PerRank<T>, PerRank<T>> gather_kv(const CpSpec& cfg, const PerRank<T>& k, const PerRank<T>& v,
                                             SimComm& comm) {
  const size_t P = k.size();
  std::vector<std::vector<T>> in(P);
  for (size_t r = 0; r < P; ++r) {
    in[r] = k[r].data;
    in[r].insert(in[r].end(), v[r].data.begin(), v[r].data.end());
  }
  const auto out = comm.all_gather<T>("kv", in);
  PerRank<T> K, V;
  const size_t nk = k[0].data.size(), nv = v[0].data.size();
  for (size_t r = 0; r < P; ++r) {
    PerRank<T> ks, vs;  // rank s's blocks, as received
    for (size_t s = 0; s < P; ++s) {
      Tensor3<T> a(k[0].n, k[0].h, k[0].d), b(v[0].n, v[0].h, v[0].d);
      const auto base = out[r].begin() + static_cast<std::ptrdiff_t>(s * (nk + nv));
      std::copy(base, base + static_cast<std::ptrdiff_t>(nk), a.data.begin());
      std::copy(base + static_cast<std::ptrdiff_t>(nk), base + static_cast<std::ptrdiff_t>(nk + nv), b.data.begin());
      ks.push_back(std::move(a));
      vs.push_back(std::move(b));
    }
    K.push_back(unshard(cfg.partition(), ks));  // rank order -> sequence order
    V.push_back(unshard(cfg.partition(), vs));
  }
  return {std::move(K), std::move(V)};
}

}  // namespace

template <class T>
CpOutput<T> allgather_forward(const CpSpec& cfg, const PerRank<T>& q, const PerRank<T>& k,
                              const PerRank<T>& v, SimComm& comm, const std::vector<T>& sinks) {
  const int P = static_cast<int>(cfg.partition().cp());
  const index_t n = cfg.partition().local_len(), h = q[0].h, d = q[0].d, dv = v[0].d;
  comm.set_step(Phase::fwd, 0);
  const auto [K, V] = gather_kv(cfg, k, v, comm);
  comm.set_step(Phase::fwd, 1);
  CpOutput<T> res;
  for (int r = 0; r < P; ++r) {
    res.o.emplace_back(n, h, dv);
    res.lse.push_back(Rows<T>::Constant(h, n, -std::numeric_limits<T>::infinity()));
    for (const AgTile& t : plan(cfg, r)) {
      const auto t0 = TileClock::now();
      attention_forward<T>(q[r].view().rows(t.q0, t.nq), K[r].view().rows(t.k0, t.nk), V[r].view().rows(t.k0, t.nk),
                           t.mask, static_cast<T>(cfg.scale()), res.o[r].view().rows(t.q0, t.nq), rows_view(res.lse[r], t.q0, t.nq));
      if (comm.trace())
        comm.trace()->add(cp_tile_event(Phase::fwd, 1, r, r, t.section, allgather_tile_shape(cfg.partition(), r, t), h, d, dv,
                                        us_since(t0)));
    }
    if (!sinks.empty()) apply_sinks<T>(res.o[r].view(), rows_view(res.lse[r]), sinks.data());  // once per row
  }
  if (comm.pending() != 0) throw std::logic_error("all-gather forward left undelivered messages");
  return res;
}

template <class T>
CpGrads<T> allgather_backward(const CpSpec& cfg, const PerRank<T>& q, const PerRank<T>& k,
                              const PerRank<T>& v, const CpOutput<T>& fwd, const PerRank<T>& dout,
                              SimComm& comm) {
  const int P = static_cast<int>(cfg.partition().cp());
  const index_t n = cfg.partition().local_len(), S = cfg.partition().seq(), h = q[0].h, hk = k[0].h, d = q[0].d, dv = v[0].d;
  comm.set_step(Phase::bwd, 0);
  const auto [K, V] = gather_kv(cfg, k, v, comm);  // gathered again, not kept from the forward
  comm.set_step(Phase::bwd, 1);
  CpGrads<T> g;
  std::vector<std::vector<T>> partial(static_cast<size_t>(P));  // per rank: [dK|dV of rank 0's rows, of rank 1's, ...]
  for (int r = 0; r < P; ++r) {
    g.dq.emplace_back(n, h, d);
    Tensor3<T> dK(S, hk, d), dV(S, hk, dv);  // full length, sequence order
    const Rows<T> delta = softmax_delta<T>(fwd.o[r].view(), dout[r].view());
    for (const AgTile& t : plan(cfg, r)) {
      const auto t0 = TileClock::now();
      attention_backward<T>(q[r].view().rows(t.q0, t.nq), K[r].view().rows(t.k0, t.nk), V[r].view().rows(t.k0, t.nk),
                            dout[r].view().rows(t.q0, t.nq), rows_view(fwd.lse[r], t.q0, t.nq),
                            rows_view(delta, t.q0, t.nq), t.mask, static_cast<T>(cfg.scale()), g.dq[r].view().rows(t.q0, t.nq),
                            dK.view().rows(t.k0, t.nk), dV.view().rows(t.k0, t.nk));
      if (comm.trace())
        comm.trace()->add(cp_tile_event(Phase::bwd, 1, r, r, t.section, allgather_tile_shape(cfg.partition(), r, t), h, d, dv,
                                        us_since(t0)));
    }
    const PerRank<T> dks = shard(cfg.partition(), dK), dvs = shard(cfg.partition(), dV);  // sequence order -> rank order
    for (int s = 0; s < P; ++s) {
      partial[static_cast<size_t>(r)].insert(partial[static_cast<size_t>(r)].end(), dks[static_cast<size_t>(s)].data.begin(), dks[static_cast<size_t>(s)].data.end());
      partial[static_cast<size_t>(r)].insert(partial[static_cast<size_t>(r)].end(), dvs[static_cast<size_t>(s)].data.begin(), dvs[static_cast<size_t>(s)].data.end());
    }
  }
  comm.set_step(Phase::bwd, 2);
  const auto mine = comm.reduce_scatter<T>("dkv", partial);
  for (int r = 0; r < P; ++r) {
    Tensor3<T> a(n, hk, d), b(n, hk, dv);
    const auto& m = mine[static_cast<size_t>(r)];
    std::copy(m.begin(), m.begin() + static_cast<std::ptrdiff_t>(a.data.size()), a.data.begin());
    std::copy(m.begin() + static_cast<std::ptrdiff_t>(a.data.size()), m.end(), b.data.begin());
    g.dk.push_back(std::move(a));
    g.dv.push_back(std::move(b));
  }
  if (comm.pending() != 0) throw std::logic_error("all-gather backward left undelivered messages");
  return g;
}

template CpOutput<float> allgather_forward<float>(const CpSpec&, const PerRank<float>&, const PerRank<float>&,
                                                  const PerRank<float>&, SimComm&, const std::vector<float>&);
template CpOutput<double> allgather_forward<double>(const CpSpec&, const PerRank<double>&,
                                                    const PerRank<double>&, const PerRank<double>&, SimComm&,
                                                    const std::vector<double>&);
template CpGrads<float> allgather_backward<float>(const CpSpec&, const PerRank<float>&, const PerRank<float>&,
                                                  const PerRank<float>&, const CpOutput<float>&, const PerRank<float>&,
                                                  SimComm&);
template CpGrads<double> allgather_backward<double>(const CpSpec&, const PerRank<double>&,
                                                    const PerRank<double>&, const PerRank<double>&,
                                                    const CpOutput<double>&, const PerRank<double>&, SimComm&);

}  // namespace cplab
