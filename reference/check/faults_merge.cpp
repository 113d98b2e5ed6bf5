// faults_merge.cpp: the hypotheses of a ring forward (p2p) that merges its steps' partial results
// wrongly (hypotheses.h), predicted at the sampled rows from every KV block's partial result
// (sampled_attention.h block_partials), merged in each rank's ring order (ring_kv_block):
//   the online softmax's running output not rescaled when the row max grows: the merge keeps a
//     running max m, sum l and unnormalised accumulator acc, and forgets acc *= exp(m_old - m_new)
//     (l is rescaled, so the LSE m + log l is right and O = acc / l is not). Two forms: m the running
//     max of the scores (FlashAttention's online softmax, Dao et al. 2022, Algorithm 1, run over ring
//     steps: what a hand-written NumPy ring does) or of the steps' LSEs (merging the kernel's (O_i,
//     LSE_i) with an unnormalised accumulator). ring-flash-attention's _update_out_and_lse (a sigmoid
//     of the LSE difference) and TransformerEngine's LSE correction keep no such accumulator, so they
//     cannot have this bug. The name says at which steps it bites (a sampled row's max grew).
//   the partial outputs merged without their LSE weights: summed, or averaged over the steps that see
//     a key (the LSE merged right)
// O and LSE at the sampled rows; when they fit, dQ there (the backward reads the faulted O); dK and
// dV not checked.
// What it is not: a step missing or doubled (faults_recompute.cpp), or the backward's faults
// (faults_backward.cpp); modes without a per-step merge (all-gather, a2a) are not tested.
#include <algorithm>
#include <cmath>
#include <limits>

#include "check/hypotheses.h"
#include "core/util.h"

