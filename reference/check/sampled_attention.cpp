// sampled_attention.cpp: recomputation on chosen rows and keys (sampled_attention.h).
#include "check/sampled_attention.h"

#include <algorithm>
#include <cmath>
#include <iterator>
#include <limits>
#include <numeric>
#include <stdexcept>

#include "check/check_inputs.h"
#include "core/attention_kernel.h"
#include "core/softmax_rules.h"
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

// a rule with another KV head count (AttnRule::kv_heads = u): the inputs with every KV head g
// replaced by head g u / hk, which the kernel's map i -> i / (h / hk) then reads as i / (h / u)
Inputs kv_remapped(const CpSpec& spec, const Inputs& in, index_t u) {
  Inputs x = in;
  for (Tensor3<double>* t : {&x.k, &x.v})
    for (index_t g = 0; g < t->n; ++g)
      for (index_t j = 0; j < t->h; ++j) {
        const index_t from = j * u / spec.hk();
        std::copy(t->token(g) + from * t->d, t->token(g) + (from + 1) * t->d, t->token(g) + j * t->d);
      }
  return x;
}

std::vector<index_t> all_tokens(index_t S) {
  std::vector<index_t> v(sz(S));
  std::iota(v.begin(), v.end(), index_t{0});
  return v;
}

}  // namespace

AttnRule true_rule(const CpSpec& spec) {
  AttnRule r;
  r.scale = spec.scale();
  return r;
}

namespace {

// the tokens [start, end) of the sequence g belongs to under b; false: g is padding (in none)
bool sequence_of(const Packing& pk, SeqBounds b, index_t g, index_t& start, index_t& end) {
  if (b == SeqBounds::real) {
    if (!pk.real(g)) return false;
    const index_t s = pk.seq_of(g);
    start = pk.cu_seqlens_padded[sz(s)], end = start + pk.length(s);
    return true;
  }
  const std::vector<index_t>& cu = b == SeqBounds::padded ? pk.cu_seqlens_padded : pk.cu_seqlens;
  if (g >= cu.back()) return false;
  const auto s = std::upper_bound(cu.begin(), cu.end(), g) - cu.begin() - 1;
  start = cu[sz(s)], end = cu[sz(s + 1)];
  return true;
}

}  // namespace

KeyRange visible_keys(const CpSpec& spec, const AttnRule& rule, index_t g) {
  index_t start = 0, end = 0;
  if (!sequence_of(spec.packing(), rule.bounds, g, start, end)) return {0, 0};
  if (rule.blocks == KvBlocks::own_unmasked) return {start, end};  // its own block: any key of its sequence
  // the run's rule (mask_rule.h: causal, window, chunk), or the rule's own, over positions in the
  // sequence; a causal shift moves the run's last key (the off-by-one faults)
  PositionRule pr = rule.positions.value_or(spec.rule());
  if (pr.window > 0) pr.window += rule.window_shift;
  const KeyRange kr = pr.keys(g - start, end - start);
  if (!pr.causal) return {start + kr.lo, start + kr.hi};
  // the shifted causal end stays inside the row's chunk (chunked attention: another chunk is masked
  // whatever the causal offset)
  const index_t c = pr.chunk, limit = c > 0 ? std::min(end, start + ((g - start) / c + 1) * c) : end;
  return {start + kr.lo, std::clamp<index_t>(start + kr.hi + rule.causal_shift, start, limit)};
}

