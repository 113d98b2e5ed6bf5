// check_faults.h: faulty outputs for tests/test_check.cpp and test_check_rules.cpp, made by
// transforming correct ones.
//
// What it is: the faults `cplab check` names, injected one at a time into the outputs of a correct
// run: transforms of those outputs (tokens in another layout's order, dK / dV swapped, summed or
// shifted by a rank, LSE in base 2, padding not zero, outputs rounded to float32 or bfloat16) and
// attention recomputed under a faulted rule with scalar loops written from the definition (KV head
// i % kv_heads, the causal mask off by one, softmax scale 1/d, LSE without the max, a ring step's
// partial result missing or doubled, dK / dV of each rank's own queries only; attention sinks
// ignored, counted on every rank, or added to every ring partial; issue 38's rules: a mask dropped
// or causal added, each rank attending its own shard only or its own block unmasked, packed
// sequences bounded by the padded offsets or by cu_seqlens as offsets). With sinks every fault keeps them
// right (once per row) unless it is a sink fault. Nothing here calls
// the code under test (reference/check/): only the layouts and packings the spec defines.
// What it is not: shipped. The library never injects a fault; tests only.
#pragma once

#include <optional>
#include <array>
#include <cmath>
#include <functional>
#include <limits>
#include <random>

#include "core/dtype.h"
#include "modes/cp_spec.h"
#include "run/experiment.h"