namespace cplab {

namespace {

enum class Merge { rescale_scores, rescale_lse, sum, mean };

// the merged (O, LSE) at the sampled rows under merge form f (O (rows, h, dv), LSE (rows, h, 1));
// bites[i]: a sampled row's running max grew at step i (the rescale forms)
RowsOut merged(const CheckContext& c, const std::vector<RowsOut>& parts, const std::vector<Tensor3<double>>& block_max, Merge f,
               std::vector<bool>& bites) {
  const CpSpec& s = c.spec;
  const index_t P = s.P(), n = static_cast<index_t>(c.rows.size()), h = s.h(), dv = s.dv();
  const double inf = std::numeric_limits<double>::infinity();
  RowsOut out{Tensor3<double>(n, h, dv), Tensor3<double>(n, h, 1)};
  bites.assign(sz(P), false);
  for (index_t a = 0; a < n; ++a) {
    const index_t r = c.chunks.rank_of[sz(c.rows[sz(a)])];
    for (index_t i = 0; i < h; ++i) {
      double lse_max = -inf, l = 0;  // the true LSE: log sum_j exp(LSE_j)
      for (const RowsOut& p : parts) lse_max = std::max(lse_max, p.lse.at(a, i, 0));
      for (const RowsOut& p : parts)
        if (std::isfinite(p.lse.at(a, i, 0))) l += std::exp(p.lse.at(a, i, 0) - lse_max);
      const double lse = l > 0 ? lse_max + std::log(l) : -inf;
      out.lse.at(a, i, 0) = lse;
      if (!(l > 0)) continue;  // a row that sees no key: O 0
      double m = -inf, seen = 0;
      for (index_t step = 0; step < P; ++step) {
        const index_t j = ring_kv_block(r, step, P);
        const double L = parts[sz(j)].lse.at(a, i, 0);
        if (!std::isfinite(L)) continue;  // the step's block has no key this row sees
        double w = 1;                     // sum, mean: the partial O_j as it is
        if (f == Merge::rescale_scores || f == Merge::rescale_lse) {
          const double key = f == Merge::rescale_scores ? block_max[sz(j)].at(a, i, 0) : L;
          const double m_new = std::max(m, key);
          if (std::isfinite(m) && m_new > m) bites[sz(step)] = true;
          w = std::exp(L - m_new);  // acc += exp(L_j - m_new) O_j, acc never rescaled
          m = m_new;
        }
        seen += 1;
        for (index_t e = 0; e < dv; ++e) out.o.at(a, i, e) += w * parts[sz(j)].o.at(a, i, e);
      }
      // rescale forms: O = acc / l with l = exp(LSE - m) (rescaled right); mean: / count; sum: as is
      const double norm = f == Merge::sum ? 1.0 : f == Merge::mean ? 1.0 / seen : std::exp(m - lse);
      for (index_t e = 0; e < dv; ++e) out.o.at(a, i, e) *= norm;
    }
  }
  if (!c.data.in.sinks.empty()) apply_row_sinks(out, c.data.in.sinks);  // once, after the merge
  return out;
}

std::string steps_text(const std::vector<bool>& bites) {
  std::string t;
  for (size_t i = 0; i < bites.size(); ++i)
    if (bites[i]) t += (t.empty() ? "" : ", ") + std::to_string(i);
  return t;
}

}  // namespace

void merge_hypotheses(CheckContext& c) {
  const CpSpec& s = c.spec;
  if (s.mode() != Mode::p2p || s.P() < 2 || !c.worth({CheckTensor::o}, "ring merge")) return;
  const std::vector<RowsOut> parts = block_partials(s, c.data.in, c.rows);
  std::vector<Tensor3<double>> block_max;  // block j's largest score each sampled row sees
  for (index_t j = 0; j < s.P(); ++j) {
    std::vector<index_t> keys = s.partition().indices(j);
    std::sort(keys.begin(), keys.end());
    block_max.push_back(score_max_at(s, c.data.in, true_rule(s), c.rows, &keys));
  }
  const bool bwd = c.present(CheckTensor::dq);
  const struct {
    Merge f;
    std::string id, name;
    int priority;
  } forms[] = {
      {Merge::rescale_scores, "merge_not_rescaled:scores",
       "online-softmax merge: the running output not rescaled when the row max grows, m the running max of the scores "
       "(acc += exp(s - m_new) V without acc *= exp(m_old - m_new); l rescaled, so LSE is right)", 82},
      {Merge::rescale_lse, "merge_not_rescaled:lse",
       "online-softmax merge of the steps' (O_i, LSE_i): the running output not rescaled when the running max m of the LSEs grows "
       "(acc += exp(LSE_i - m_new) O_i without acc *= exp(m_old - m_new); l rescaled, so LSE is right)", 83},
      {Merge::sum, "merge_weights:sum", "ring steps' partial outputs summed without their LSE weights: O = sum of O_i (LSE merged right)", 84},
      {Merge::mean, "merge_weights:mean",
       "ring steps' partial outputs averaged without their LSE weights: O = mean of O_i over the steps that see a key (LSE merged right)", 85},
  };
  for (const auto& form : forms) {
    std::vector<bool> bites;
    const RowsOut x = merged(c, parts, block_max, form.f, bites);
    const bool rescale = form.f == Merge::rescale_scores || form.f == Merge::rescale_lse;
    if (rescale && steps_text(bites).empty()) continue;  // the max never grew: the bug changes nothing
    Hypothesis h;
    h.id = form.id, h.priority = form.priority;
    h.name = form.name + (rescale ? "; bites at ring steps " + steps_text(bites) + " (where a sampled row's max grew)" : "");
    h.method = "per-step partial results recomputed at " + count(c.rows, "rows") + ", merged in each rank's ring order";
    h.pred[idx(CheckTensor::o)] = at(c.rows, x.o);
    h.pred[idx(CheckTensor::lse)] = at(c.rows, x.lse);
    if (bwd) h.pred[idx(CheckTensor::dq)] = h.pred[idx(CheckTensor::dk)] = h.pred[idx(CheckTensor::dv)] = unchecked();
    HypothesisResult r = c.evaluate(h);
    if (c.next_stage(r.level >= 0) && bwd) {  // it fits O and LSE: dQ from the faulted O (what the backward reads)
      h.pred[idx(CheckTensor::dq)] = at(c.rows, dq_at(s, c.data.in, true_rule(s), c.rows, x));
      h.method += "; dQ from the faulted O; dK, dV not checked";
      r = c.evaluate(h);
    }
    c.keep(h, r);
  }
}

}  // namespace cplab
