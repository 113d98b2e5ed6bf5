// faults_transform.cpp: the hypotheses whose prediction is a transform of the reference outputs
// (hypotheses.h): tokens in another layout's order, dK / dV swapped, summed or shifted by a rank,
// LSE in base 2, LSE written in another layout than the one read (a [tokens, heads] buffer, a
// per-head stride rounded up, or per-sequence padding, read flat as (heads, tokens): issue 38),
// padding tokens not zero. Every prediction covers every token.
// What it is not: anything that recomputes attention (faults_recompute.cpp).
#include <algorithm>
#include <cmath>
#include <optional>

#include "check/hypotheses.h"
#include "core/error.h"
#include "core/util.h"

namespace cplab {

std::optional<std::vector<index_t>> layout_source(const CpSpec& spec, Layout held, Layout placed) {
  const std::vector<index_t>& cu = spec.partition().cu_padded();
  std::optional<Partition> ph, pp;
  try {
    ph.emplace(held, cu, spec.P());
    pp.emplace(placed, cu, spec.P());
  } catch (const Error&) {
    return std::nullopt;  // the sequence lengths do not fit that layout
  }
  std::vector<index_t> src(sz(spec.S()));
  for (index_t g = 0; g < spec.S(); ++g) {
    const RankLocal rl = pp->owner(g);
    src[sz(g)] = ph->global(rl.rank, rl.local);
  }
  return src;
}

std::vector<index_t> rank_shift_source(const CpSpec& spec, index_t shift) {
  const Partition& part = spec.partition();
  const index_t P = spec.P();
  std::vector<index_t> src(sz(spec.S()));
  for (index_t g = 0; g < spec.S(); ++g) {
    const RankLocal rl = part.owner(g);
    src[sz(g)] = part.global(((rl.rank + shift) % P + P) % P, rl.local);
  }
  return src;
}

namespace {

// ---- tokens in another layout's order ----------------------------------------------------------

// rank r's buffer holds layout `held`'s tokens but was placed at layout `placed`'s positions:
// out[placed.global(r, l)] = ref[held.global(r, l)]
void layout_order(CheckContext& c) {
  const CpSpec& spec = c.spec;
  if (!c.worth({CheckTensor::o, CheckTensor::lse, CheckTensor::dq, CheckTensor::dk, CheckTensor::dv}, "layout order")) return;
  for (CheckTensor t : kAllCheckTensors)
    if (c.frozen[idx(t)] && c.present(t)) return;  // a permutation of the tokens moves every output
  const Layout all[] = {Layout::contiguous, Layout::zigzag, Layout::striped};
  for (Layout held : all)
    for (Layout placed : all) {
      if (held == placed) continue;
      const std::optional<std::vector<index_t>> from = layout_source(spec, held, placed);
      if (!from) continue;
      const std::vector<index_t>& src = *from;
      Hypothesis h;
      const std::string H = to_string(held), Pl = to_string(placed);
      h.id = "layout_order:" + H + "_placed_as_" + Pl;
      h.priority = 10;
      h.method = "the reference's tokens permuted";
      const bool shards = c.data.out[idx(CheckTensor::o)].shards;
      if (shards && placed == spec.layout()) {
        h.name = "tokens out of order: the rank{r} shards hold the " + H + " layout's tokens, not the " + Pl + " layout's (--layout)";
        h.spec_hint = "--layout " + H;
      }
      else if (held == spec.layout() && placed == Layout::contiguous)
        h.name = "tokens out of order: the ranks' local " + H + " buffers concatenated instead of placed in global order";
      else if (held == Layout::contiguous && placed == spec.layout())
        h.name = "tokens out of order: outputs already in global order placed again as " + Pl + " rank buffers";
      else
        h.name = "tokens out of order: rank buffers holding the " + H + " layout's tokens placed at the " + Pl + " layout's positions";
      for (CheckTensor t : kAllCheckTensors) {
        if (!c.present(t)) continue;
        const Tensor3<double>& r = c.ref[idx(t)];
        Tensor3<double> x(r.n, r.h, r.d);
        for (index_t g = 0; g < r.n; ++g) std::copy(r.token(src[sz(g)]), r.token(src[sz(g)]) + r.h * r.d, x.token(g));
        h.pred[idx(t)] = faulted(std::move(x));
      }
      c.add(h);
    }
}

// ---- dK and dV mixed up -------------------------------------------------------------------------

// what a dK or dV output holds: the reference's dK, dV or dK + dV, of the rank `shift` after its own
struct Source {
  int what = 0;  // 0 dK, 1 dV, 2 dK + dV
  int shift = 0;
  bool operator==(const Source&) const = default;
};

std::string describe(Source s) {
  static const char* const w[] = {"dK", "dV", "dK + dV"};
  return std::string(w[s.what]) + (s.shift == 0 ? "" : s.shift > 0 ? " of rank r+1" : " of rank r-1");
}

Tensor3<double> source_tensor(const CheckContext& c, Source s) {
  const Tensor3<double>& dk = c.ref[idx(CheckTensor::dk)];
  const Tensor3<double>& dv = c.ref[idx(CheckTensor::dv)];
  const Tensor3<double>& base = s.what == 1 ? dv : dk;
  Tensor3<double> x(base.n, base.h, base.d);
  const std::vector<index_t> src = rank_shift_source(c.spec, s.shift);
  const index_t row = base.h * base.d;
  for (index_t g = 0; g < base.n; ++g) {
    const index_t from = src[sz(g)];
    for (index_t e = 0; e < row; ++e)
      x.token(g)[e] = s.what == 0 ? dk.token(from)[e] : s.what == 1 ? dv.token(from)[e] : dk.token(from)[e] + dv.token(from)[e];
  }
  return x;
}

void dkv_mixups(CheckContext& c) {
  if (!c.present(CheckTensor::dk) || !c.worth({CheckTensor::dk, CheckTensor::dv}, "dK/dV mix-ups")) return;
  const bool same = c.spec.d() == c.spec.dv();  // dK and dV can only trade places when their shapes agree
  const index_t P = c.spec.P();
  // whether output t (dK or dV) can hold s
  auto valid = [&](CheckTensor t, Source s) {
    if (s.shift != 0 && (P == 1 || (s.shift < 0 && P == 2))) return false;  // no other rank; r-1 = r+1
    return same || s.what == (t == CheckTensor::dk ? 0 : 1);
  };
  const Source self_k{0, 0}, self_v{1, 0};
  // the hypothesis that dK holds sk and dV holds sv
  auto test = [&](Source sk, Source sv, const std::string& id, const std::string& name, int priority) {
    if (!valid(CheckTensor::dk, sk) || !valid(CheckTensor::dv, sv) || (sk == self_k && sv == self_v)) return;
    Hypothesis h;
    h.id = id, h.name = name, h.priority = priority;
    h.method = "the reference's dK and dV combined";
    if (!(sk == self_k)) h.pred[idx(CheckTensor::dk)] = faulted(source_tensor(c, sk));
    if (!(sv == self_v)) h.pred[idx(CheckTensor::dv)] = faulted(source_tensor(c, sv));
    c.add(h);
  };
  const std::pair<Source, Source> named[] = {{{2, 0}, {2, 1}}, {{1, 0}, {0, 0}}, {{2, 0}, {2, 0}}, {{0, 1}, {1, 1}},
                                              {{0, -1}, {1, -1}}, {{2, 0}, {1, 0}}, {{0, 0}, {2, 0}}};
  test(named[0].first, named[0].second, "dkv:ring_mixup",
       "dK and dV mixed up as in a ring backward: dK = dK + dV of the same rank, dV = dK + dV of rank r+1", 20);
  test(named[1].first, named[1].second, "dkv:swapped", "dK and dV swapped", 21);
  test(named[2].first, named[2].second, "dkv:both_sum", "dK and dV both hold dK + dV", 22);
  test(named[3].first, named[3].second, "dkv:shift_next", "dK and dV shifted by one rank: rank r holds rank r+1's", 23);
  test(named[4].first, named[4].second, "dkv:shift_prev", "dK and dV shifted by one rank: rank r holds rank r-1's", 23);
  test(named[5].first, named[5].second, "dkv:dk_sum", "dK holds dK + dV (dV is right)", 25);
  test(named[6].first, named[6].second, "dkv:dv_sum", "dV holds dK + dV (dK is right)", 25);
  // the best source of each on its own, if that pair is none of the above
  auto best = [&](CheckTensor t, Source self) {
    Source b = self;
    double e = c.base_err[idx(t)];
    for (int what : {0, 1, 2})
      for (int shift : {0, 1, -1}) {
        const Source s{what, shift};
        if (s == self || !valid(t, s)) continue;
        const double x = claimed_diff(c.data.out[idx(t)].x, source_tensor(c, s), nullptr) / c.scale[idx(t)];
        if (x < e) e = x, b = s;
      }
    return b;
  };
  const Source bk = best(CheckTensor::dk, self_k), bv = best(CheckTensor::dv, self_v);
  for (const auto& [k, v] : named)
    if (k == bk && v == bv) return;
  test(bk, bv, "dkv:other", "dK holds the reference's " + describe(bk) + ", dV holds the reference's " + describe(bv), 29);
}

// ---- LSE in base 2 ------------------------------------------------------------------------------

void lse_base2(CheckContext& c) {
  if (!c.present(CheckTensor::lse) || !c.worth({CheckTensor::lse}, "LSE in base 2")) return;
  Tensor3<double> x = c.ref[idx(CheckTensor::lse)];
  for (double& v : x.data) v /= std::log(2.0);  // -inf stays -inf
  Hypothesis h;
  h.id = "lse_base2", h.priority = 70, h.method = "the reference's LSE / ln 2";
  h.name = "LSE in base 2 (log2 sum 2^(s log2 e), as exp2-based kernels keep it) instead of the natural log";
  h.pred[idx(CheckTensor::lse)] = faulted(std::move(x));
  c.add(h);
}

// ---- LSE written in another layout than the one read ------------------------------------------

// the claimed LSE when every file (global, or each rank's shard) was written by putting (head i,
// file token l) at offset(i, l, file) of a flat buffer and read as its first h * n values, (h, n);
// files[f]: the global positions of file f's tokens. Values the writer never wrote (its buffer's
// padding) are unknown: the claimed value is kept there. Returns the prediction and the fraction of
// real values unknown.
template <class Offset>
std::pair<Tensor3<double>, double> reread_lse(const CheckContext& c, const std::vector<std::vector<index_t>>& files, Offset offset) {
  const Tensor3<double>& ref = c.ref[idx(CheckTensor::lse)];
  const Tensor3<double>& claimed = c.data.out[idx(CheckTensor::lse)].x;
  const Packing& pk = c.spec.packing();
  const index_t h = ref.h;
  Tensor3<double> x(ref.n, h, 1);
  index_t unknown = 0, real = 0;
  for (size_t f = 0; f < files.size(); ++f) {
    const std::vector<index_t>& pos = files[f];
    const index_t n = static_cast<index_t>(pos.size());
    std::vector<index_t> src(sz(h * n), -1);  // flat offset read -> i * n + l written there
    for (index_t i = 0; i < h; ++i)
      for (index_t l = 0; l < n; ++l) {
        const index_t o = offset(i, l, f);
        if (o >= 0 && o < h * n) src[sz(o)] = i * n + l;
      }
    for (index_t o = 0; o < h * n; ++o) {
      const index_t i = o / n, g = pos[sz(o % n)];
      const bool known = src[sz(o)] >= 0;
      x.at(g, i, 0) = known ? ref.at(pos[sz(src[sz(o)] % n)], src[sz(o)] / n, 0) : claimed.at(g, i, 0);
      if (pk.real(g)) ++real, unknown += known ? 0 : 1;
    }
  }
  return {std::move(x), real > 0 ? static_cast<double>(unknown) / static_cast<double>(real) : 0.0};
}

void lse_layouts(CheckContext& c) {
  if (!c.present(CheckTensor::lse) || !c.worth({CheckTensor::lse}, "LSE layout")) return;
  const CpSpec& s = c.spec;
  const index_t h = s.h();
  const bool shards = c.data.out[idx(CheckTensor::lse)].shards;
  std::vector<std::vector<index_t>> files;  // each file's tokens, in its order
  if (shards) {
    for (index_t r = 0; r < s.P(); ++r) files.push_back(s.partition().indices(r));
  } else {
    files.emplace_back(sz(s.S()));
    for (index_t g = 0; g < s.S(); ++g) files[0][sz(g)] = g;
  }
  const index_t n = static_cast<index_t>(files[0].size());
  const std::string shape = shards ? "(heads, seq / cp)" : "(heads, seq)";
  auto add = [&](const std::string& id, int priority, const std::string& name, std::pair<Tensor3<double>, double> p) {
    if (p.second > 0.5) return;  // mostly the writer's padding: too little to tell
    Hypothesis hy;
    hy.id = id, hy.priority = priority, hy.name = name;
    hy.method = "the reference's LSE written in that layout and read flat" +
                std::string(p.second > 0 ? " (values of the writer's padding: the claimed ones kept)" : "");
    hy.pred[idx(CheckTensor::lse)] = faulted(std::move(p.first));
    c.add(hy);
  };
  if (h > 1 && n > 1)
    add("lse_layout:transposed", 72, "LSE written as [tokens, heads] and read as " + shape + ": a transposed buffer read flat",
        reread_lse(c, files, [&](index_t i, index_t l, size_t) { return l * h + i; }));
  std::vector<index_t> strides;  // the per-head stride rounded up to a multiple of m (FlashAttention: 128)
  for (index_t m : {8, 16, 32, 64, 128, 256}) {
    const index_t L = (n + m - 1) / m * m;
    if (L > n && std::find(strides.begin(), strides.end(), L) == strides.end()) {
      strides.push_back(L);
      add("lse_layout:stride_" + num(L), 73,
          "LSE written with a per-head stride of " + num(L) + " (" + (shards ? "seq / cp" : "seq") + " = " + num(n) +
              " rounded up to a multiple of " + num(m) + ") and read as a flat " + shape,
          reread_lse(c, files, [&](index_t i, index_t l, size_t) { return i * L + l; }));
    }
  }
  const Packing& pk = s.packing();
  if (!s.thd() || shards || pk.num_seqs() < 2) return;
  index_t max_real = 0, max_padded = 0;
  for (index_t q = 0; q < pk.num_seqs(); ++q)
    max_real = std::max(max_real, pk.length(q)),
    max_padded = std::max(max_padded, pk.cu_seqlens_padded[sz(q + 1)] - pk.cu_seqlens_padded[sz(q)]);
  std::vector<index_t> widths = {max_real};  // max_seqlen: of the real lengths, or of the padded ones
  if (max_padded != max_real) widths.push_back(max_padded);
  for (index_t M : widths)
    add("lse_layout:per_sequence_" + num(M), 74,
        "LSE written per sequence as (batch, heads, max_seqlen = " + num(M) + ") and read as a flat packed (heads, tokens)",
        reread_lse(c, files, [&](index_t i, index_t g, size_t) {
          const index_t q = pk.seq_of(g), j = g - pk.cu_seqlens_padded[sz(q)];
          return pk.real(g) && j < M ? (q * h + i) * M + j : -1;
        }));
}

// ---- padding not zero ----------------------------------------------------------------------------

void padding_not_zero(CheckContext& c) {
  const Packing& pk = c.spec.packing();
  if (!pk.has_padding() || !c.worth({CheckTensor::o, CheckTensor::dq, CheckTensor::dk, CheckTensor::dv}, "padding")) return;
  Hypothesis h;
  h.id = "padding_not_zero", h.priority = 90, h.method = "the reference on real tokens, the outputs' own values on padding";
  h.name = "padding tokens hold non-zero outputs (every real token is right; padding must give O = 0 and zero gradients)";
  for (CheckTensor t : {CheckTensor::o, CheckTensor::dq, CheckTensor::dk, CheckTensor::dv}) {
    if (!c.present(t)) continue;
    Tensor3<double> x = c.ref[idx(t)];
    const Tensor3<double>& claimed = c.data.out[idx(t)].x;
    for (index_t g = 0; g < x.n; ++g)
      if (!pk.real(g)) std::copy(claimed.token(g), claimed.token(g) + x.h * x.d, x.token(g));
    h.pred[idx(t)] = faulted(std::move(x));
  }
  c.add(h);
}

}  // namespace

void transform_hypotheses(CheckContext& c) {
  layout_order(c);
  dkv_mixups(c);
  lse_base2(c);
  lse_layouts(c);
  padding_not_zero(c);
}

}  // namespace cplab
