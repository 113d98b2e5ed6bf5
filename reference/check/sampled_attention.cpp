// sampled_attention.cpp: recomputation on chosen rows and keys (sampled_attention.h).
#include "check/sampled_attention.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "check/check_inputs.h"
#include "core/attention_kernel.h"
#include "core/sinks.h"
#include "core/util.h"

namespace cplab {

namespace {

// head_mod: the order of query heads that makes the kernel's map j -> j / g read KV head
// old_head % hk: new head j is old head perm[j] = (j % g) * hk + j / g
std::vector<index_t> head_order(const CpSpec& spec, const AttnRule& rule) {
  std::vector<index_t> perm(sz(spec.h()));
  const index_t g = spec.h() / spec.hk();
  for (index_t j = 0; j < spec.h(); ++j) perm[sz(j)] = rule.head_mod ? (j % g) * spec.hk() + j / g : j;
  return perm;
}

// x's heads in `perm` order (y[:, j] = x[:, perm[j]]), or back (x[:, perm[j]] = y[:, j])
Tensor3<double> heads_to(const Tensor3<double>& x, const std::vector<index_t>& perm, bool back) {
  Tensor3<double> y(x.n, x.h, x.d);
  for (index_t t = 0; t < x.n; ++t)
    for (index_t j = 0; j < x.h; ++j) {
      const index_t from = back ? j : perm[sz(j)], to = back ? perm[sz(j)] : j;
      std::copy(x.token(t) + from * x.d, x.token(t) + (from + 1) * x.d, y.token(t) + to * x.d);
    }
  return y;
}

std::vector<index_t> all_tokens(index_t S) {
  std::vector<index_t> v(sz(S));
  std::iota(v.begin(), v.end(), index_t{0});
  return v;
}

}  // namespace

AttnRule true_rule(const CpSpec& spec) { return AttnRule{spec.scale(), 0, false}; }

KeyRange visible_keys(const CpSpec& spec, const AttnRule& rule, index_t g) {
  const Packing& pk = spec.packing();
  if (!pk.real(g)) return {0, 0};
  const index_t s = pk.seq_of(g), start = pk.cu_seqlens_padded[sz(s)], end = start + pk.length(s);
  // the run's rule (mask_rule.h: causal, window, chunk) over positions in the sequence; a causal
  // shift moves the run's last key (the off-by-one faults)
  PositionRule pr = spec.rule();
  if (pr.window > 0) pr.window += rule.window_shift;
  const KeyRange kr = pr.keys(g - start, end - start);
  if (!spec.causal()) return {start + kr.lo, start + kr.hi};
  // the shifted causal end stays inside the row's chunk (chunked attention: another chunk is masked
  // whatever the causal offset)
  const index_t c = pr.chunk, limit = c > 0 ? std::min(end, start + ((g - start) / c + 1) * c) : end;
  return {start + kr.lo, std::clamp<index_t>(start + kr.hi + rule.causal_shift, start, limit)};
}

Mask rule_mask(const CpSpec& spec, const AttnRule& rule, const std::vector<index_t>& q, const std::vector<index_t>& k) {
  std::vector<std::int64_t> lo(q.size()), hi(q.size());
  for (size_t a = 0; a < q.size(); ++a) {
    const KeyRange r = visible_keys(spec, rule, q[a]);
    lo[a] = std::lower_bound(k.begin(), k.end(), r.lo) - k.begin();
    hi[a] = std::lower_bound(k.begin(), k.end(), r.hi) - k.begin();
    if (hi[a] <= lo[a]) lo[a] = hi[a] = 0;
  }
  return Mask::ranges(std::move(lo), std::move(hi));
}

Tensor3<double> gather(const Tensor3<double>& x, const std::vector<index_t>& positions) {
  Tensor3<double> y(static_cast<index_t>(positions.size()), x.h, x.d);
  for (size_t a = 0; a < positions.size(); ++a)
    std::copy(x.token(positions[a]), x.token(positions[a]) + x.h * x.d, y.token(static_cast<index_t>(a)));
  return y;
}

// query rows are handled in slices of kSlice (sorted rows: a slice's visible keys are one short run
// under a causal mask, so the kernel skips the rest; one block of every sampled row would not)
constexpr index_t kSlice = 32;

RowsOut forward_at(const CpSpec& spec, const Inputs& in, const AttnRule& rule, const std::vector<index_t>& rows,
                   const std::vector<index_t>* keys) {
  const std::vector<index_t> perm = head_order(spec, rule);
  const std::vector<index_t> all = keys ? std::vector<index_t>() : all_tokens(spec.S());
  const std::vector<index_t>& k = keys ? *keys : all;
  const Tensor3<double> q = heads_to(gather(in.q, rows), perm, false);
  const Tensor3<double> kk = keys ? gather(in.k, k) : Tensor3<double>(), vv = keys ? gather(in.v, k) : Tensor3<double>();
  const Tensor3<double>& K = keys ? kk : in.k;
  const Tensor3<double>& V = keys ? vv : in.v;
  AttnOut<double> f{Tensor3<double>(q.n, q.h, V.d), Rows<double>(q.h, q.n)};
  for (index_t a0 = 0; a0 < q.n; a0 += kSlice) {
    const index_t n = std::min(kSlice, q.n - a0);
    const std::vector<index_t> slice(rows.begin() + a0, rows.begin() + a0 + n);
    attention_forward<double>(q.view().rows(a0, n), K.view(), V.view(), rule_mask(spec, rule, slice, k), rule.scale,
                              f.o.view().rows(a0, n), rows_view(f.lse, a0, n));
  }
  RowsOut out{heads_to(f.o, perm, true), heads_to(lse_tensor(f.lse), perm, true)};
  if (!keys && !in.sinks.empty()) apply_row_sinks(out, in.sinks);  // a partial (a key subset) has no sink
  return out;
}

void apply_row_sinks(RowsOut& x, const std::vector<double>& sinks) {
  Rows<double> lse = lse_rows(x.lse);
  apply_sinks<double>(x.o.view(), rows_view(lse), sinks.data());
  x.lse = lse_tensor(lse);
}

Tensor3<double> score_max_at(const CpSpec& spec, const Inputs& in, const AttnRule& rule, const std::vector<index_t>& rows,
                             const std::vector<index_t>* keys) {
  const index_t h = spec.h(), group = spec.h() / spec.hk();
  const std::vector<index_t> all = keys ? std::vector<index_t>() : all_tokens(spec.S());
  const std::vector<index_t>& k = keys ? *keys : all;
  const Tensor3<double> kk = keys ? gather(in.k, k) : Tensor3<double>();
  const Tensor3<double>& K = keys ? kk : in.k;
  const Tensor3<double> q = gather(in.q, rows);
  // the visible keys of row a, as indices into k
  auto range = [&](index_t a) {
    const KeyRange r = visible_keys(spec, rule, rows[sz(a)]);
    const index_t lo = std::lower_bound(k.begin(), k.end(), r.lo) - k.begin(), hi = std::lower_bound(k.begin(), k.end(), r.hi) - k.begin();
    return KeyRange{lo, std::max(lo, hi)};
  };
  Tensor3<double> m(q.n, h, 1);
  for (index_t a0 = 0; a0 < q.n; a0 += kSlice) {
    const index_t n = std::min(kSlice, q.n - a0);
    KeyRange kb{K.n, 0};  // the keys any row of the slice sees
    for (index_t a = a0; a < a0 + n; ++a) {
      const KeyRange r = range(a);
      if (r.lo < r.hi) kb.lo = std::min(kb.lo, r.lo), kb.hi = std::max(kb.hi, r.hi);
    }
    for (index_t i = 0; i < h; ++i) {
      const index_t kv = rule.head_mod ? i % spec.hk() : i / group;
      Mat<double> sc;
      if (kb.lo < kb.hi) sc = rule.scale * (head(q.view().rows(a0, n), i) * head(K.view().rows(kb.lo, kb.hi - kb.lo), kv).transpose());
      for (index_t a = 0; a < n; ++a) {
        const KeyRange r = range(a0 + a);
        m.at(a0 + a, i, 0) = r.lo < r.hi ? sc.row(a).segment(r.lo - kb.lo, r.hi - r.lo).maxCoeff() : -std::numeric_limits<double>::infinity();
      }
    }
  }
  return m;
}

Tensor3<double> dq_at(const CpSpec& spec, const Inputs& in, const AttnRule& rule, const std::vector<index_t>& rows,
                      const RowsOut& fwd, const std::vector<index_t>* keys, const std::vector<index_t>* kv_from) {
  const std::vector<index_t> perm = head_order(spec, rule);
  const Tensor3<double> q = heads_to(gather(in.q, rows), perm, false), dout = heads_to(gather(in.dout, rows), perm, false);
  const Tensor3<double> o = heads_to(fwd.o, perm, false);
  const Rows<double> lse = lse_rows(heads_to(fwd.lse, perm, false));
  const Rows<double> delta = softmax_delta<double>(o.view(), dout.view());
  const std::vector<index_t> all = keys ? std::vector<index_t>() : all_tokens(spec.S());
  const std::vector<index_t>& k = keys ? *keys : all;
  const std::vector<index_t>* from = kv_from ? kv_from : keys;  // the tokens read at k's positions
  const Tensor3<double> kk = from ? gather(in.k, *from) : Tensor3<double>(), vv = from ? gather(in.v, *from) : Tensor3<double>();
  const Tensor3<double>& K = from ? kk : in.k;
  const Tensor3<double>& V = from ? vv : in.v;
  Tensor3<double> dq(q.n, q.h, q.d), dk(K.n, K.h, K.d), dv(V.n, V.h, V.d);  // dk, dv: partial, unused
  for (index_t a0 = 0; a0 < q.n; a0 += kSlice) {
    const index_t n = std::min(kSlice, q.n - a0);
    const std::vector<index_t> slice(rows.begin() + a0, rows.begin() + a0 + n);
    attention_backward<double>(q.view().rows(a0, n), K.view(), V.view(), dout.view().rows(a0, n), rows_view(lse, a0, n),
                               rows_view(delta, a0, n), rule_mask(spec, rule, slice, k), rule.scale, dq.view().rows(a0, n),
                               dk.view(), dv.view());
  }
  return heads_to(dq, perm, true);
}

KeyGrads dkv_at(const CpSpec& spec, const Inputs& in, const AttnRule& rule, const std::vector<index_t>& queries,
                const RowsOut& fwd, const std::vector<index_t>& keys) {
  const std::vector<index_t> perm = head_order(spec, rule);
  const Tensor3<double> q = heads_to(gather(in.q, queries), perm, false), dout = heads_to(gather(in.dout, queries), perm, false);
  const Tensor3<double> o = heads_to(fwd.o, perm, false);
  const Rows<double> lse = lse_rows(heads_to(fwd.lse, perm, false));
  const Rows<double> delta = softmax_delta<double>(o.view(), dout.view());
  const Tensor3<double> k = gather(in.k, keys), v = gather(in.v, keys);
  Tensor3<double> dq(q.n, q.h, q.d);  // partial, unused
  KeyGrads g{Tensor3<double>(k.n, k.h, k.d), Tensor3<double>(v.n, v.h, v.d)};
  attention_backward<double>(q.view(), k.view(), v.view(), dout.view(), rows_view(lse), rows_view(delta),
                             rule_mask(spec, rule, queries, keys), rule.scale, dq.view(), g.dk.view(), g.dv.view());
  return g;
}

std::vector<RowsOut> block_partials(const CpSpec& spec, const Inputs& in, const std::vector<index_t>& rows) {
  std::vector<RowsOut> parts;
  for (index_t j = 0; j < spec.P(); ++j) {
    std::vector<index_t> keys = spec.partition().indices(j);
    std::sort(keys.begin(), keys.end());
    parts.push_back(forward_at(spec, in, true_rule(spec), rows, &keys));
  }
  return parts;
}

}  // namespace cplab
