// faults_recompute.cpp: the hypotheses whose prediction needs attention recomputed under a faulted
// rule (hypotheses.h), at the sampled rows and keys (sampled_attention.h):
//   KV head i % kv_heads, the causal mask off by one, a wrong softmax scale (1/d, 1/sqrt(d): a custom
//     --scale ignored, 1, the scale squared: applied twice): O, LSE, then dQ at the
//     sampled rows; when those fit, dK and dV at the 16 sampled keys nearest their sequence's end
//     (every query's contribution, from the O and LSE of the queries that see them)
//   LSE without the max: log sum exp(s - max) at the sampled rows
//   a ring step's partial result missing or counted twice in O and LSE (p2p), at the sampled rows; the
//     gradients are not checked (the backward reads the faulted O and LSE)
//   dK, dV without the cross-rank reduction: each rank's own queries' contribution, at the sampled keys
// What it is not: the transforms of the reference (faults_transform.cpp).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <numeric>

#include "check/hypotheses.h"
#include "check/sampled_attention.h"
#include "core/util.h"

namespace cplab {

namespace {

// ---- a faulted attention rule ---------------------------------------------------------------------

}  // namespace

std::pair<std::vector<index_t>, std::vector<index_t>> tail_keys(const CheckContext& c, const AttnRule& rule) {
  const Packing& pk = c.spec.packing();
  std::vector<std::pair<index_t, index_t>> by_end;  // (tokens after it in its sequence, key)
  for (index_t k : c.keys) {
    const index_t s = pk.seq_of(k);
    by_end.emplace_back(pk.cu_seqlens_padded[sz(s)] + pk.length(s) - k, k);
  }
  std::sort(by_end.begin(), by_end.end());
  std::vector<index_t> keys, queries;
  for (size_t a = 0; a < by_end.size() && a < 16; ++a) keys.push_back(by_end[a].second);
  const size_t picked = keys.size();
  for (const std::vector<index_t>& src : c.token_maps)  // a pair search's re-run: the keys a transform reads too
    for (size_t a = 0; a < picked; ++a) keys.push_back(src[sz(keys[a])]);
  std::sort(keys.begin(), keys.end());
  keys.erase(std::unique(keys.begin(), keys.end()), keys.end());
  for (index_t g = 0; g < c.spec.S(); ++g) {
    const KeyRange r = visible_keys(c.spec, rule, g);
    const auto it = std::lower_bound(keys.begin(), keys.end(), r.lo);
    if (it != keys.end() && *it < r.hi) queries.push_back(g);
  }
  return {keys, queries};
}

void rule_fault(CheckContext& c, const AttnRule& rule, const std::string& id, const std::string& name, int priority,
                const std::string& spec_hint) {
  if (!c.wants(id)) return;
  const bool bwd = c.present(CheckTensor::dq);
  const RowsOut f = forward_at(c.spec, c.data.in, rule, c.rows);
  Hypothesis h;
  h.id = id, h.name = name, h.priority = priority, h.spec_hint = spec_hint;
  h.method = "recomputed under the faulted rule at " + count(c.rows, "rows");
  h.pred[idx(CheckTensor::o)] = at(c.rows, f.o);
  h.pred[idx(CheckTensor::lse)] = at(c.rows, f.lse);
  if (bwd) h.pred[idx(CheckTensor::dq)] = h.pred[idx(CheckTensor::dk)] = h.pred[idx(CheckTensor::dv)] = unchecked();
  // every output checked so far within the loosest level's tolerance (the fault need not be visible
  // yet: one that moves only padding rows, or only dK and dV, shows in a later stage)
  auto fits = [&](const HypothesisResult& x) { return c.fits_so_far(x); };
  HypothesisResult r = c.evaluate(h);
  if (c.next_stage(fits(r)) && bwd) {
    h.pred[idx(CheckTensor::dq)] = at(c.rows, dq_at(c.spec, c.data.in, rule, c.rows, f));
    r = c.evaluate(h);
  } else if (bwd) {
    h.method += " (dQ, dK, dV not recomputed: O and LSE already differ from the fault's)";
  }
  if (c.next_stage(fits(r)) && bwd) {  // it fits so far: dK and dV at the sampled tail keys
    const auto [keys, queries] = tail_keys(c, rule);
    const RowsOut full = forward_at(c.spec, c.data.in, rule, queries);
    const KeyGrads g = dkv_at(c.spec, c.data.in, rule, queries, full, keys);
    h.method = "recomputed under the faulted rule: O, LSE, dQ at " + count(c.rows, "rows") + ", dK, dV at " + count(keys, "keys") +
               " (from the " + num(static_cast<index_t>(queries.size())) + " queries that see them)";
    h.pred[idx(CheckTensor::dk)] = at(keys, g.dk);
    h.pred[idx(CheckTensor::dv)] = at(keys, g.dv);
    r = c.evaluate(h);
  }
  c.keep(h, r);
}

namespace {

void rule_faults(CheckContext& c) {
  const CpSpec& s = c.spec;
  // each of them moves O and LSE: with both right, none can explain
  if (!c.worth({CheckTensor::o, CheckTensor::lse}, "KV head map, causal offset, scale")) return;
  const AttnRule truth = true_rule(s);
  if (s.hk() > 1 && s.hk() < s.h()) {
    AttnRule r = truth;
    r.head_mod = true;
    rule_fault(c, r, "kv_head_mod", "KV heads mapped i % kv_heads instead of i / (heads / kv_heads) (query head 1 reads KV head " +
                                        num(1 % s.hk()) + ", not " + num(1 / (s.h() / s.hk())) + ")", 40);
  }
  for (index_t u = 1; u < s.hk(); ++u) {  // another KV head count: only the first u KV heads read
    if (s.hk() % u != 0) continue;
    AttnRule r = truth;
    r.kv_heads = u;
    rule_fault(c, r, "kv_heads:" + num(u),
               "KV head count " + num(u) + " instead of " + num(s.hk()) + ": only the first " + num(u) + " of the KV heads read (query head i reads KV head i / " +
                   num(s.h() / u) + ")",
               41, "--kv-heads " + num(u) + " with only k.npy's and v.npy's first " + num(u) + " KV head" + (u > 1 ? "s" : ""));
  }
  if (s.causal()) {
    AttnRule r = truth;
    r.causal_shift = 1;
    rule_fault(c, r, "causal_plus_one", "causal mask off by one: query q sees keys k <= q + 1 (one future token)", 50);
    r.causal_shift = -1;
    rule_fault(c, r, "causal_minus_one", "causal mask off by one: query q sees keys k < q (not itself; a sequence's first token sees nothing)", 51);
  }
  if (s.rule().window > 1) {  // the window one key too wide (FlashAttention's window_size (W, 0) for W keys) or narrow
    const std::string w = num(s.rule().window);
    AttnRule r = truth;
    r.window_shift = 1;
    rule_fault(c, r, "window_plus_one", "sliding window off by one: W + 1 = " + num(s.rule().window + 1) + " keys instead of " + w +
                                            " (window_size (W, 0) where (W - 1, 0) is meant)", 52);
    r.window_shift = -1;
    rule_fault(c, r, "window_minus_one", "sliding window off by one: W - 1 = " + num(s.rule().window - 1) + " keys instead of " + w, 53);
  }
  // a custom --scale X ignored (the kernel's default 1/sqrt(d) used: prime-rl #3007), or applied twice (X^2)
  const double d = static_cast<double>(s.d()), X = truth.scale, def = 1.0 / std::sqrt(d);
  const bool custom = s.fields().scale != 0;
  const std::pair<double, std::string> scales[] = {
      {1.0 / d, "1/d = " + approx4(1.0 / d)}, {def, "1/sqrt(d) = " + approx4(def)}, {1.0, "1 (no scale)"}, {X * X, ""}};
  std::vector<double> done{X};
  for (const auto& [x, text] : scales) {
    if (std::any_of(done.begin(), done.end(), [&, x = x](double y) { return std::abs(x - y) <= 1e-12 * y; })) continue;
    done.push_back(x);
    AttnRule r = truth;
    r.scale = x;
    const bool twice = std::abs(x - X * X) <= 1e-12 * x;
    std::string name = "softmax scale " + (text.empty() ? approx4(x) : text) + " instead of " + approx4(X);
    if (custom && x == def) name = "custom softmax scale " + approx4(X) + " ignored: the default 1/sqrt(d) = " + approx4(def) + " used";
    else if (twice) name += " (the scale applied twice: " + approx4(X) + "^2)";
    rule_fault(c, r, "scale:" + approx4(x), name, twice && text.empty() ? 61 : 60,
               x == def ? "the spec without --scale: its default 1/sqrt(d) = " + approx4(def) : "--scale " + approx4(x));
  }
}

// ---- LSE without the max --------------------------------------------------------------------------

void lse_without_max(CheckContext& c) {
  if (!c.present(CheckTensor::lse) || !c.worth({CheckTensor::lse}, "LSE without the max")) return;
  Prediction p = reference_at(c, CheckTensor::lse, c.rows);
  const Tensor3<double> m = score_max_at(c.spec, c.data.in, true_rule(c.spec), c.rows);
  for (size_t i = 0; i < p.x.data.size(); ++i)
    if (std::isfinite(m.data[i])) p.x.data[i] -= m.data[i];
  Hypothesis h;
  h.id = "lse_without_max", h.priority = 71, h.method = "the reference's LSE minus the row's largest score at " + count(c.rows, "rows");
  h.name = "LSE without the max: log sum exp(s - max s) (the running max never added back)";
  h.pred[idx(CheckTensor::lse)] = std::move(p);
  c.add(h);
}

// ---- a ring step missing or doubled ------------------------------------------------------------------

void ring_steps(CheckContext& c) {
  const CpSpec& s = c.spec;
  const index_t P = s.P();
  if (s.mode() != Mode::p2p || P < 2 || !c.worth({CheckTensor::o, CheckTensor::lse}, "ring steps")) return;
  const std::vector<RowsOut> parts = block_partials(s, c.data.in, c.rows);  // KV block j's partial result at the sampled rows
  const index_t n = static_cast<index_t>(c.rows.size()), h = s.h(), dv = s.dv();
  for (index_t step = 0; step < P; ++step)
    for (int weight : {0, 2}) {  // step's partial missing (counted 0 times) or doubled (2 times)
      Tensor3<double> o(n, h, dv), lse(n, h, 1);
      for (index_t a = 0; a < n; ++a) {
        const index_t js = ring_kv_block(c.chunks.rank_of[sz(c.rows[sz(a)])], step, P);
        for (index_t i = 0; i < h; ++i) {
          double m = -std::numeric_limits<double>::infinity();
          for (index_t j = 0; j < P; ++j)
            if (j != js || weight > 0) m = std::max(m, parts[sz(j)].lse.at(a, i, 0));
          double l = 0;
          for (index_t j = 0; j < P; ++j) {
            const double L = parts[sz(j)].lse.at(a, i, 0);
            if (!std::isfinite(L) || (j == js && weight == 0)) continue;
            const double w = (j == js ? weight : 1) * std::exp(L - m);
            l += w;
            for (index_t e = 0; e < dv; ++e) o.at(a, i, e) += w * parts[sz(j)].o.at(a, i, e);
          }
          if (l > 0) {
            for (index_t e = 0; e < dv; ++e) o.at(a, i, e) /= l;
            lse.at(a, i, 0) = m + std::log(l);
          } else {
            lse.at(a, i, 0) = -std::numeric_limits<double>::infinity();  // O stays 0
          }
        }
      }
      RowsOut merged{std::move(o), std::move(lse)};
      if (!c.data.in.sinks.empty()) apply_row_sinks(merged, c.data.in.sinks);  // once, after the merge
      Hypothesis hy;
      hy.id = std::string(weight == 0 ? "ring_step_missing:" : "ring_step_doubled:") + num(step);
      hy.priority = weight == 0 ? 80 : 81;
      hy.name = "ring step " + num(step) + "'s partial result " + (weight == 0 ? "missing from" : "counted twice in") +
                " O and LSE (at step " + num(step) + " rank r holds the KV of rank r-" + num(step) + ")";
      hy.method = "per-step partial results recomputed at " + count(c.rows, "rows") + "; gradients not checked";
      hy.pred[idx(CheckTensor::o)] = at(c.rows, std::move(merged.o));
      hy.pred[idx(CheckTensor::lse)] = at(c.rows, std::move(merged.lse));
      if (c.present(CheckTensor::dq))
        hy.pred[idx(CheckTensor::dq)] = hy.pred[idx(CheckTensor::dk)] = hy.pred[idx(CheckTensor::dv)] = unchecked();
      c.add(hy);
    }
}

// ---- dK, dV without the cross-rank reduction ---------------------------------------------------------

void own_queries_only(CheckContext& c) {
  const CpSpec& s = c.spec;
  if (!c.present(CheckTensor::dk) || s.P() < 2 || !c.worth({CheckTensor::dk, CheckTensor::dv}, "dK/dV reduction")) return;
  const Partition& part = s.partition();
  const index_t nk = static_cast<index_t>(c.keys.size());
  Tensor3<double> dk(nk, s.hk(), s.d()), dv(nk, s.hk(), s.dv());
  for (index_t r = 0; r < s.P(); ++r) {
    std::vector<index_t> queries = part.indices(r), keys, where;
    std::sort(queries.begin(), queries.end());
    for (index_t a = 0; a < nk; ++a)
      if (c.chunks.rank_of[sz(c.keys[sz(a)])] == r) keys.push_back(c.keys[sz(a)]), where.push_back(a);
    if (keys.empty()) continue;
    const RowsOut fwd{gather(c.ref[idx(CheckTensor::o)], queries), gather(c.ref[idx(CheckTensor::lse)], queries)};
    const KeyGrads g = dkv_at(s, c.data.in, true_rule(s), queries, fwd, keys);
    for (size_t b = 0; b < keys.size(); ++b) {
      std::copy(g.dk.token(static_cast<index_t>(b)), g.dk.token(static_cast<index_t>(b)) + s.hk() * s.d(), dk.token(where[b]));
      std::copy(g.dv.token(static_cast<index_t>(b)), g.dv.token(static_cast<index_t>(b)) + s.hk() * s.dv(), dv.token(where[b]));
    }
  }
  Hypothesis h;
  h.id = "dkv_no_reduction", h.priority = 30;
  h.name = "dK and dV miss the cross-rank reduction: each rank holds only its own queries' contribution "
           "(an all-gather backward without its reduce-scatter)";
  h.method = "each rank's own queries' contribution recomputed at " + count(c.keys, "keys");
  h.pred[idx(CheckTensor::dk)] = at(c.keys, std::move(dk));
  h.pred[idx(CheckTensor::dv)] = at(c.keys, std::move(dv));
  c.add(h);
}

}  // namespace

void recompute_hypotheses(CheckContext& c) {
  own_queries_only(c);
  rule_faults(c);
  lse_without_max(c);
  ring_steps(c);
}

}  // namespace cplab
