// test_check_precision.cpp: `cplab check --precision` (check/pipeline_bound.h): the tolerance is the
// error a correct implementation with the given pipeline has on the check's inputs.
//
// What it is: a p2p zigzag causal GQA (8 over 2 heads) run at cp 2, 8 and 32 with the pipeline
// inputs=bf16,accumulate=fp32,partials=bf16,merge=bf16 (and at cp 8 with no ring storage,
// inputs=bf16,accumulate=fp32: partials kept exact below), outputs saved O bf16, LSE fp32:
//   (a) correct outputs made by the emulated pipeline itself (run_experiment with the ring's storage)
//   (b) correct outputs made by an independent rounding written here: each KV block's partial O and
//       LSE in plain loops, O rounded to bf16 and LSE to fp32 (what a kernel stores), folded as
//       Transformer Engine does (O = sum_j exp(LSE_j - LSE) O_j, then rounded to bf16 once)
//   (c) (b) with 3x the computed bound planted in one head of O (all its tokens)
// (a) and (b) must read "equivalent (within the error a correct ring ...)", (c) "NOT equivalent" with
// the ratio above the bound; the fixed bf16 tolerance (no --precision) passes (c), which is the point.
// The table of cases is printed (MESSAGE).
// What it is not: the command line's rules (tests/bad_input_check.py) or the ring's rounding itself
// (tests/test_precision.cpp).
#include <doctest/doctest.h>

#include <cmath>
#include <cstdio>
#include <limits>
#include <nlohmann/json.hpp>
#include <sstream>

#include "check/check.h"
#include "check_configs.h"
#include "core/dtype.h"
#include "core/util.h"
#include "run/precision.h"

