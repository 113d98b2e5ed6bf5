// faults_sinks.cpp: attention sinks counted the wrong number of times (hypotheses.h, priorities 54-57).
//
// What it is: with --sinks a row's softmax denominator gains exp(s_h) exactly once (core/sinks.h). An
// implementation that adds it to every partial result before the merge counts it once per partial
// (k per row = the partials the row merged), one that adds it on every rank before the results are
// combined k = cp times, one that forgets it k = 0 times. Each gives, with L and O_0 the row's LSE
// and O without any sink,
//   LSE_k = log(exp(L) + k exp(s_h)),   O_k = O_0 exp(L - LSE_k)
// and L, O_0 follow from the reference's own (LSE, O): L = LSE + log(1 - exp(s_h - LSE)),
// O_0 = O exp(LSE - L). Each token's count k is read off the claimed LSE (or, with no LSE given, off
// the claimed O's size against O_0) as the nearest whole number, the median over heads; the
// prediction made from those counts is then tested like any other hypothesis: the output k was not
// read from (O, or LSE) is independent evidence, and LSE itself must fit to tolerance with a whole
// k. The gradients are the backward of the faulted forward (what a backward reading the saved O and
// LSE computes; sinks.h: the usual backward with the final O and LSE): dQ at the sampled rows, dK and
// dV at the sampled tail keys. The name says which count fits: none (sinks ignored), cp (every
// rank), the ring's partials (p2p: the KV blocks whose keys the row sees), or "k from a to b".
// What it is not: the sinks' arithmetic (core/sinks.h) or the check of d s_h itself (check.cpp
// compares dsinks.npy with the reference's).
#include <algorithm>
#include <cmath>
#include <limits>

#include "check/hypotheses.h"
#include "core/softmax_rules.h"
#include "core/util.h"

namespace cplab {

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// each token's sink count read off the claimed outputs (-1: padding, or nothing to read)
std::vector<index_t> read_counts(const CheckContext& c, const Tensor3<double>& L0) {
  const CpSpec& s = c.spec;
  const std::vector<double>& sinks = c.data.in.sinks;
  const bool from_lse = c.present(CheckTensor::lse);
  const Tensor3<double>& ref_o = c.ref[idx(CheckTensor::o)];
  const Tensor3<double>& claim = c.data.out[idx(from_lse ? CheckTensor::lse : CheckTensor::o)].x;
  std::vector<index_t> k(sz(s.S()), -1);
  for (index_t g = 0; g < s.S(); ++g) {
    std::vector<double> ks;
    for (index_t i = 0; i < s.h(); ++i) {
      const double L = L0.at(g, i, 0), si = sinks[sz(i)];
      if (!std::isfinite(L)) continue;
      double kf = 0;
      if (from_lse) {
        kf = std::exp(claim.at(g, i, 0) - si) - std::exp(L - si);
      } else {  // |O_k| / |O_0| = exp(L - LSE_k): kf = exp(L - s) (|O_0| / |O_k| - 1), O_0 = O exp(LSE - L)
        const double lse = c.ref[idx(CheckTensor::lse)].at(g, i, 0), f = std::exp(lse - L);
        double oo = 0, oc = 0;
        for (index_t e = 0; e < s.dv(); ++e) oo += f * ref_o.at(g, i, e) * f * ref_o.at(g, i, e), oc += f * ref_o.at(g, i, e) * claim.at(g, i, e);
        if (!(oc > 0) || !(oo > 0)) continue;
        kf = std::exp(L - si) * (oo / oc - 1);
      }
      if (std::isfinite(kf)) ks.push_back(kf);
    }
    if (ks.empty()) continue;
    std::nth_element(ks.begin(), ks.begin() + static_cast<std::ptrdiff_t>(ks.size() / 2), ks.end());
    k[sz(g)] = static_cast<index_t>(std::llround(std::clamp(ks[ks.size() / 2], 0.0, 1e6)));
  }
  return k;
}

// p2p: the partial results token g merges, one per KV block (ring step) holding a key it sees
std::vector<index_t> ring_partials(const CpSpec& s) {
  const Partition& part = s.partition();
  std::vector<std::vector<index_t>> blocks;
  for (index_t j = 0; j < s.P(); ++j) {
    blocks.push_back(part.indices(j));
    std::sort(blocks.back().begin(), blocks.back().end());
  }
  std::vector<index_t> n(sz(s.S()), 0);
  const AttnRule truth = true_rule(s);
  for (index_t g = 0; g < s.S(); ++g) {
    const KeyRange r = visible_keys(s, truth, g);
    for (const std::vector<index_t>& b : blocks) {
      const auto it = std::lower_bound(b.begin(), b.end(), r.lo);
      if (it != b.end() && *it < r.hi) ++n[sz(g)];
    }
  }
  return n;
}

// the hypothesis's id and name for the counts k (real tokens only)
std::pair<std::string, std::string> describe(const CpSpec& s, const std::vector<index_t>& k, int& priority) {
  index_t lo = std::numeric_limits<index_t>::max(), hi = -1, ones = 0, real = 0;
  bool partials = s.mode() == Mode::p2p && s.P() > 1;
  const std::vector<index_t> np = partials ? ring_partials(s) : std::vector<index_t>();
  for (index_t g = 0; g < s.S(); ++g) {
    if (k[sz(g)] < 0) continue;
    lo = std::min(lo, k[sz(g)]), hi = std::max(hi, k[sz(g)]), ones += k[sz(g)] == 1, ++real;
    if (partials && k[sz(g)] != np[sz(g)]) partials = false;
  }
  const std::string P = num(s.P());
  if (hi == 0) {
    priority = 54;
    return {"sinks_ignored", "attention sinks ignored: no exp(s_h) in the softmax denominator (O and LSE as without sinks)"};
  }
  if (lo == hi && lo == s.P() && s.P() > 1) {
    priority = 55;
    return {"sink_per_rank", "attention sink counted on every rank: cp = " + P + " times per row instead of once (each rank added "
                             "exp(s_h) to its result before they were combined)"};
  }
  if (partials && hi > 1) {
    priority = 56;
    return {"sink_per_partial", "attention sink counted once per partial result instead of once per row: a row that merges k ring "
                                "steps' results (k = " + num(lo) + " to " + num(hi) + " here: the KV blocks whose keys it sees) has k "
                                "sinks; apply it after the merge"};
  }
  priority = 57;
  return {"sink_count", "attention sink counted k times per row instead of once (k = " + num(lo) + " to " + num(hi) + "; " +
                            num(real - ones) + " of " + num(real) + " tokens with k != 1)"};
}

}  // namespace