namespace cplab::test {

// o, lse (S, h, 1), dq, dk, dv in global order (check_inputs.h's order)
using Outs = std::array<Tensor3<double>, 5>;

struct NaiveRule {
  double scale = 0;
  int shift = 0;          // causal: key k visible to query q iff k <= q + shift
  bool head_mod = false;  // query head i reads KV head i % hk
  int window_shift = 0;   // a sliding window of W + window_shift keys
  int causal = -1;        // -1: the spec's causal flag; 0: no causal mask; 1: a causal mask
  bool no_window = false, no_chunk = false;  // the spec's window / chunk dropped
  int bounds = 0;         // a packed token's sequence: 0 the real one (padding in none); 1 cu_seqlens_padded's
                          // (padding real); 2 cu_seqlens read as the buffer's offsets
  bool own_unmasked = false;  // a key on the query's own rank: visible if in its sequence
  index_t kv_heads = 0;       // > 0: only the first kv_heads KV heads read, query head i reads i / (h / kv_heads)
};

// the tokens [st, en) of g's sequence under bounds (NaiveRule); false: g is in none
inline bool naive_sequence(const Packing& p, int bounds, index_t g, index_t& st, index_t& en) {
  if (bounds == 0) {
    if (!p.real(g)) return false;
    st = p.cu_seqlens_padded[static_cast<size_t>(p.seq_of(g))], en = st + p.length(p.seq_of(g));
    return true;
  }
  const std::vector<index_t>& cu = bounds == 1 ? p.cu_seqlens_padded : p.cu_seqlens;
  for (size_t s = 0; s + 1 < cu.size(); ++s)
    if (cu[s] <= g && g < cu[s + 1]) {
      st = cu[s], en = cu[s + 1];
      return true;
    }
  return false;
}

inline bool naive_visible(const CpSpec& s, const NaiveRule& r, index_t q, index_t k) {
  index_t st = 0, en = 0, st_k = 0, en_k = 0;
  if (!naive_sequence(s.packing(), r.bounds, q, st, en) || !naive_sequence(s.packing(), r.bounds, k, st_k, en_k) || st != st_k)
    return false;
  if (r.own_unmasked && s.partition().owner(q).rank == s.partition().owner(k).rank) return true;
  const bool causal = r.causal < 0 ? s.causal() : r.causal == 1;
  const std::optional<index_t> w = s.fields().window;  // written out here, not read from mask_rule.h
  if (w && *w > 0 && !r.no_window) {
    const index_t W = *w + r.window_shift;
    if (causal ? q - k >= W : (q - k >= W || k - q >= W)) return false;
  }
  const std::optional<index_t> c = s.fields().chunk;  // chunks of C positions within the sequence
  if (c && *c > 0 && !r.no_chunk && (q - st) / *c != (k - st) / *c) return false;
  return !causal || k <= q + r.shift;
}

inline index_t naive_kv_head(const CpSpec& s, const NaiveRule& r, index_t i) {
  if (r.kv_heads > 0) return i / (s.h() / r.kv_heads);
  return r.head_mod ? i % s.hk() : i / (s.h() / s.hk());
}

// O and LSE (S, h, 1) of every query over the keys `keep(q, k)` lets through (and the rule shows)
template <class Keep>
std::pair<Tensor3<double>, Tensor3<double>> naive_forward(const CpSpec& s, const Inputs& in, const NaiveRule& r, Keep keep) {
  const index_t S = s.S(), h = s.h();
  Tensor3<double> o(S, h, s.dv()), lse(S, h, 1);
  for (index_t i = 0; i < h; ++i)
    for (index_t q = 0; q < S; ++q) {
      const index_t g = naive_kv_head(s, r, i);
      std::vector<double> sc(static_cast<size_t>(S), 0.0);
      double m = -std::numeric_limits<double>::infinity();
      for (index_t k = 0; k < S; ++k) {
        if (!naive_visible(s, r, q, k) || !keep(q, k)) continue;
        double dot = 0;
        for (index_t e = 0; e < s.d(); ++e) dot += in.q.at(q, i, e) * in.k.at(k, g, e);
        sc[static_cast<size_t>(k)] = r.scale * dot;
        m = std::max(m, r.scale * dot);
      }
      if (m == -std::numeric_limits<double>::infinity()) {
        lse.at(q, i, 0) = m;
        continue;
      }
      double l = 0;
      for (index_t k = 0; k < S; ++k)
        if (naive_visible(s, r, q, k) && keep(q, k)) {
          const double p = std::exp(sc[static_cast<size_t>(k)] - m);
          l += p;
          for (index_t e = 0; e < s.dv(); ++e) o.at(q, i, e) += p * in.v.at(k, g, e);
        }
      for (index_t e = 0; e < s.dv(); ++e) o.at(q, i, e) /= l;
      lse.at(q, i, 0) = m + std::log(l);
    }
  return {o, lse};
}

// dQ, dK, dV from the O and LSE the backward reads, over the pairs keep(q, k) lets through
template <class Keep>
void naive_backward(const CpSpec& s, const Inputs& in, const NaiveRule& r, const Tensor3<double>& o, const Tensor3<double>& lse,
                    Keep keep, Tensor3<double>& dq, Tensor3<double>& dk, Tensor3<double>& dv) {
  const index_t S = s.S(), h = s.h();
  dq = Tensor3<double>(S, h, s.d()), dk = Tensor3<double>(S, s.hk(), s.d()), dv = Tensor3<double>(S, s.hk(), s.dv());
  for (index_t i = 0; i < h; ++i)
    for (index_t q = 0; q < S; ++q) {
      const index_t g = naive_kv_head(s, r, i);
      const double L = lse.at(q, i, 0);
      if (!std::isfinite(L)) continue;
      double D = 0;
      for (index_t e = 0; e < s.dv(); ++e) D += in.dout.at(q, i, e) * o.at(q, i, e);
      for (index_t k = 0; k < S; ++k) {
        if (!naive_visible(s, r, q, k) || !keep(q, k)) continue;
        double dot = 0, dp = 0;
        for (index_t e = 0; e < s.d(); ++e) dot += in.q.at(q, i, e) * in.k.at(k, g, e);
        for (index_t e = 0; e < s.dv(); ++e) dp += in.dout.at(q, i, e) * in.v.at(k, g, e);
        const double p = std::exp(r.scale * dot - L), ds = p * (dp - D);
        for (index_t e = 0; e < s.dv(); ++e) dv.at(k, g, e) += p * in.dout.at(q, i, e);
        for (index_t e = 0; e < s.d(); ++e) {
          dq.at(q, i, e) += r.scale * ds * in.k.at(k, g, e);
          dk.at(k, g, e) += r.scale * ds * in.q.at(q, i, e);
        }
      }
    }
}

// attention sinks written out from their definition: a row whose softmax denominator holds
// count(q) >= 0 copies of exp(s_h) (the right count is 1): with (O, L) the row's result without any
// sink, L' = log(exp(L) + count exp(s_h)), O' = O exp(L - L'); rows that see no key stay as they are
inline void add_sinks(const CpSpec& s, const Inputs& in, Tensor3<double>& o, Tensor3<double>& lse,
                      const std::function<double(index_t)>& count) {
  for (index_t q = 0; q < s.S(); ++q)
    for (index_t i = 0; i < s.h(); ++i) {
      const double L = lse.at(q, i, 0);
      if (!std::isfinite(L)) continue;
      const double l2 = std::log(std::exp(L) + count(q) * std::exp(in.sinks[static_cast<size_t>(i)]));
      for (index_t e = 0; e < s.dv(); ++e) o.at(q, i, e) *= std::exp(L - l2);
      lse.at(q, i, 0) = l2;
    }
}

inline auto keep_all() {
  return [](index_t, index_t) { return true; };
}

// every output recomputed under a faulted rule (forward and backward alike)
inline Outs rule_outputs(const CpSpec& s, const Inputs& in, const NaiveRule& r, bool backward) {
  auto [o, lse] = naive_forward(s, in, r, keep_all());
  if (!in.sinks.empty()) add_sinks(s, in, o, lse, [](index_t) { return 1.0; });
  Outs out{o, lse, {}, {}, {}};
  if (backward) naive_backward(s, in, r, o, lse, keep_all(), out[2], out[3], out[4]);
  return out;
}

// the tokens of x at positions, in that order
inline Tensor3<double> gather_tokens(const Tensor3<double>& x, const std::vector<index_t>& positions) {
  Tensor3<double> y(static_cast<index_t>(positions.size()), x.h, x.d);
  for (size_t a = 0; a < positions.size(); ++a)
    std::copy(x.token(positions[a]), x.token(positions[a]) + x.h * x.d, y.token(static_cast<index_t>(a)));
  return y;
}

// the outputs with rank r's buffer holding layout `held`'s tokens, placed at layout `placed`'s positions
inline Outs layout_order(const CpSpec& s, const Outs& base, Layout held, Layout placed) {
  const Partition ph(held, s.partition().cu_padded(), s.P()), pp(placed, s.partition().cu_padded(), s.P());
  Outs out = base;
  for (index_t r = 0; r < s.P(); ++r) {
    const std::vector<index_t> from = ph.indices(r), to = pp.indices(r);
    for (Tensor3<double>& x : out) {
      if (x.n == 0) continue;
      const Tensor3<double>& b = base[static_cast<size_t>(&x - out.data())];
      for (size_t l = 0; l < from.size(); ++l) std::copy(b.token(from[l]), b.token(from[l]) + b.h * b.d, x.token(to[l]));
    }
  }
  return out;
}

// dK' = ak * dK + bk * dV of rank r + shift_k, dV' = av * dK + bv * dV of rank r + shift_v
inline Outs dkv_mix(const CpSpec& s, const Outs& base, double ak, double bk, index_t shift_k, double av, double bv, index_t shift_v) {
  Outs out = base;
  const Partition& part = s.partition();
  const index_t P = s.P();
  for (index_t r = 0; r < P; ++r) {
    const std::vector<index_t> mine = part.indices(r);
    const std::vector<index_t> kr = part.indices(((r + shift_k) % P + P) % P), vr = part.indices(((r + shift_v) % P + P) % P);
    for (size_t l = 0; l < mine.size(); ++l)
      for (index_t e = 0; e < base[3].h * base[3].d; ++e) {
        out[3].token(mine[l])[e] = ak * base[3].token(kr[l])[e] + bk * base[4].token(kr[l])[e];
        out[4].token(mine[l])[e] = av * base[3].token(vr[l])[e] + bv * base[4].token(vr[l])[e];
      }
  }
  return out;
}

// dK and dV of each rank's own queries only (no cross-rank reduction)
inline Outs own_queries(const CpSpec& s, const Inputs& in, const Outs& base) {
  const Partition& part = s.partition();
  auto same_rank = [&](index_t q, index_t k) { return part.owner(q).rank == part.owner(k).rank; };
  Outs out = base;
  Tensor3<double> dq;
  naive_backward(s, in, NaiveRule{s.scale(), 0, false}, base[0], base[1], same_rank, dq, out[3], out[4]);
  return out;
}

// each rank attending to its own shard's keys only (forward and backward: only the same rank's
// queries reach a key's dK, dV)
inline Outs local_only(const CpSpec& s, const Inputs& in) {
  const Partition& part = s.partition();
  auto same_rank = [&](index_t q, index_t k) { return part.owner(q).rank == part.owner(k).rank; };
  const NaiveRule r{s.scale()};
  auto [o, lse] = naive_forward(s, in, r, same_rank);
  Outs out{o, lse, {}, {}, {}};
  naive_backward(s, in, r, o, lse, same_rank, out[2], out[3], out[4]);
  return out;
}

// O and LSE with ring step `step`'s partial result counted `weight` times (0: missing, 2: doubled)
inline Outs ring_step(const CpSpec& s, const Inputs& in, const Outs& base, index_t step, int weight) {
  const Partition& part = s.partition();
  const index_t P = s.P(), S = s.S(), h = s.h();
  std::vector<std::pair<Tensor3<double>, Tensor3<double>>> partial;
  for (index_t j = 0; j < P; ++j)
    partial.push_back(naive_forward(s, in, NaiveRule{s.scale(), 0, false}, [&](index_t, index_t k) { return part.owner(k).rank == j; }));
  Outs out = base;
  out[0] = Tensor3<double>(S, h, s.dv());
  for (index_t q = 0; q < S; ++q) {
    const index_t r = part.owner(q).rank, js = ((r - step) % P + P) % P;
    for (index_t i = 0; i < h; ++i) {
      double l = 0;  // in units of exp(0): fine at these sizes (|scores| < head_dim)
      std::vector<double> acc(static_cast<size_t>(s.dv()), 0.0);
      for (index_t j = 0; j < P; ++j) {
        const double L = partial[static_cast<size_t>(j)].second.at(q, i, 0);
        if (!std::isfinite(L)) continue;
        const double w = (j == js ? weight : 1) * std::exp(L);
        l += w;
        for (index_t e = 0; e < s.dv(); ++e) acc[static_cast<size_t>(e)] += w * partial[static_cast<size_t>(j)].first.at(q, i, e);
      }
      out[1].at(q, i, 0) = l > 0 ? std::log(l) : -std::numeric_limits<double>::infinity();
      for (index_t e = 0; e < s.dv(); ++e) out[0].at(q, i, e) = l > 0 ? acc[static_cast<size_t>(e)] / l : 0.0;
    }
  }
  if (!in.sinks.empty()) add_sinks(s, in, out[0], out[1], [](index_t) { return 1.0; });  // once, after the merge
  return out;
}

// the sinks counted count(q) times (0: ignored; cp: on every rank) in the forward, and the backward
// of that forward (it reads the saved O and LSE)
inline Outs sinks_counted(const CpSpec& s, const Inputs& in, const std::function<double(index_t)>& count) {
  const NaiveRule r{s.scale(), 0, false};
  auto [o, lse] = naive_forward(s, in, r, keep_all());
  add_sinks(s, in, o, lse, count);
  Outs out{o, lse, {}, {}, {}};
  naive_backward(s, in, r, o, lse, keep_all(), out[2], out[3], out[4]);
  return out;
}

// the ring with the sink added to every partial result before the merge: each KV block's partial
// (O_j, L_j) of a row that sees some of its keys becomes (O_j exp(L_j - L_j'), L_j' = log(exp(L_j) +
// exp(s_h))), then the partials are merged (exp-weighted); the backward reads the merged O and LSE
inline Outs sink_per_partial(const CpSpec& s, const Inputs& in) {
  const Partition& part = s.partition();
  const NaiveRule r{s.scale(), 0, false};
  const index_t P = s.P(), S = s.S(), h = s.h();
  std::vector<std::pair<Tensor3<double>, Tensor3<double>>> partial;
  for (index_t j = 0; j < P; ++j) {
    partial.push_back(naive_forward(s, in, r, [&](index_t, index_t k) { return part.owner(k).rank == j; }));
    add_sinks(s, in, partial.back().first, partial.back().second, [](index_t) { return 1.0; });
  }
  Tensor3<double> o(S, h, s.dv()), lse(S, h, 1);
  for (index_t q = 0; q < S; ++q)
    for (index_t i = 0; i < h; ++i) {
      double l = 0;
      for (index_t j = 0; j < P; ++j) {
        const double L = partial[static_cast<size_t>(j)].second.at(q, i, 0);
        if (!std::isfinite(L)) continue;
        l += std::exp(L);
        for (index_t e = 0; e < s.dv(); ++e) o.at(q, i, e) += std::exp(L) * partial[static_cast<size_t>(j)].first.at(q, i, e);
      }
      lse.at(q, i, 0) = l > 0 ? std::log(l) : -std::numeric_limits<double>::infinity();
      for (index_t e = 0; e < s.dv(); ++e) o.at(q, i, e) = l > 0 ? o.at(q, i, e) / l : 0.0;
    }
  Outs out{o, lse, {}, {}, {}};
  naive_backward(s, in, r, o, lse, keep_all(), out[2], out[3], out[4]);
  return out;
}

// the last ring step whose KV block (rank r holds rank r - step's at step `step`) has a pair some
// query of rank r sees: dropping a later one changes nothing
inline index_t last_visible_step(const CpSpec& s) {
  const Partition& part = s.partition();
  const NaiveRule r{s.scale(), 0, false};
  for (index_t step = s.P() - 1; step > 0; --step)
    for (index_t q = 0; q < s.S(); ++q)
      for (index_t k = 0; k < s.S(); ++k)
        if (part.owner(k).rank == ((part.owner(q).rank - step) % s.P() + s.P()) % s.P() && naive_visible(s, r, q, k)) return step;
  return 0;
}

// LSE minus each row's largest visible score
inline Outs lse_without_max(const CpSpec& s, const Inputs& in, const Outs& base) {
  Outs out = base;
  const NaiveRule r{s.scale(), 0, false};
  for (index_t q = 0; q < s.S(); ++q)
    for (index_t i = 0; i < s.h(); ++i) {
      double m = -std::numeric_limits<double>::infinity();
      for (index_t k = 0; k < s.S(); ++k) {
        if (!naive_visible(s, r, q, k)) continue;
        double dot = 0;
        for (index_t e = 0; e < s.d(); ++e) dot += in.q.at(q, i, e) * in.k.at(k, naive_kv_head(s, r, i), e);
        m = std::max(m, r.scale * dot);
      }
      if (std::isfinite(m)) out[1].at(q, i, 0) -= m;
    }
  return out;
}

// every value of the listed outputs rounded to t (float32: t = f32)
inline Outs rounded(const Outs& base, DType t, std::array<bool, 5> which) {
  Outs out = base;
  for (size_t k = 0; k < out.size(); ++k)
    if (which[k])
      for (double& x : out[k].data)
        if (std::isfinite(x)) x = round_to(x, t);
  return out;
}

// random values on the padding tokens of O, dQ, dK, dV
inline Outs padding_garbage(const CpSpec& s, const Outs& base) {
  Outs out = base;
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  for (size_t k : {0u, 2u, 3u, 4u})
    for (index_t g = 0; g < s.S(); ++g)
      if (out[k].n > 0 && !s.packing().real(g))
        for (index_t e = 0; e < out[k].h * out[k].d; ++e) out[k].token(g)[e] = u(rng);
  return out;
}

}  // namespace cplab::test
