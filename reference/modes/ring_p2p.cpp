// ring_p2p.cpp: ring attention forward and backward on simulated ranks (see ring_p2p.h).
#include "modes/ring_p2p.h"

#include <chrono>
#include <limits>
#include <stdexcept>
#include <utility>

#include "modes/ring_schedule.h"

namespace cplab {

namespace {

// TE's flat communication buffer: cat(a.flatten(), b.flatten(), ...)
template <class T>
std::vector<T> flat(std::initializer_list<const Tensor3<T>*> parts) {
  std::vector<T> out;
  for (const Tensor3<T>* p : parts) out.insert(out.end(), p->data.begin(), p->data.end());
  return out;
}
// split a received flat buffer back into tensors of the given shapes
template <class T>
void unflat(const std::vector<T>& buf, std::initializer_list<Tensor3<T>*> parts) {
  size_t off = 0;
  for (Tensor3<T>* p : parts) {
    if (off + p->data.size() > buf.size()) throw std::logic_error("ring: received buffer too small");
    std::copy(buf.begin() + static_cast<std::ptrdiff_t>(off),
              buf.begin() + static_cast<std::ptrdiff_t>(off + p->data.size()), p->data.begin());
    off += p->data.size();
  }
  if (off != buf.size()) throw std::logic_error("ring: received buffer has the wrong size");
}

Event tile_event(Phase phase, int step, const RingGroup& g, int r, int j, const RingTile& t,
                 const Partition& part, index_t h, index_t d, index_t dv, double dur_us) {
  return cp_tile_event(phase, g.step0 + step, g.global(r), g.global(j), t.section,
                       tile_shape(t.mask, t.skipped, part.spans(r, t.q0, t.nq), t.nq, part.spans(j, t.k0, t.nk), t.nk),
                       h, d, dv, dur_us);
}

template <class T>
void check_inputs(const CpSpec& cfg, const PerRank<T>& q, const PerRank<T>& k, const PerRank<T>& v) {
  if (cfg.mode() != Mode::p2p) throw std::logic_error("ring: a ring's spec has mode p2p");
  const size_t P = static_cast<size_t>(cfg.partition().cp());
  if (q.size() != P || k.size() != P || v.size() != P)
    throw std::logic_error("ring: need one local Q, K and V per rank");
  for (size_t r = 0; r < P; ++r) {
    check_attention_shapes(q[r].n, q[r].h, q[r].d, k[r].n, k[r].h, k[r].d, v[r].n, v[r].h, v[r].d);
    if (q[r].n != cfg.partition().local_len() || k[r].n != cfg.partition().local_len())
      throw std::logic_error("ring: local tensors must hold seq/cp tokens");
  }
}

// n elements of a buffer as the ring stores them between steps (cp_spec.h partials_dtype, merge_dtype)
template <class T>
void store_as(std::optional<DType> t, T* x, index_t n) {
  if (t) round_in_place(x, static_cast<size_t>(n), *t);
}

}  // namespace

template <class T>
RingForward<T> ring_forward(const CpSpec& cfg, const PerRank<T>& q, const PerRank<T>& k,
                            const PerRank<T>& v, SimComm& comm, const RingGroup& g, const std::vector<T>& sinks) {
  check_inputs(cfg, q, k, v);
  if (!sinks.empty() && static_cast<index_t>(sinks.size()) != q[0].h)
    throw std::logic_error("ring: one sink logit per query head");
  const int P = static_cast<int>(cfg.partition().cp()), steps = static_cast<int>(cfg.ring_hops()) + 1;
  const index_t n = cfg.partition().local_len(), h = q[0].h, d = q[0].d, dv = v[0].d;
  RingForward<T> res;
  res.k_saved = k;  // the KV block each rank currently holds
  res.v_saved = v;
  std::vector<PostLoopFold<T>> folds;
  for (int r = 0; r < P; ++r) {
    res.o.emplace_back(n, h, dv);
    res.lse.push_back(Rows<T>::Constant(h, n, -std::numeric_limits<T>::infinity()));
    folds.emplace_back(n, h, dv);
  }
  for (int i = 0; i < steps; ++i) {
    comm.set_step(Phase::fwd, g.step0 + i);
    const RingPost post = ring_fwd_post(steps, i);
    if (post.posts)  // post the held block to r+1 before computing: it travels while we compute
      for (int r = 0; r < P; ++r)
        comm.send<T>(g.global(r), g.global(static_cast<int>(ring_fwd_dst(P, r))), post.tensor,
                     flat<T>({&res.k_saved[r], &res.v_saved[r]}));
    for (int r = 0; r < P; ++r) {
      const int j = static_cast<int>(ring_fwd_kv_block(P, r, i));
      const RingTile t = ring_plan_tile(cfg.partition(), cfg.packed() ? &cfg.packing() : nullptr, cfg.rule(), r, j);
      const auto t0 = TileClock::now();
      if (!t.skipped) {
        Tensor3<T> o_i(t.nq, h, dv);
        Rows<T> lse_i(h, t.nq);
        attention_forward<T>(q[r].view().rows(t.q0, t.nq), res.k_saved[r].view().rows(t.k0, t.nk),
                             res.v_saved[r].view().rows(t.k0, t.nk), t.mask, static_cast<T>(cfg.scale()), o_i.view(),
                             rows_view(lse_i));
        store_as(cfg.partials_dtype(), o_i.data.data(), t.nq * h * dv);
        if (cfg.merge() == MergeKind::streaming) {
          merge_streaming<T>(res.o[r].view(), rows_view(res.lse[r]), t.q0, o_i.view(), rows_view(std::as_const(lse_i)));
          store_as(cfg.merge_dtype(), res.o[r].token(t.q0), t.nq * h * dv);
        } else
          folds[r].add(t.q0, std::move(o_i), std::move(lse_i));
      }
      if (comm.trace()) comm.trace()->add(tile_event(Phase::fwd, i, g, r, j, t, cfg.partition(), h, d, dv, us_since(t0)));
    }
    if (post.posts)
      for (int r = 0; r < P; ++r)
        unflat<T>(comm.recv<T>(g.global(r), g.global(static_cast<int>(ring_fwd_src(P, r))), post.tensor),
                  {&res.k_saved[r], &res.v_saved[r]});
  }
  if (cfg.merge() == MergeKind::fold)
    for (int r = 0; r < P; ++r) folds[r].finish(res.o[r].view(), rows_view(res.lse[r]));
  if (!sinks.empty())  // once per row, on the merged result
    for (int r = 0; r < P; ++r) apply_sinks<T>(res.o[r].view(), rows_view(res.lse[r]), sinks.data());
  if (comm.pending() != 0) throw std::logic_error("ring forward left undelivered messages");
  return res;
}

template <class T>
RingGrads<T> ring_backward(const CpSpec& cfg, const PerRank<T>& q, const PerRank<T>& k,
                           const PerRank<T>& v, const RingForward<T>& fwd, const PerRank<T>& dout,
                           SimComm& comm, const RingGroup& g) {
  check_inputs(cfg, q, k, v);
  const int P = static_cast<int>(cfg.partition().cp()), steps = static_cast<int>(cfg.ring_hops()) + 1;
  const index_t n = cfg.partition().local_len(), h = q[0].h, hk = k[0].h, d = q[0].d, dv = v[0].d;
  const bool store = cfg.partials_dtype() || cfg.merge_dtype();  // dQ's step results kept apart to round them
  PerRank<T> kcur = fwd.k_saved, vcur = fwd.v_saved;  // block (r - H) mod P: (r+1) mod P for the whole ring
  RingGrads<T> grads;
  PerRank<T> dk_acc, dv_acc;  // dKV accumulated so far for the block held in the previous step
  std::vector<Rows<T>> delta;
  for (int r = 0; r < P; ++r) {
    grads.dq.emplace_back(n, h, d);
    dk_acc.emplace_back(n, hk, d);
    dv_acc.emplace_back(n, hk, dv);
    delta.push_back(softmax_delta<T>(fwd.o[r].view(), dout[r].view()));
  }
  for (int i = 0; i < steps; ++i) {
    comm.set_step(Phase::bwd, g.step0 + i);
    const RingPost post = ring_bwd_post(steps, i);
    if (post.posts)
      for (int r = 0; r < P; ++r) {
        std::vector<T> buf;
        if (post.kv) buf = flat<T>({&kcur[r], &vcur[r]});
        if (post.dkv) {
          const std::vector<T> part = flat<T>({&dk_acc[r], &dv_acc[r]});
          buf.insert(buf.end(), part.begin(), part.end());
        }
        comm.send<T>(g.global(r), g.global(static_cast<int>(ring_bwd_dst(P, r))), post.tensor, buf);
      }
    PerRank<T> dk_step, dv_step;
    for (int r = 0; r < P; ++r) {
      const int j = static_cast<int>(ring_bwd_kv_block(P, r, i, steps));
      const RingTile t = ring_plan_tile(cfg.partition(), cfg.packed() ? &cfg.packing() : nullptr, cfg.rule(), r, j);
      dk_step.emplace_back(n, hk, d);
      dv_step.emplace_back(n, hk, dv);
      const auto t0 = TileClock::now();
      if (!t.skipped) {
        Tensor3<T> dq_i(store ? t.nq : 0, h, d);  // this step's dQ apart, when the ring stores it rounded
        attention_backward<T>(q[r].view().rows(t.q0, t.nq), kcur[r].view().rows(t.k0, t.nk),
                              vcur[r].view().rows(t.k0, t.nk), dout[r].view().rows(t.q0, t.nq),
                              rows_view(fwd.lse[r], t.q0, t.nq), rows_view(std::as_const(delta[r]), t.q0, t.nq),
                              t.mask, static_cast<T>(cfg.scale()), store ? dq_i.view() : grads.dq[r].view().rows(t.q0, t.nq),
                              dk_step[r].view().rows(t.k0, t.nk), dv_step[r].view().rows(t.k0, t.nk));
        if (store) {
          store_as(cfg.partials_dtype(), dq_i.data.data(), t.nq * h * d);
          store_as(cfg.partials_dtype(), dk_step[r].token(t.k0), t.nk * hk * d);
          store_as(cfg.partials_dtype(), dv_step[r].token(t.k0), t.nk * hk * dv);
          T* acc = grads.dq[r].token(t.q0);
          for (size_t x = 0; x < dq_i.data.size(); ++x) acc[x] += dq_i.data[x];
          store_as(cfg.merge_dtype(), acc, t.nq * h * d);
        }
      }
      if (comm.trace()) comm.trace()->add(tile_event(Phase::bwd, i, g, r, j, t, cfg.partition(), h, d, dv, us_since(t0)));
    }
    for (int r = 0; r < P; ++r) {
      Tensor3<T> dk_in(n, hk, d), dv_in(n, hk, dv);  // partial dKV of the block held now (zero at i = 0)
      if (post.posts) {
        const std::vector<T> buf = comm.recv<T>(g.global(r), g.global(static_cast<int>(ring_bwd_src(P, r))), post.tensor);
        if (post.kv && post.dkv) unflat<T>(buf, {&kcur[r], &vcur[r], &dk_in, &dv_in});
        else if (post.kv) unflat<T>(buf, {&kcur[r], &vcur[r]});
        else unflat<T>(buf, {&dk_in, &dv_in});
      }
      for (size_t x = 0; x < dk_in.data.size(); ++x) dk_acc[r].data[x] = dk_in.data[x] + dk_step[r].data[x];
      for (size_t x = 0; x < dv_in.data.size(); ++x) dv_acc[r].data[x] = dv_in.data[x] + dv_step[r].data[x];
      store_as(cfg.merge_dtype(), dk_acc[r].data.data(), n * hk * d);
      store_as(cfg.merge_dtype(), dv_acc[r].data.data(), n * hk * dv);
    }
  }
  grads.dk = std::move(dk_acc);  // after the last step rank r holds its own block (j = r), complete
  grads.dv = std::move(dv_acc);
  if (comm.pending() != 0) throw std::logic_error("ring backward left undelivered messages");
  return grads;
}

template RingForward<float> ring_forward<float>(const CpSpec&, const PerRank<float>&,
                                                const PerRank<float>&, const PerRank<float>&, SimComm&,
                                                const RingGroup&, const std::vector<float>&);
template RingForward<double> ring_forward<double>(const CpSpec&, const PerRank<double>&,
                                                  const PerRank<double>&, const PerRank<double>&, SimComm&,
                                                  const RingGroup&, const std::vector<double>&);
template RingGrads<float> ring_backward<float>(const CpSpec&, const PerRank<float>&,
                                               const PerRank<float>&, const PerRank<float>&,
                                               const RingForward<float>&, const PerRank<float>&, SimComm&,
                                               const RingGroup&);
template RingGrads<double> ring_backward<double>(const CpSpec&, const PerRank<double>&,
                                                 const PerRank<double>&, const PerRank<double>&,
                                                 const RingForward<double>&, const PerRank<double>&, SimComm&,
                                                 const RingGroup&);

}  // namespace cplab
