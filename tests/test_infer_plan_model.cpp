// test_infer_plan_model.cpp: the inference step's plan (plan/infer_plan_model.h): every variant's
// planned trace priced by the alpha-beta model, the paper's rule on the model's hardware, and the
// sentence saying why they differ.
//
// What it is: the variants' traces carry every visible pair once (FLOPs = the dense oracle's count),
// pass-Q's closing all-to-all is priced and exposed, pass-KV's messages are its padded shard, the
// rule reads the model's C and BW, the flip of the lesson (a long cache: pass-Q; a full prefill:
// pass-KV) holds for the Llama-3 405B slice, and the difference sentence is there exactly when the
// model and the rule disagree.
// What it is not: the rule on hand-computed cases (test_paper_rule.cpp) or the docs table's
// equality with the tool (tests/infer_plan_table_check.py).
#include <doctest/doctest.h>

#include <cmath>

#include "core/error.h"
#include "infer/infer_run.h"
#include "plan/infer_plan_model.h"

using namespace cplab;

namespace {

// one GPU of a TP-8 node of Llama-3 405B (128 / 8 query heads, 8 / 8 KV heads, head dim 128); CP
// across nodes: every rank on its own node, its ring on the inter-node link (docs/plan.md)
InferPlanProblem slice405b(index_t N, index_t T, index_t P) {
  InferPlanProblem p;
  p.heads = 16;
  p.kv_heads = 1;
  p.head_dim = 128;
  p.gpus = N;
  p.T = T;
  p.P = P;
  return p;
}

PerfAssumptions across_nodes() {
  PerfAssumptions a;
  a.gpus_per_node = 1;
  return a;
}

InferSpec spec_of(const InferPlanProblem& p, InferMode m) {
  InferFields f;
  f.mode = m;
  f.cp = p.gpus;
  f.cached = {p.P};
  f.fresh = {p.T};
  f.heads = p.heads;
  f.kv_heads = p.kv_heads;
  f.head_dim = p.head_dim;
  return InferSpec(f);
}

}  // namespace

TEST_CASE("infer plan: every variant's tiles hold every visible pair once") {
  for (auto [T, P] : {std::pair<index_t, index_t>{37, 1000}, {8, 0}, {1, 999}, {333, 7}}) {
    InferPlanProblem p = slice405b(4, T, P);
    p.heads = 4;
    p.head_dim = 16;
    for (const InferPlanOption& o : infer_plan_options(p, across_nodes())) {
      INFO(o.label << " T " << T << " P " << P << (o.valid ? "" : " invalid: " + o.why_not));
      REQUIRE(o.valid);
      CHECK(o.flops == static_cast<double>(infer_dense_flops(spec_of(p, o.mode))));
      double sum = 0;
      for (const StepTime& s : o.pred.steps) sum += s.time_us;
      CHECK(sum == doctest::Approx(o.pred.fwd_us));
    }
  }
}

TEST_CASE("infer plan: pass-Q's closing all-to-all is priced and exposed, pass-KV has no collective") {
  const std::vector<InferPlanOption> v = infer_plan_options(slice405b(4, 1311, 131072 - 1311), across_nodes());
  const InferPlanOption &kv = infer_option(v, InferMode::pass_kv), &q = infer_option(v, InferMode::pass_q);
  CHECK(kv.collective_us == 0);
  CHECK(q.collective_us >= across_nodes().inter.alpha_us);  // alpha plus the partials' bytes
  // the all-to-all is the last step, alone: its whole time is exposed
  CHECK(q.pred.steps.back().compute_us == 0);
  CHECK(q.pred.steps.back().time_us == doctest::Approx(q.collective_us));
  CHECK(q.pred.exposed_comm_us == doctest::Approx(q.collective_us + q.ring_exposed_us));
}

TEST_CASE("infer plan: a ring message is the padded shard, in bf16") {
  const InferPlanProblem p = slice405b(4, 1311, 131072 - 1311);
  const std::vector<InferPlanOption> v = infer_plan_options(p, across_nodes());
  const InferSpec kv = spec_of(p, InferMode::pass_kv), q = spec_of(p, InferMode::pass_q);
  CHECK(infer_option(v, InferMode::pass_kv).message_rows == static_cast<double>(kv.Mkv()));
  CHECK(infer_option(v, InferMode::pass_q).message_rows == static_cast<double>(q.Mq()));
  CHECK(infer_option(v, InferMode::decode_ag).message_rows == 0);
}

