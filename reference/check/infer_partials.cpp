// infer_partials.cpp: partial attention of the new tokens over KV subsets, and merges (infer_partials.h).
#include "check/infer_partials.h"

#include <algorithm>
#include <limits>

#include "check/sampled_attention.h"  // gather
#include "core/merge.h"
#include "core/sinks.h"
#include "core/util.h"

namespace cplab {

namespace {

constexpr double kNegInf = -std::numeric_limits<double>::infinity();

AttnOut<double> empty_out(const InferSpec& s) {
  AttnOut<double> x{Tensor3<double>(s.T(), s.h(), s.dv()), Rows<double>(s.h(), s.T())};
  x.lse.setConstant(kNegInf);
  return x;
}

}  // namespace

std::vector<index_t> infer_query_positions(const InferSpec& s, index_t delta, bool from_zero) {
  std::vector<index_t> pos(static_cast<size_t>(s.T()));
  for (index_t b = 0; b < s.B(); ++b)
    for (index_t i = s.qoff()[static_cast<size_t>(b)]; i < s.qoff()[static_cast<size_t>(b + 1)]; ++i)
      pos[static_cast<size_t>(i)] =
          (from_zero ? 0 : s.fields().cached[static_cast<size_t>(b)]) + (i - s.qoff()[static_cast<size_t>(b)]) + delta;
  return pos;
}

AttnOut<double> infer_partial(const InferSpec& s, const Tensor3<double>& q, const Tensor3<double>& k,
                              const Tensor3<double>& v, const std::vector<index_t>& keys,
                              const std::vector<index_t>& qpos) {
  AttnOut<double> out = empty_out(s);
  const PositionRule rule = s.rule();
  for (index_t b = 0; b < s.B(); ++b) {
    const index_t q0 = s.qoff()[static_cast<size_t>(b)], q1 = s.qoff()[static_cast<size_t>(b + 1)];
    const index_t k0 = s.koff()[static_cast<size_t>(b)], k1 = s.koff()[static_cast<size_t>(b + 1)];
    const std::vector<index_t> kb(std::lower_bound(keys.begin(), keys.end(), k0),
                                  std::lower_bound(keys.begin(), keys.end(), k1));
    if (kb.empty() || q1 == q0) continue;  // no key of this request: O = 0, LSE = -inf
    const index_t len = k1 - k0, n = q1 - q0;
    std::vector<std::int64_t> lo(static_cast<size_t>(n)), hi(static_cast<size_t>(n));
    for (index_t t = 0; t < n; ++t) {
      const KeyRange r = rule.keys(qpos[static_cast<size_t>(q0 + t)], len);  // positions inside the request
      lo[static_cast<size_t>(t)] = std::lower_bound(kb.begin(), kb.end(), k0 + r.lo) - kb.begin();
      hi[static_cast<size_t>(t)] = std::max<std::int64_t>(
          lo[static_cast<size_t>(t)], std::lower_bound(kb.begin(), kb.end(), k0 + r.hi) - kb.begin());
    }
    std::vector<index_t> rows(static_cast<size_t>(n));
    for (index_t t = 0; t < n; ++t) rows[static_cast<size_t>(t)] = q0 + t;
    const AttnOut<double> part = dense_forward<double>(gather(q, rows), gather(k, kb), gather(v, kb),
                                                       Mask::ranges(std::move(lo), std::move(hi)), s.scale());
    for (index_t t = 0; t < n; ++t) {
      std::copy(part.o.token(t), part.o.token(t) + s.h() * s.dv(), out.o.token(q0 + t));
      for (index_t i = 0; i < s.h(); ++i) out.lse(i, q0 + t) = part.lse(i, t);
    }
  }
  return out;
}

AttnOut<double> merge_partials(const std::vector<AttnOut<double>>& parts) {
  require(!parts.empty(), "merge_partials needs at least one partial");
  AttnOut<double> acc{Tensor3<double>(parts[0].o.n, parts[0].o.h, parts[0].o.d),
                      Rows<double>(parts[0].lse.rows(), parts[0].lse.cols())};
  acc.lse.setConstant(kNegInf);
  for (const AttnOut<double>& p : parts)
    merge_streaming<double>(acc.o.view(), rows_view(acc.lse), 0, p.o.view(), rows_view(p.lse));
  return acc;
}

Tensor3<double> sum_partials(const std::vector<AttnOut<double>>& parts, bool mean) {
  require(!parts.empty(), "sum_partials needs at least one partial");
  Tensor3<double> o(parts[0].o.n, parts[0].o.h, parts[0].o.d);
  for (const AttnOut<double>& p : parts)
    for (size_t e = 0; e < o.data.size(); ++e) o.data[e] += p.o.data[e];
  if (mean)
    for (double& x : o.data) x /= static_cast<double>(parts.size());
  return o;
}

AttnOut<double> sinks_applied(AttnOut<double> x, const std::vector<double>& sinks) {
  if (!sinks.empty()) apply_sinks<double>(x.o.view(), rows_view(x.lse), sinks.data());
  return x;
}

std::vector<index_t> all_kv_rows(const InferSpec& s) {
  std::vector<index_t> r(static_cast<size_t>(s.KV()));
  for (index_t j = 0; j < s.KV(); ++j) r[static_cast<size_t>(j)] = j;
  return r;
}

std::vector<index_t> cache_kv_rows(const InferSpec& s) {
  std::vector<index_t> r;
  for (index_t b = 0; b < s.B(); ++b)
    for (index_t p = 0; p < s.fields().cached[static_cast<size_t>(b)]; ++p)
      r.push_back(s.koff()[static_cast<size_t>(b)] + p);
  return r;
}

}  // namespace cplab
