// check.cpp: run_check, the reference, the comparison and the diagnosis in order (check.h).
#include "check/check.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>

#include "core/error.h"
#include "core/interrupt.h"
#include "core/sinks.h"
#include "core/util.h"

namespace cplab {

namespace {

using Clock = std::chrono::steady_clock;
double secs(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

// the worst error / tolerance of r at level L (its ranking among hypotheses explaining at L)
double worst_ratio(const HypothesisResult& r, const CheckLevel& L) {
  double m = 0;
  for (CheckTensor t : kAllCheckTensors)
    if (!std::isnan(r.err[idx(t)])) m = std::max(m, r.err[idx(t)] / L.tol[idx(t)]);
  return m;
}

}  // namespace

// "no fault": the reference itself, at the tightest level its errors fit
HypothesisResult no_fault_hypothesis(const std::array<ClaimedTensor, kCheckTensors>& out,
                                     const std::array<double, kCheckTensors>& base_err, const std::vector<CheckLevel>& levels) {
  HypothesisResult r;
  r.id = "none", r.priority = 100, r.method = "the reference itself";
  for (CheckTensor t : kAllCheckTensors) {
    r.kind[idx(t)] = PredKind::reference;
    r.err[idx(t)] = base_err[idx(t)];
    r.fault[idx(t)] = out[idx(t)].present ? 0 : std::numeric_limits<double>::quiet_NaN();
  }
  for (size_t L = 0; L < levels.size() && r.level < 0; ++L) {
    bool fits = true;
    for (CheckTensor t : kAllCheckTensors)
      fits = fits && (std::isnan(r.err[idx(t)]) || r.err[idx(t)] <= levels[L].tol[idx(t)]);
    if (fits) r.level = static_cast<int>(L);
  }
  if (r.level > 0) {
    const std::string& d = levels[sz(r.level)].name;
    r.name = "equivalent within " + d + "'s tolerance only: errors of a " + d +
             " computation or merge, above the tolerance of the dtype the outputs are saved in";
  } else {
    r.name = "no fault: the reference itself";
  }
  return r;
}

void rank_hypotheses(std::vector<HypothesisResult>& results, const std::vector<CheckLevel>& levels) {
  std::stable_sort(results.begin(), results.end(), [&](const HypothesisResult& a, const HypothesisResult& b) {
    if ((a.level >= 0) != (b.level >= 0)) return a.level >= 0;
    if (a.level < 0) return a.priority < b.priority;
    if (a.level != b.level) return a.level < b.level;
    if (a.matches_nonfinite() != b.matches_nonfinite()) return a.matches_nonfinite();  // it predicts the claimed NaN / inf
    if (a.unchecked() != b.unchecked()) return a.unchecked() < b.unchecked();
    if (a.priority != b.priority) return a.priority < b.priority;
    return worst_ratio(a, levels[sz(a.level)]) < worst_ratio(b, levels[sz(b.level)]);
  });
}

namespace {

// the verdict's words after "NOT equivalent: " for the ranked hypotheses (best first)
std::string diagnosis_words(const CheckReport& rep) {
  const HypothesisResult& best = rep.hypotheses.front();
  if (best.level < 0) return "no known fault explains it";
  if (best.id == "none") {
    const std::string& d = rep.levels[sz(best.level)].name;
    return "equivalent within " + d + "'s tolerance only (errors consistent with a " + d + " computation or merge)";
  }
  return best.name + (best.level > 0 ? " (within " + rep.levels[sz(best.level)].name + "'s tolerance)" : "") +
         (best.spec_hint.empty() ? "" : " (these outputs are correct for " + best.spec_hint + ")");
}

}  // namespace

std::string check_verdict(const CheckReport& rep) {
  const HypothesisResult& best = rep.hypotheses.front();
  if (rep.outputs_equivalent && !rep.dsinks.ok())  // O ... dV right, d s_h not
    return "NOT equivalent: " + (rep.dsinks.fault.empty() ? "d s_h (" + rep.dsinks.source + ") wrong, and no known fault explains it"
                                                           : rep.dsinks.fault);
  if (rep.outputs_equivalent) return "equivalent";
  // claimed NaN / inf first (issue 38), then what explains the finite values
  std::string nf;
  for (const std::string& l : nonfinite_lines(rep.map)) nf += (nf.empty() ? "" : "; ") + l;
  if (nf.empty()) return "NOT equivalent: " + diagnosis_words(rep);
  std::array<index_t, kCheckTensors> counts{};
  for (CheckTensor t : kAllCheckTensors) counts[idx(t)] = rep.map.nonfinite_total[idx(t)].total();
  if (best.level >= 0 && best.id != "none" && best.predicts_nonfinite(counts))
    return "NOT equivalent: " + nf + ", as predicted by: " + diagnosis_words(rep);
  if (best.id == "none" && best.level == 0) return "NOT equivalent: " + nf + "; the finite values are equivalent";
  std::string rest = diagnosis_words(rep);
  if (best.level < 0) rest = "no known fault explains them";
  return "NOT equivalent: " + nf + "; the finite values: " + rest;
}

namespace {

// claimed d s_h against the reference's (dref), and what a wrong one is: the sign, cp times, one rank's rows
void check_dsinks(const CheckContext& c, const std::vector<double>& dref, const CheckOptions& options, SinkGradCheck& g) {
  const ClaimedSinkGrad& cl = c.data.dsinks;
  if (!cl.present) return;
  g.present = true, g.dtype = cl.dtype, g.source = cl.source;
  g.tol = options.tolerance ? *options.tolerance : dtype_tolerance(CheckTensor::dq, cl.dtype);
  double scale = 0;
  for (double x : dref) scale = std::max(scale, std::abs(x));
  if (scale == 0) scale = 1;
  auto err = [&](const std::vector<double>& p) {
    double m = 0;
    for (size_t i = 0; i < p.size(); ++i) m = std::max(m, std::abs(cl.x[i] - p[i]));
    return m / scale;
  };
  g.err = err(dref);
  if (g.ok()) return;
  const CpSpec& s = c.spec;
  std::vector<std::pair<std::string, std::vector<double>>> faults;
  std::vector<double> neg = dref, times = dref;
  for (double& x : neg) x = -x;
  for (double& x : times) x *= static_cast<double>(s.P());
  faults.emplace_back("d s_h with the wrong sign (+sum exp(s_h - LSE) (dO . O) instead of -)", neg);
  if (s.P() > 1) faults.emplace_back("d s_h counted cp = " + num(s.P()) + " times (every rank added the whole sum)", times);
  // each rank's own rows' part: core/sinks.h sink_grad over its rows, from the reference's O and LSE
  for (index_t r = 0; r < s.P() && s.P() > 1; ++r) {
    const std::vector<index_t> rows = s.partition().indices(r);
    const Tensor3<double> o = gather(c.ref[idx(CheckTensor::o)], rows), dout = gather(c.data.in.dout, rows);
    const Tensor3<double> l = gather(c.ref[idx(CheckTensor::lse)], rows);  // (n, h, 1)
    const Rows<double> lse = lse_rows(l);
    std::vector<double> part(sz(s.h()), 0.0);
    sink_grad<double>(o.view(), dout.view(), rows_view(lse), c.data.in.sinks.data(), part.data());
    faults.emplace_back("d s_h of rank " + num(r) + "'s rows only (the ranks' parts were never added up)", part);
  }
  for (const auto& [name, p] : faults)
    if (err(p) <= g.tol) {
      g.fault = name;
      return;
    }
}

}  // namespace

std::vector<const HypothesisResult*> CheckReport::explaining() const {
  std::vector<const HypothesisResult*> v;
  for (const HypothesisResult& h : hypotheses)
    if (h.level >= 0) v.push_back(&h);
  return v;
}

const std::vector<FaultFamily>& fault_families() {
  static const std::vector<FaultFamily> f = {
      {"transforms", transform_hypotheses, true},  {"recomputed", recompute_hypotheses, false},
      {"attention rule", attn_rule_hypotheses, false}, {"sinks", sink_hypotheses, false},
      {"ring merge", merge_hypotheses, false},      {"ring backward", backward_hypotheses, false},
      {"factors", factor_hypotheses, true},
  };
  return f;
}

CheckReport run_check(const CpSpec& spec, const CheckData& data, const CheckOptions& options) {
  CheckReport rep;
  rep.spec = spec;
  rep.inputs_dir = data.inputs_dir, rep.outputs_dir = data.outputs_dir, rep.arrays = data.arrays;
  rep.input_dtypes = data.input_dtypes;
  rep.has_do = data.in.dout.n > 0;
  for (CheckTensor t : kAllCheckTensors) {
    rep.out[idx(t)].present = data.out[idx(t)].present;
    rep.out[idx(t)].dtype = data.out[idx(t)].dtype;
    rep.out[idx(t)].source = data.out[idx(t)].source;
  }
  const bool bwd = data.backward();
  require(!spec.sinks() || static_cast<index_t>(data.in.sinks.size()) == spec.h(),
          "cplab check with --sinks needs one sink logit per query head (" + num(spec.h()) + "), got " +
              num(static_cast<index_t>(data.in.sinks.size())));
  rep.sink_logits = data.in.sinks;

  // the reference, in double
  auto t0 = Clock::now();
  RunSpec rs;
  rs.cp = spec;
  rs.backward = bwd;
  DenseReference dr = dense_reference(rs, data.in.q, data.in.k, data.in.v, bwd ? data.in.dout : Tensor3<double>(),
                                     data.in.sinks);
  CheckContext c{spec, data, {}, {}, {}, check_levels(data.out, options.tolerance), layout_chunks(spec), {}, {}, {}, {}, {}};
  c.ref[idx(CheckTensor::o)] = std::move(dr.o);
  c.ref[idx(CheckTensor::lse)] = lse_tensor(dr.lse);
  if (bwd) {
    c.ref[idx(CheckTensor::dq)] = std::move(dr.dq);
    c.ref[idx(CheckTensor::dk)] = std::move(dr.dk);
    c.ref[idx(CheckTensor::dv)] = std::move(dr.dv);
  }
  std::array<const Tensor3<double>*, kCheckTensors> refs{};
  for (CheckTensor t : kAllCheckTensors) {
    refs[idx(t)] = &c.ref[idx(t)];
    if (c.present(t)) c.scale[idx(t)] = ref_scale(c.ref[idx(t)], t == CheckTensor::lse ? &spec.packing() : nullptr);
  }
  rep.map = error_map(spec, c.chunks, data.out, refs, c.scale);
  for (CheckTensor t : kAllCheckTensors) {
    c.base_err[idx(t)] = c.present(t) ? rep.map.max(t) : std::numeric_limits<double>::quiet_NaN();
    c.nonfinite[idx(t)] = rep.map.nonfinite_total[idx(t)].total();  // claimed NaN / inf: never equivalent
  }
  rep.err = c.base_err;
  if (options.precision) {  // the pipeline's error on these inputs is the tightest level (pipeline_bound.h)
    rep.pipeline = pipeline_bound(spec, data.in, bwd, *options.precision, data.out, c.ref, c.scale);
    c.levels = pipeline_levels(*rep.pipeline, c.levels, data.out);
  }
  rep.levels = c.levels;
  rep.chunks = c.chunks;
  check_dsinks(c, dr.dsinks, options, rep.dsinks);
  rep.reference_seconds = secs(t0);

  // the diagnosis, when the outputs are not equivalent
  t0 = Clock::now();
  HypothesisResult none = no_fault_hypothesis(data.out, c.base_err, c.levels);
  rep.equivalent = rep.outputs_equivalent = none.level == 0 && !rep.map.any_nonfinite();
  if (!rep.equivalent) {
    c.rows = c.keys = sample_tokens(spec, c.chunks, std::max<index_t>(2, options.samples_per_chunk));
    rep.sampled_rows = rep.sampled_keys = static_cast<index_t>(c.rows.size());
    const std::vector<FaultFamily>& families = fault_families();
    for (size_t f = 0; f < families.size(); ++f) {
      interruption_point();  // and every hypothesis (CheckContext::evaluate)
      c.family = static_cast<int>(f);
      families[f].run(c);
    }
    c.family = -1;
    if (none.level < 0) rep.pairs = pair_hypotheses(c, options.pair_budget_seconds);
  }
  c.results.push_back(none);
  rank_hypotheses(c.results, c.levels);
  rep.hypotheses = std::move(c.results);
  rep.skipped = c.skipped;
  rep.hypotheses_seconds = secs(t0);
  rep.where = where_lines(rep.map, rep.chunks, rep.levels[0].tol);

  rep.verdict = check_verdict(rep);
  if (rep.pipeline) {  // the bound's words; "no fault" at a looser level is noise above the pipeline's
    const HypothesisResult& best = rep.hypotheses.front();
    const bool noise = best.id == "none" && best.level > 0 && !rep.map.any_nonfinite();
    rep.verdict = pipeline_verdict(rep.verdict, *rep.pipeline, rep.err, rep.outputs_equivalent, noise ? rep.levels[sz(best.level)].name : "");
  }
  rep.equivalent = rep.outputs_equivalent && rep.dsinks.ok();
  return rep;
}

}  // namespace cplab
