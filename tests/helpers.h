// helpers.h: small test utilities: seeded random tensors, the error metric (core/rel_error.h), a naive
// scalar-loop attention (the oracle's own oracle).
// What it is not: used by the library. Tests only.
#pragma once

#include <cmath>
#include <limits>
#include <random>

#include "core/dense_attention.h"
#include "core/error.h"
#include "core/rel_error.h"

namespace cplab::test {

template <class T>
Tensor3<T> random_tensor(index_t n, index_t h, index_t d, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  Tensor3<T> x(n, h, d);
  for (auto& e : x.data) e = static_cast<T>(u(rng));
  return x;
}

// the error metric of every check: core/rel_error.h (rel_error, RelError)
using cplab::rel_error;

// Scalar triple loops, straight from the definition; allowed(a, b) decides visibility.
template <class F>
void naive_attention(const Tensor3<double>& q, const Tensor3<double>& k, const Tensor3<double>& v,
                     const Tensor3<double>& dout, double scale, F allowed, Tensor3<double>& o,
                     Rows<double>& lse, Tensor3<double>& dq, Tensor3<double>& dk, Tensor3<double>& dv) {
  const index_t sq = q.n, sk = k.n, h = q.h, grp = q.h / k.h;
  o = Tensor3<double>(sq, h, v.d);
  lse = Rows<double>(h, sq);
  dq = Tensor3<double>(sq, h, q.d);
  dk = Tensor3<double>(sk, k.h, k.d);
  dv = Tensor3<double>(sk, k.h, v.d);
  for (index_t i = 0; i < h; ++i) {
    const index_t g = i / grp;
    for (index_t a = 0; a < sq; ++a) {
      std::vector<double> s(static_cast<size_t>(sk), -std::numeric_limits<double>::infinity());
      double m = -std::numeric_limits<double>::infinity();
      for (index_t b = 0; b < sk; ++b) {
        if (!allowed(a, b)) continue;
        double dot = 0;
        for (index_t e = 0; e < q.d; ++e) dot += q.at(a, i, e) * k.at(b, g, e);
        s[static_cast<size_t>(b)] = scale * dot;
        m = std::max(m, s[static_cast<size_t>(b)]);
      }
      if (m == -std::numeric_limits<double>::infinity()) {
        lse(i, a) = m;
        continue;  // O row stays 0, no gradient
      }
      double l = 0;
      for (index_t b = 0; b < sk; ++b) l += allowed(a, b) ? std::exp(s[static_cast<size_t>(b)] - m) : 0.0;
      lse(i, a) = m + std::log(l);
      std::vector<double> p(static_cast<size_t>(sk), 0.0);
      for (index_t b = 0; b < sk; ++b)
        if (allowed(a, b)) p[static_cast<size_t>(b)] = std::exp(s[static_cast<size_t>(b)] - lse(i, a));
      for (index_t b = 0; b < sk; ++b)
        for (index_t e = 0; e < v.d; ++e) o.at(a, i, e) += p[static_cast<size_t>(b)] * v.at(b, g, e);
      double D = 0;
      for (index_t e = 0; e < v.d; ++e) D += dout.at(a, i, e) * o.at(a, i, e);
      for (index_t b = 0; b < sk; ++b) {
        const double pb = p[static_cast<size_t>(b)];
        if (pb == 0) continue;
        double dp = 0;
        for (index_t e = 0; e < v.d; ++e) {
          dp += dout.at(a, i, e) * v.at(b, g, e);
          dv.at(b, g, e) += pb * dout.at(a, i, e);
        }
        const double ds = pb * (dp - D);
        for (index_t e = 0; e < q.d; ++e) {
          dq.at(a, i, e) += scale * ds * k.at(b, g, e);
          dk.at(b, g, e) += scale * ds * q.at(a, i, e);
        }
      }
    }
  }
}

}  // namespace cplab::test
