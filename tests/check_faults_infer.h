// check_faults_infer.h: faulty inference outputs for tests/test_check_infer.cpp, each made from the
// fault's own definition with scalar loops.
//
// What it is: naive_infer, attention of every new token written from the definitions (a query of
// request b at a given position sees key j of its request, at position j - koff_b, iff the mask
// rule written out below allows it and j is in the allowed key set; softmax with the sink, if any,
// in the denominator; a row that sees no key is O = 0, LSE = -inf), and the faults of issue 37
// item 5 built from it and from the spec's ownership (kv_rows, cache_rows, q_rows): positions from
// 0 or off by one, per-rank partials summed or averaged without their LSE weights, one rank's cache
// shard missing, the new tokens' KV not appended, the closing all-to-all shifted by s. Nothing here
// calls the code under test (reference/check/): no Mask, no merge, no infer_partials.h.
// What it is not: shipped. The library never injects a fault; tests only.
#pragma once

#include <cmath>
#include <limits>
#include <set>
#include <vector>

#include "core/tensor.h"
#include "infer/infer_spec.h"

namespace cplab::test {

struct NaiveOut {
  Tensor3<double> o;  // (T, h, dv)
  Rows<double> lse;   // (h, T)
};

inline index_t floor_div(index_t a, index_t b) { return a >= 0 ? a / b : -((-a + b - 1) / b); }

// the mask of infer_spec.h's PositionRule, written from its definition (mask_rule.h's comment)
inline bool naive_sees(const InferSpec& s, index_t qp, index_t kp) {
  const InferFields& f = s.fields();
  if (f.chunk) return kp <= qp && floor_div(qp, *f.chunk) == floor_div(kp, *f.chunk);
  if (f.window) return f.causal ? (qp - *f.window < kp && kp <= qp) : std::abs(qp - kp) < *f.window;
  return !f.causal || kp <= qp;
}

// every new token over the KV rows in `keys` at positions qpos (T entries); sinks: (h) or empty,
// in every row's denominator
inline NaiveOut naive_infer(const InferSpec& s, const Tensor3<double>& q, const Tensor3<double>& k,
                            const Tensor3<double>& v, const std::set<index_t>& keys, const std::vector<index_t>& qpos,
                            const std::vector<double>& sinks) {
  NaiveOut r{Tensor3<double>(s.T(), s.h(), s.dv()), Rows<double>(s.h(), s.T())};
  const index_t g = s.h() / s.hk();
  for (index_t b = 0; b < s.B(); ++b)
    for (index_t i = s.qoff()[size_t(b)]; i < s.qoff()[size_t(b + 1)]; ++i)
      for (index_t a = 0; a < s.h(); ++a) {
        std::vector<std::pair<double, index_t>> sc;
        for (index_t j = s.koff()[size_t(b)]; j < s.koff()[size_t(b + 1)]; ++j) {
          if (!keys.count(j) || !naive_sees(s, qpos[size_t(i)], j - s.koff()[size_t(b)])) continue;
          double dot = 0;
          for (index_t e = 0; e < s.d(); ++e) dot += q.at(i, a, e) * k.at(j, a / g, e);
          sc.emplace_back(s.scale() * dot, j);
        }
        if (sc.empty()) {
          r.lse(a, i) = -std::numeric_limits<double>::infinity();
          continue;
        }
        double m = -std::numeric_limits<double>::infinity(), l = 0;
        for (auto& [x, j] : sc) m = std::max(m, x);
        if (!sinks.empty()) m = std::max(m, sinks[size_t(a)]);
        for (auto& [x, j] : sc) l += std::exp(x - m);
        if (!sinks.empty()) l += std::exp(sinks[size_t(a)] - m);
        for (auto& [x, j] : sc)
          for (index_t e = 0; e < s.dv(); ++e) r.o.at(i, a, e) += std::exp(x - m) / l * v.at(j, a / g, e);
        r.lse(a, i) = m + std::log(l);
      }
  return r;
}

inline std::vector<index_t> naive_positions(const InferSpec& s, index_t delta, bool from_zero) {
  std::vector<index_t> p;
  for (index_t b = 0; b < s.B(); ++b)
    for (index_t t = 0; t < s.fields().fresh[size_t(b)]; ++t)
      p.push_back((from_zero ? 0 : s.fields().cached[size_t(b)]) + t + delta);
  return p;
}

inline std::set<index_t> key_set(const std::vector<index_t>& rows) {
  return std::set<index_t>(rows.begin(), rows.end());
}

inline std::set<index_t> all_keys(const InferSpec& s) {
  std::set<index_t> k;
  for (index_t j = 0; j < s.KV(); ++j) k.insert(j);
  return k;
}

// the partials of every rank (its KV shard), summed (or averaged over N) without LSE weights; the
// sinks then scale the sum as they scale any final row: O exp(L - logaddexp(L, s_h)), L the true LSE
// without sinks. LSE: the true one with sinks.
inline NaiveOut naive_partials_summed(const InferSpec& s, const Tensor3<double>& q, const Tensor3<double>& k,
                                      const Tensor3<double>& v, const std::vector<double>& sinks, bool mean) {
  const std::vector<index_t> pos = naive_positions(s, 0, false);
  NaiveOut r = naive_infer(s, q, k, v, all_keys(s), pos, sinks);
  const NaiveOut plain = naive_infer(s, q, k, v, all_keys(s), pos, {});
  std::fill(r.o.data.begin(), r.o.data.end(), 0.0);
  for (index_t rank = 0; rank < s.N(); ++rank) {
    const NaiveOut p = naive_infer(s, q, k, v, key_set(s.kv_rows(rank)), pos, {});
    for (size_t e = 0; e < r.o.data.size(); ++e) r.o.data[e] += p.o.data[e] / (mean ? double(s.N()) : 1.0);
  }
  if (!sinks.empty())
    for (index_t i = 0; i < s.T(); ++i)
      for (index_t a = 0; a < s.h(); ++a) {
        const double L = plain.lse(a, i);
        if (!std::isfinite(L)) continue;
        const double w = 1.0 / (1.0 + std::exp(sinks[size_t(a)] - L));
        for (index_t e = 0; e < s.dv(); ++e) r.o.at(i, a, e) *= w;
      }
  return r;
}

// the correct rows of owner (j + shift) mod N on owner j; past its last row: O = 0, LSE = -inf
inline NaiveOut naive_wrong_owner(const InferSpec& s, const NaiveOut& right, index_t shift) {
  NaiveOut r{Tensor3<double>(s.T(), s.h(), s.dv()), Rows<double>(s.h(), s.T())};
  for (index_t j = 0; j < s.N(); ++j) {
    const std::vector<index_t>&mine = s.q_rows(j), &theirs = s.q_rows((j + shift) % s.N());
    for (size_t i = 0; i < mine.size(); ++i)
      for (index_t a = 0; a < s.h(); ++a) {
        r.lse(a, mine[i]) = i < theirs.size() ? right.lse(a, theirs[i]) : -std::numeric_limits<double>::infinity();
        for (index_t e = 0; e < s.dv(); ++e)
          r.o.at(mine[i], a, e) = i < theirs.size() ? right.o.at(theirs[i], a, e) : 0.0;
      }
  }
  return r;
}

}  // namespace cplab::test
