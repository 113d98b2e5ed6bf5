// faults_transform.cpp: the hypotheses whose prediction is a transform of the reference outputs
// (hypotheses.h): tokens in another layout's order, dK / dV swapped, summed or shifted by a rank,
// LSE in base 2, padding tokens not zero. Every prediction covers every token.
// What it is not: anything that recomputes attention (faults_recompute.cpp).
#include <algorithm>
#include <cmath>
#include <optional>

#include "check/hypotheses.h"
#include "core/error.h"
#include "core/util.h"

namespace cplab {

namespace {

// ---- tokens in another layout's order ----------------------------------------------------------

// rank r's buffer holds layout `held`'s tokens but was placed at layout `placed`'s positions:
// out[placed.global(r, l)] = ref[held.global(r, l)]
void layout_order(CheckContext& c) {
  const CpSpec& spec = c.spec;
  if (!c.worth({CheckTensor::o, CheckTensor::lse, CheckTensor::dq, CheckTensor::dk, CheckTensor::dv}, "layout order")) return;
  const std::vector<index_t>& cu = spec.partition().cu_padded();
  const Layout all[] = {Layout::contiguous, Layout::zigzag, Layout::striped};
  for (Layout held : all)
    for (Layout placed : all) {
      if (held == placed) continue;
      std::optional<Partition> ph, pp;
      try {
        ph.emplace(held, cu, spec.P());
        pp.emplace(placed, cu, spec.P());
      } catch (const Error&) {
        continue;  // the sequence lengths do not fit that layout
      }
      std::vector<index_t> src(sz(spec.S()));
      for (index_t g = 0; g < spec.S(); ++g) {
        const RankLocal rl = pp->owner(g);
        src[sz(g)] = ph->global(rl.rank, rl.local);
      }
      Hypothesis h;
      const std::string H = to_string(held), Pl = to_string(placed);
      h.id = "layout_order:" + H + "_placed_as_" + Pl;
      h.priority = 10;
      h.method = "the reference's tokens permuted";
      const bool shards = c.data.out[idx(CheckTensor::o)].source.find("rank{") != std::string::npos;
      if (shards && placed == spec.layout())
        h.name = "tokens out of order: the rank{r} shards hold the " + H + " layout's tokens, not the " + Pl + " layout's (--layout)";
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
  const Partition& part = c.spec.partition();
  const index_t P = c.spec.P(), row = base.h * base.d;
  for (index_t g = 0; g < base.n; ++g) {
    const RankLocal rl = part.owner(g);
    const index_t from = part.global(((rl.rank + s.shift) % P + P) % P, rl.local);
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

// ---- LSE in base 2, padding not zero ------------------------------------------------------------

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
  padding_not_zero(c);
}

}  // namespace cplab