AttnRule own_block_rule(const AttnRule& rule) {
  AttnRule r = rule;
  r.blocks = KvBlocks::all;
  r.positions = PositionRule{};  // no causal mask, window or chunk: the sequence's keys only
  r.causal_shift = r.window_shift = 0;
  return r;
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

namespace {

// query rows are handled in slices of kSlice (sorted rows: a slice's visible keys are one short run
// under a causal mask, so the kernel skips the rest; one block of every sampled row would not)
constexpr index_t kSlice = 32;

// one tile of a rule on KV blocks: some of the caller's rows against one block's keys
struct Tile {
  std::vector<index_t> rows;  // indices into the caller's rows
  std::vector<index_t> keys;  // sorted positions: the block's (among the caller's keys, if given)
  AttnRule rule;              // blocks resolved to all
};

// the keys a kernel call reads: sorted positions and their K, V (every key: the inputs', not copied)
struct KeySet {
  bool all = true;
  std::vector<index_t> pos;
  Tensor3<double> k, v;  // gathered (unless all)
  const Tensor3<double>& K(const Inputs& in) const { return all ? in.k : k; }
  const Tensor3<double>& V(const Inputs& in) const { return all ? in.v : v; }
};
// kv_from: the tokens whose K, V are read at keys' positions, one per key (null: the keys' own)
KeySet key_set(const CpSpec& spec, const Inputs& in, const std::vector<index_t>* keys,
               const std::vector<index_t>* kv_from = nullptr) {
  if (!keys && !kv_from) return KeySet{true, all_tokens(spec.S()), {}, {}};
  const std::vector<index_t> pos = keys ? *keys : all_tokens(spec.S());
  const std::vector<index_t>& from = kv_from ? *kv_from : pos;
  return KeySet{false, pos, gather(in.k, from), gather(in.v, from)};
}

// rule.blocks as tiles: the rows of each rank against each KV block they see
std::vector<Tile> block_tiles(const CpSpec& spec, const AttnRule& rule, const std::vector<index_t>& rows,
                              const std::vector<index_t>* keys) {
  const Partition& part = spec.partition();
  const index_t P = spec.P();
  std::vector<std::vector<index_t>> by_rank(sz(P));
  for (size_t a = 0; a < rows.size(); ++a) by_rank[sz(part.owner(rows[a]).rank)].push_back(static_cast<index_t>(a));
  AttnRule other = rule;
  other.blocks = KvBlocks::all;
  std::vector<Tile> tiles;
  for (index_t j = 0; j < P; ++j) {
    std::vector<index_t> block = part.indices(j), mine;
    std::sort(block.begin(), block.end());
    if (keys) std::set_intersection(block.begin(), block.end(), keys->begin(), keys->end(), std::back_inserter(mine));
    else mine = std::move(block);
    for (index_t r = 0; r < P; ++r) {
      if (by_rank[sz(r)].empty() || mine.empty() || (rule.blocks == KvBlocks::own_only && r != j)) continue;
      tiles.push_back({by_rank[sz(r)], mine, r == j && rule.blocks == KvBlocks::own_unmasked ? own_block_rule(rule) : other});
    }
  }
  return tiles;
}

std::vector<index_t> pick(const std::vector<index_t>& v, const std::vector<index_t>& at) {
  std::vector<index_t> out;
  for (index_t a : at) out.push_back(v[sz(a)]);
  return out;
}

// x's token a += y's token b, for each a = at[b]
void add_at(Tensor3<double>& x, const Tensor3<double>& y, const std::vector<index_t>& at) {
  for (size_t b = 0; b < at.size(); ++b)
    for (index_t e = 0; e < x.h * x.d; ++e) x.token(at[b])[e] += y.token(static_cast<index_t>(b))[e];
}

// forward_at for a rule with blocks all, without sinks
RowsOut forward_tile(const CpSpec& spec, const Inputs& in, const AttnRule& rule, const std::vector<index_t>& rows,
                     const std::vector<index_t>* keys) {
  const std::vector<index_t> perm = head_order(spec, rule);
  const KeySet ks = key_set(spec, in, keys);
  const std::vector<index_t>& k = ks.pos;
  const Tensor3<double>& K = ks.K(in);
  const Tensor3<double>& V = ks.V(in);
  const Tensor3<double> q = heads_to(gather(in.q, rows), perm, false);
  AttnOut<double> f{Tensor3<double>(q.n, q.h, V.d), Rows<double>(q.h, q.n)};
  for (index_t a0 = 0; a0 < q.n; a0 += kSlice) {
    const index_t n = std::min(kSlice, q.n - a0);
    const std::vector<index_t> slice(rows.begin() + a0, rows.begin() + a0 + n);
    attention_forward<double>(q.view().rows(a0, n), K.view(), V.view(), rule_mask(spec, rule, slice, k), rule.scale,
                              f.o.view().rows(a0, n), rows_view(f.lse, a0, n));
  }
  return RowsOut{heads_to(f.o, perm, true), heads_to(lse_tensor(f.lse), perm, true)};
}

// dq_at for a rule with blocks all, over `keys` (sorted; null: all), K and V read from kv_from's tokens
Tensor3<double> dq_tile(const CpSpec& spec, const Inputs& in, const AttnRule& rule, const std::vector<index_t>& rows,
                        const RowsOut& fwd, const std::vector<index_t>* keys, const std::vector<index_t>* kv_from) {
  const std::vector<index_t> perm = head_order(spec, rule);
  const Tensor3<double> q = heads_to(gather(in.q, rows), perm, false), dout = heads_to(gather(in.dout, rows), perm, false);
  const Tensor3<double> o = heads_to(fwd.o, perm, false);
  const Rows<double> lse = lse_rows(heads_to(fwd.lse, perm, false));
  const Rows<double> delta = softmax_delta<double>(o.view(), dout.view());
  const KeySet ks = key_set(spec, in, keys, kv_from);
  const std::vector<index_t>& k = ks.pos;
  const Tensor3<double>& K = ks.K(in);
  const Tensor3<double>& V = ks.V(in);
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

// dkv_at for a rule with blocks all
KeyGrads dkv_tile(const CpSpec& spec, const Inputs& in, const AttnRule& rule, const std::vector<index_t>& queries,
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

}  // namespace

RowsOut forward_at(const CpSpec& spec, const Inputs& in, const AttnRule& rule, const std::vector<index_t>& rows,
                   const std::vector<index_t>* keys) {
  if (rule.kv_heads > 0) {
    AttnRule r = rule;
    r.kv_heads = 0;
    return forward_at(spec, kv_remapped(spec, in, rule.kv_heads), r, rows, keys);
  }
  RowsOut out;
  if (rule.blocks == KvBlocks::all) {
    out = forward_tile(spec, in, rule, rows, keys);
  } else {  // the tiles' partials merged per row
    const index_t n = static_cast<index_t>(rows.size());
    out = RowsOut{Tensor3<double>(n, spec.h(), spec.dv()), Tensor3<double>(n, spec.h(), 1)};
    std::fill(out.lse.data.begin(), out.lse.data.end(), -std::numeric_limits<double>::infinity());
    for (const Tile& t : block_tiles(spec, rule, rows, keys)) {
      const RowsOut p = forward_tile(spec, in, t.rule, pick(rows, t.rows), &t.keys);
      for (size_t b = 0; b < t.rows.size(); ++b) {
        const index_t a = t.rows[b], pb = static_cast<index_t>(b);
        for (index_t i = 0; i < spec.h(); ++i) {
          const double la = out.lse.at(a, i, 0), lb = p.lse.at(pb, i, 0), l = lse_merge(la, lb);
          const double wa = merge_weight(la, l), wb = merge_weight(lb, l);
          for (index_t e = 0; e < spec.dv(); ++e) out.o.at(a, i, e) = wa * out.o.at(a, i, e) + wb * p.o.at(pb, i, e);
          out.lse.at(a, i, 0) = l;
        }
      }
    }
  }
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
  if (rule.kv_heads > 0) {
    AttnRule r = rule;
    r.kv_heads = 0;
    return dq_at(spec, kv_remapped(spec, in, rule.kv_heads), r, rows, fwd, keys, kv_from);
  }
  if (rule.blocks == KvBlocks::all) return dq_tile(spec, in, rule, rows, fwd, keys, kv_from);
  if (keys || kv_from) throw std::logic_error("dq_at: a rule on KV blocks takes every key, read from its own position");
  Tensor3<double> dq(static_cast<index_t>(rows.size()), spec.h(), spec.d());
  for (const Tile& t : block_tiles(spec, rule, rows, nullptr)) {
    const RowsOut f{gather(fwd.o, t.rows), gather(fwd.lse, t.rows)};
    add_at(dq, dq_tile(spec, in, t.rule, pick(rows, t.rows), f, &t.keys, nullptr), t.rows);
  }
  return dq;
}

KeyGrads dkv_at(const CpSpec& spec, const Inputs& in, const AttnRule& rule, const std::vector<index_t>& queries,
                const RowsOut& fwd, const std::vector<index_t>& keys) {
  if (rule.kv_heads > 0) {  // the remapped heads' gradients summed back into the heads they read
    AttnRule r = rule;
    r.kv_heads = 0;
    const KeyGrads x = dkv_at(spec, kv_remapped(spec, in, rule.kv_heads), r, queries, fwd, keys);
    KeyGrads g{Tensor3<double>(x.dk.n, x.dk.h, x.dk.d), Tensor3<double>(x.dv.n, x.dv.h, x.dv.d)};
    for (auto [from, to] : {std::pair{&x.dk, &g.dk}, std::pair{&x.dv, &g.dv}})
      for (index_t t = 0; t < from->n; ++t)
        for (index_t j = 0; j < from->h; ++j)
          for (index_t e = 0; e < from->d; ++e) to->at(t, j * rule.kv_heads / spec.hk(), e) += from->at(t, j, e);
    return g;
  }
  if (rule.blocks == KvBlocks::all) return dkv_tile(spec, in, rule, queries, fwd, keys);
  const index_t nk = static_cast<index_t>(keys.size());
  KeyGrads g{Tensor3<double>(nk, spec.hk(), spec.d()), Tensor3<double>(nk, spec.hk(), spec.dv())};
  for (const Tile& t : block_tiles(spec, rule, queries, &keys)) {
    const RowsOut f{gather(fwd.o, t.rows), gather(fwd.lse, t.rows)};
    const KeyGrads p = dkv_tile(spec, in, t.rule, pick(queries, t.rows), f, t.keys);
    std::vector<index_t> where;  // t.keys' places in keys
    for (index_t k : t.keys) where.push_back(std::lower_bound(keys.begin(), keys.end(), k) - keys.begin());
    add_at(g.dk, p.dk, where);
    add_at(g.dv, p.dv, where);
  }
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