void sink_hypotheses(CheckContext& c) {
  const CpSpec& s = c.spec;
  if (!s.sinks() || c.data.in.sinks.empty() || !c.worth({CheckTensor::o, CheckTensor::lse}, "sink count")) return;
  const std::vector<double>& sinks = c.data.in.sinks;
  const Tensor3<double>& ro = c.ref[idx(CheckTensor::o)];
  const Tensor3<double>& rl = c.ref[idx(CheckTensor::lse)];
  // L and O_0: the reference's row results without the sink
  Tensor3<double> L0(s.S(), s.h(), 1);
  for (index_t g = 0; g < s.S(); ++g)
    for (index_t i = 0; i < s.h(); ++i) {
      const double lse = rl.at(g, i, 0);
      L0.at(g, i, 0) = std::isfinite(lse) ? lse + std::log1p(-std::exp(sinks[sz(i)] - lse)) : -kInf;
    }
  const std::vector<index_t> k = read_counts(c, L0);
  RowsOut f{Tensor3<double>(s.S(), s.h(), s.dv()), Tensor3<double>(s.S(), s.h(), 1)};
  for (index_t g = 0; g < s.S(); ++g)
    for (index_t i = 0; i < s.h(); ++i) {
      const double L = L0.at(g, i, 0), lse = rl.at(g, i, 0);
      if (!std::isfinite(L) || k[sz(g)] < 0) {  // padding (or nothing read): the reference's own
        f.lse.at(g, i, 0) = lse;
        for (index_t e = 0; e < s.dv(); ++e) f.o.at(g, i, e) = ro.at(g, i, e);
        continue;
      }
      const double si = sinks[sz(i)], kk = static_cast<double>(k[sz(g)]);
      const double lk = kk > 0 ? lse_merge(L, si + std::log(kk)) : L;  // log(exp(L) + k exp(s_h))
      f.lse.at(g, i, 0) = lk;
      for (index_t e = 0; e < s.dv(); ++e) f.o.at(g, i, e) = ro.at(g, i, e) * merge_weight(lse, lk);  // O_0 exp(L - LSE_k)
    }
  int priority = 57;
  const auto [id, name] = describe(s, k, priority);
  Hypothesis h;
  h.id = id, h.name = name, h.priority = priority;
  h.method = std::string("each token's sink count read off the claimed ") + (c.present(CheckTensor::lse) ? "LSE" : "O") +
             " (nearest whole number), O and LSE predicted from it at every token";
  Prediction po, pl;
  po.kind = pl.kind = PredKind::faulted;
  po.x = f.o, pl.x = f.lse;
  h.pred[idx(CheckTensor::o)] = std::move(po);
  h.pred[idx(CheckTensor::lse)] = std::move(pl);
  const bool bwd = c.present(CheckTensor::dq);
  for (CheckTensor t : {CheckTensor::dq, CheckTensor::dk, CheckTensor::dv})
    if (bwd) h.pred[idx(t)].kind = PredKind::unchecked;
  HypothesisResult r = c.evaluate(h);
  if (c.next_stage(r.level >= 0) && bwd) {  // it fits so far: the backward of this forward, dQ at the rows, dK, dV at the tail keys
    const AttnRule truth = true_rule(s);
    const RowsOut at_rows{gather(f.o, c.rows), gather(f.lse, c.rows)};
    const auto [keys, queries] = tail_keys(c, truth);
    const KeyGrads g = dkv_at(s, c.data.in, truth, queries, RowsOut{gather(f.o, queries), gather(f.lse, queries)}, keys);
    Prediction pq, pk, pv;
    pq.kind = pk.kind = pv.kind = PredKind::faulted;
    pq.tokens = c.rows, pq.x = dq_at(s, c.data.in, truth, c.rows, at_rows);
    pk.tokens = pv.tokens = keys, pk.x = g.dk, pv.x = g.dv;
    h.pred[idx(CheckTensor::dq)] = std::move(pq);
    h.pred[idx(CheckTensor::dk)] = std::move(pk);
    h.pred[idx(CheckTensor::dv)] = std::move(pv);
    h.method += "; dQ at " + num(static_cast<index_t>(c.rows.size())) + " sampled rows, dK, dV at " +
                num(static_cast<index_t>(keys.size())) + " keys: the backward of that forward";
    r = c.evaluate(h);
  }
  c.keep(h, r);
}

}  // namespace cplab