namespace cplab::test {

namespace {

using Outs5 = std::array<Tensor3<double>, 5>;

// the claimed outputs as saved: O (and the gradients) in o_dtype, LSE in fp32
CheckData saved(const Inputs& in, const Outs5& outs, NpyDtype o_dtype) {
  CheckData d;
  d.in = in;
  d.inputs_dir = d.outputs_dir = "(in memory)";
  for (int t = 0; t < kCheckTensors; ++t) {
    ClaimedTensor& c = d.out[static_cast<size_t>(t)];
    c.present = outs[static_cast<size_t>(t)].n > 0, c.source = "(in memory)";
    c.dtype = t == 1 ? NpyDtype::f4 : o_dtype;
    c.x = outs[static_cast<size_t>(t)];
    const DType r = t == 1 ? DType::f32 : o_dtype == NpyDtype::bf16 ? DType::bf16 : DType::f32;
    for (double& x : c.x.data) x = round_to(x, r);
  }
  return d;
}

// (b): every KV block's partial (the keys of rank j), O rounded to bf16 and LSE to fp32, folded in
// double and rounded once (causal: key k visible to query q iff k <= q; GQA: head i reads i / (h/hk))
// (partials_bf16 false: the partials kept exact, as a ring with fp32 storage nearly does)
Outs5 independent_fold(const CpSpec& s, const Inputs& in, bool partials_bf16) {
  const index_t S = s.S(), h = s.h(), d = s.d(), dv = s.dv(), P = s.P(), group = s.h() / s.hk();
  const double ninf = -std::numeric_limits<double>::infinity();
  std::vector<index_t> rank_of(static_cast<size_t>(S));
  for (index_t r = 0; r < P; ++r)
    for (index_t g : s.partition().indices(r)) rank_of[static_cast<size_t>(g)] = r;
  Outs5 out{Tensor3<double>(S, h, dv), Tensor3<double>(S, h, 1), {}, {}, {}};
  std::vector<double> sc(static_cast<size_t>(S));
  for (index_t q = 0; q < S; ++q)
    for (index_t i = 0; i < h; ++i) {
      const index_t g = i / group;
      for (index_t k = 0; k <= q; ++k) {
        double x = 0;
        for (index_t e = 0; e < d; ++e) x += in.q.at(q, i, e) * in.k.at(k, g, e);
        sc[static_cast<size_t>(k)] = s.scale() * x;
      }
      std::vector<double> lse_j(static_cast<size_t>(P), ninf);
      std::vector<std::vector<double>> o_j(static_cast<size_t>(P), std::vector<double>(static_cast<size_t>(dv), 0.0));
      for (index_t j = 0; j < P; ++j) {
        double m = ninf;
        for (index_t k = 0; k <= q; ++k)
          if (rank_of[static_cast<size_t>(k)] == j) m = std::max(m, sc[static_cast<size_t>(k)]);
        if (m == ninf) continue;
        double l = 0;
        std::vector<double>& o = o_j[static_cast<size_t>(j)];
        for (index_t k = 0; k <= q; ++k)
          if (rank_of[static_cast<size_t>(k)] == j) {
            const double p = std::exp(sc[static_cast<size_t>(k)] - m);
            l += p;
            for (index_t e = 0; e < dv; ++e) o[static_cast<size_t>(e)] += p * in.v.at(k, g, e);
          }
        for (double& x : o) x = partials_bf16 ? round_to(x / l, DType::bf16) : x / l;
        lse_j[static_cast<size_t>(j)] = round_to(m + std::log(l), DType::f32);
      }
      double mx = ninf, sum = 0;
      for (double x : lse_j) mx = std::max(mx, x);
      for (double x : lse_j) sum += x == ninf ? 0.0 : std::exp(x - mx);
      const double lse = mx + std::log(sum);
      out[1].at(q, i, 0) = lse;
      for (index_t e = 0; e < dv; ++e) {
        double x = 0;
        for (index_t j = 0; j < P; ++j)
          if (lse_j[static_cast<size_t>(j)] != ninf) x += std::exp(lse_j[static_cast<size_t>(j)] - lse) * o_j[static_cast<size_t>(j)][static_cast<size_t>(e)];
        out[0].at(q, i, e) = round_to(x, DType::bf16);
      }
    }
  return out;
}

std::string e2(double x) {
  char b[32];
  std::snprintf(b, sizeof b, "%.2e", x);
  return b;
}

}  // namespace

TEST_CASE("check: --precision bf16 partials and merge: correct outputs (emulated, independent fold) pass, 3x the bound in one head fails") {
  struct Case {
    std::string stages;
    index_t cp;
  };
  // the pipeline at cp 2, 8, 32; and no ring storage at all (outputs still saved in bf16:
  // the bound must count that rounding too)
  const std::string bf16 = "inputs=bf16,accumulate=fp32,partials=bf16,merge=bf16", none = "inputs=bf16,accumulate=fp32";
  std::ostringstream table;
  table << "stages | cp | bound O | bound LSE | emulated O | indep. O | indep/emu | planted ratio | verdicts (emulated / independent / planted / planted, no --precision)\n";
  for (const Case& k : {Case{bf16, 2}, Case{bf16, 8}, Case{bf16, 32}, Case{none, 8}}) {
    const index_t cp = k.cp;
    CAPTURE(k.stages);
    CAPTURE(cp);
    const Precision prec = parse_precision(k.stages);
    const CpSpec spec(fields(Mode::p2p, Layout::zigzag, cp, 256, true));
    RunSpec rs;
    rs.cp = spec;
    rs.seed = 38 + static_cast<std::uint64_t>(cp);
    Inputs in = make_inputs(rs);
    round_inputs(in, DType::bf16);  // saved as bf16 by the implementation checked: --precision's inputs= is a no-op
    CheckOptions opt;
    opt.precision = prec;

    // (a) the emulated pipeline's own outputs
    CpFields f = spec.fields();
    apply_storage(prec, f);
    RunSpec es;
    es.cp = CpSpec(f);
    es.dtype = "float";
    const RunReport run = run_experiment(es, in);
    const CheckReport a = run_check(spec, saved(in, {run.o, lse_tensor(run.lse), {}, {}, {}}, NpyDtype::bf16), opt);

    // (b) the independent fold
    const Outs5 indep = independent_fold(spec, in, prec.partials.has_value());
    const CheckReport b = run_check(spec, saved(in, indep, NpyDtype::bf16), opt);
    REQUIRE(b.pipeline);

    // (c) 3x the bound b computed, in query head 5 of O, every token
    const DenseReference ref = dense_reference(rs, in.q, in.k, in.v, Tensor3<double>());
    double scale = 0;
    for (double x : ref.o.data) scale = std::max(scale, std::abs(x));
    const double bound = b.pipeline->bound[0];
    Outs5 planted = indep;
    for (index_t t = 0; t < spec.S(); ++t)
      for (index_t e = 0; e < spec.dv(); ++e) planted[0].at(t, 5, e) += 3 * bound * scale;
    const CheckReport c = run_check(spec, saved(in, planted, NpyDtype::bf16), opt);
    const CheckReport c_default = run_check(spec, saved(in, planted, NpyDtype::bf16));

    table << (k.stages == bf16 ? "bf16 partials, merge" : "no ring storage") << " | " << cp << " | " << e2(bound) << " | "
          << e2(b.pipeline->bound[1]) << " | " << e2(b.pipeline->emulated[0]) << " | " << e2(b.err[0]) << " | "
          << e2(b.err[0] / b.pipeline->emulated[0]) << " | " << e2(c.err[0] / c.pipeline->bound[0]) << " | " << a.verdict << " / "
          << b.verdict << " / " << c.verdict << " / " << c_default.verdict << "\n";

    CHECK(a.verdict.rfind("equivalent (within the error a correct ring (" + k.stages + ") at cp " +
                              num(cp) + " has on these inputs: O ",
                          0) == 0);
    CHECK(a.exit_status() == 0);
    CHECK(b.verdict.rfind("equivalent (within the error a correct ring", 0) == 0);
    CHECK(b.exit_status() == 0);
    // the same emulated run, the same bound, whoever made the outputs
    CHECK(a.pipeline->bound[0] == b.pipeline->bound[0]);
    CHECK(a.err[0] == doctest::Approx(a.pipeline->emulated[0]).epsilon(1e-9));  // (a) is the emulated run: its own error
    CHECK(c.verdict.rfind("NOT equivalent", 0) == 0);
    CHECK(c.verdict.find("x above the error a correct ring") != std::string::npos);
    CHECK(c.err[0] / c.pipeline->bound[0] > 2.5);
    CHECK(c.exit_status() == 1);
    const nlohmann::json j = check_json(c);
    CHECK(j["precision"]["stages"] == k.stages);
    CHECK(j["precision"]["bounds"]["o"].get<double>() == doctest::Approx(bound));
    CHECK(j["precision"]["worst"]["output"] == "o");
    CHECK(j["levels"][0]["name"].get<std::string>().rfind("a correct ring", 0) == 0);
  }
  MESSAGE("--precision " << bf16 << " (or " << none << "), p2p zigzag causal 8/2 heads, seq 256, O bf16, LSE fp32:\n"
          << table.str());
}

}  // namespace cplab::test
