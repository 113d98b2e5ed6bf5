// check_faults_outputs.h: faulty outputs made from correct ones for the check tests
// (tests/test_check_outputs.cpp, tests/test_check_pairs.cpp): a KV group's gradient reduced by mean,
// an output times a factor per head, an LSE re-read from a buffer written in another layout.
// What it is: plain loops from the definitions, independent of reference/check/.
// What it is not: shipped (tests only), or the faults of the attention rule (check_faults.h).
#pragma once

#include <algorithm>
#include <cmath>
#include <functional>
#include <vector>

#include "check_faults.h"
#include "core/util.h"

namespace cplab::test {

// dK and dV with each KV group's gradient reduced by mean over its query heads instead of summed:
// every query head's own dK_i, dV_i (from the O and LSE the backward reads), then averaged per group
inline Outs kv_group_mean(const CpSpec& s, const Inputs& in, const Outs& base) {
  const index_t S = s.S(), h = s.h(), G = s.h() / s.hk();
  Tensor3<double> dk(S, h, s.d()), dv(S, h, s.dv());  // per query head
  for (index_t i = 0; i < h; ++i)
    for (index_t q = 0; q < S; ++q) {
      const index_t g = i / G;
      const double L = base[1].at(q, i, 0);
      if (!std::isfinite(L)) continue;
      double D = 0;
      for (index_t e = 0; e < s.dv(); ++e) D += in.dout.at(q, i, e) * base[0].at(q, i, e);
      for (index_t k = 0; k < S; ++k) {
        if (!naive_visible(s, NaiveRule{s.scale(), 0, false}, q, k)) continue;
        double dot = 0, dp = 0;
        for (index_t e = 0; e < s.d(); ++e) dot += in.q.at(q, i, e) * in.k.at(k, g, e);
        for (index_t e = 0; e < s.dv(); ++e) dp += in.dout.at(q, i, e) * in.v.at(k, g, e);
        const double p = std::exp(s.scale() * dot - L), ds = p * (dp - D);
        for (index_t e = 0; e < s.dv(); ++e) dv.at(k, i, e) += p * in.dout.at(q, i, e);
        for (index_t e = 0; e < s.d(); ++e) dk.at(k, i, e) += s.scale() * ds * in.q.at(q, i, e);
      }
    }
  Outs out = base;
  for (Tensor3<double>* x : {&out[3], &out[4]}) std::fill(x->data.begin(), x->data.end(), 0.0);
  for (index_t k = 0; k < S; ++k)
    for (index_t i = 0; i < h; ++i) {
      for (index_t e = 0; e < s.d(); ++e) out[3].at(k, i / G, e) += dk.at(k, i, e) / static_cast<double>(G);
      for (index_t e = 0; e < s.dv(); ++e) out[4].at(k, i / G, e) += dv.at(k, i, e) / static_cast<double>(G);
    }
  return out;
}

// output t times f(head)
inline Outs scaled(const Outs& base, size_t t, const std::function<double(index_t)>& f) {
  Outs out = base;
  Tensor3<double>& x = out[t];
  for (index_t g = 0; g < x.n; ++g)
    for (index_t i = 0; i < x.h; ++i)
      for (index_t e = 0; e < x.d; ++e) x.at(g, i, e) *= f(i);
  return out;
}

// the LSE a reader gets from a flat buffer of `size` values (`fill` where nothing was written) into
// which the writer put LSE(token g, head i) at offset(i, g), read as (heads, seq) from its start
inline Outs lse_reread(const CpSpec& s, const Outs& base, index_t size, double fill, const std::function<index_t(index_t, index_t)>& offset) {
  const index_t S = s.S(), h = s.h();
  std::vector<double> buf(sz(std::max(size, h * S)), fill);
  for (index_t i = 0; i < h; ++i)
    for (index_t g = 0; g < S; ++g)
      if (offset(i, g) >= 0) buf[sz(offset(i, g))] = base[1].at(g, i, 0);
  Outs out = base;
  for (index_t i = 0; i < h; ++i)
    for (index_t g = 0; g < S; ++g) out[1].at(g, i, 0) = buf[sz(i * S + g)];
  return out;
}

}  // namespace cplab::test