TEST_CASE("infer plan: the rule reads the model's hardware") {
  const PerfAssumptions a = across_nodes();
  // across nodes: C = 350 TFLOP/s (h100 preset), BW = 46 GB/s (ib-ndr p2p), e = 2
  CHECK(infer_paper_rule(slice405b(4, 100, 0), a).t_threshold == doctest::Approx(4 * 350e12 * 2 / (2 * 16 * 46e9)));
  // one node of 8: BW = 370 GB/s (nvlink4 p2p)
  PerfAssumptions one;
  CHECK(infer_paper_rule(slice405b(8, 100, 0), one).t_threshold == doctest::Approx(8 * 350e12 * 2 / (2 * 16 * 370e9)));
}

TEST_CASE("infer plan: the flip: a long cache passes Q, a full prefill passes KV, for the model and the rule") {
  for (index_t N : {4, 16}) {
    INFO("N = " << N);
    const InferPlanProblem cache = slice405b(N, 131, 131072 - 131), full = slice405b(N, 131072, 0);
    const std::vector<InferPlanOption> vc = infer_plan_options(cache, across_nodes()), vf = infer_plan_options(full, across_nodes());
    CHECK(infer_model_pass_kv(vc) == std::optional<bool>(false));
    CHECK_FALSE(infer_paper_rule(cache, across_nodes()).pass_kv);
    CHECK(infer_model_pass_kv(vf) == std::optional<bool>(true));
    CHECK(infer_paper_rule(full, across_nodes()).pass_kv);
  }
}

TEST_CASE("infer plan: the difference sentence is there exactly when the model and the rule disagree") {
  // the docs table's fractions, and T around the rule's T threshold T*, where the model's crossover
  // (pass-Q pays its closing all-to-all) comes first
  int differ = 0, rows = 0;
  for (index_t N : {4, 16}) {
    const double star = infer_paper_rule(slice405b(N, 1, 0), across_nodes()).t_threshold;
    std::vector<index_t> Ts;
    for (double f : infer_table_fractions()) Ts.push_back(std::max<index_t>(1, static_cast<index_t>(std::llround(f * 131072))));
    for (double x : {0.8, 0.9, 0.95, 0.99, 1.0, 1.01, 1.1}) Ts.push_back(static_cast<index_t>(std::ceil(x * star)));
    for (index_t T : Ts) {
      const InferPlanProblem p = slice405b(N, T, 131072 - T);
      const std::vector<InferPlanOption> v = infer_plan_options(p, across_nodes());
      const PaperRule r = infer_paper_rule(p, across_nodes());
      const std::optional<bool> m = infer_model_pass_kv(v);
      REQUIRE(m);
      const std::string why = infer_rule_difference(p, v, r);
      INFO("N " << N << " T " << T << ": " << why);
      CHECK(why.empty() == (*m == r.pass_kv));
      if (!why.empty()) {
        ++differ;
        CHECK(why.find(*m ? "the model takes pass-KV where the rule says pass-Q" : "the model takes pass-Q where the rule says pass-KV") == 0);
      }
      ++rows;
    }
  }
  MESSAGE(differ << " of " << rows << " rows differ");
  CHECK(differ > 0);        // both branches of the check above were taken
  CHECK(differ < rows);
}

TEST_CASE("infer plan: the problem's limits name the rule") {
  InferPlanProblem p = slice405b(4, 0, 10);
  CHECK_THROWS_WITH_AS(check_infer_plan_problem(p), doctest::Contains("seq (T, the new tokens) 0 must be >= 1"), Error);
  p = slice405b(4, 10, -1);
  CHECK_THROWS_WITH_AS(check_infer_plan_problem(p), doctest::Contains("kv-cache (P, the cached tokens) -1 must be >= 0"), Error);
  p = slice405b(4, std::int64_t{1} << 40, 1);
  CHECK_THROWS_WITH_AS(check_infer_plan_problem(p), doctest::Contains("kv-cache + seq = 1099511627777 tokens is more than"), Error);
  p = slice405b(512, 10, 10);
  CHECK_THROWS_WITH_AS(check_infer_plan_problem(p), doctest::Contains("gpus 512 is more than 256"), Error);
}
