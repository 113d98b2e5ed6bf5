// test_paper_rule.cpp: the paper's rule for pass-KV or pass-Q (Algorithm 1 of arXiv 2411.01783,
// plan/paper_rule.h) on cases computed by hand, each branch deciding alone and on its boundary.
//
// The rule as the paper writes it: pass-KV if T >= N·C·NKV·e / (2·NH·BW) or T/(T+P) >= 2·NKV/NH,
// else pass-Q. The numbers are chosen so that every threshold is exact in binary: the arithmetic is
// in the comments, and the expected values are literals, not calls into the tool's code.
// What it is not: a test of the performance model (test_infer_plan_model.cpp) or of `cplab plan`.
#include <doctest/doctest.h>

#include "core/error.h"
#include "plan/paper_rule.h"

using namespace cplab;

namespace {

// the hand case: N = 4 ranks, C = 1e15 FLOP/s, NKV = 1, NH = 16, e = 2 bytes, BW = 5e10 bytes/s
//   T threshold     = N·C·NKV·e / (2·NH·BW) = 4·1e15·1·2 / (2·16·5e10) = 8e15 / 1.6e12 = 5000 tokens
//   ratio threshold = 2·NKV/NH = 2/16 = 0.125
PaperRule hand(std::int64_t T, std::int64_t P) { return paper_rule_pass_kv(T, P, 4, 1e15, 1, 16, 2, 5e10); }

}  // namespace

TEST_CASE("paper rule: the thresholds as the paper writes them") {
  const PaperRule r = hand(1, 0);
  CHECK(r.t_threshold == 5000.0);     // 8e15 / 1.6e12, both exact
  CHECK(r.ratio_threshold == 0.125);  // 2/16
}

TEST_CASE("paper rule: the T condition decides alone, on its boundary and one token below") {
  // T = 5000, P = 1000000: T >= 5000 holds (equality); T/(T+P) = 5000/1005000 = 0.004975 < 0.125
  PaperRule r = hand(5000, 1000000);
  CHECK(r.t_holds);
  CHECK_FALSE(r.ratio_holds);
  CHECK(r.pass_kv);
  // T = 4999: 4999 < 5000; 4999/1004999 = 0.004974 < 0.125: neither holds, pass-Q
  r = hand(4999, 1000000);
  CHECK_FALSE(r.t_holds);
  CHECK_FALSE(r.ratio_holds);
  CHECK_FALSE(r.pass_kv);
  CHECK(r.ratio == doctest::Approx(4999.0 / 1004999.0));
}

TEST_CASE("paper rule: the ratio condition decides alone, on its boundary and one cached token past it") {
  // T = 1000, P = 7000: T/(T+P) = 1000/8000 = 0.125 >= 0.125 (equality); 1000 < 5000
  PaperRule r = hand(1000, 7000);
  CHECK(r.ratio == 0.125);
  CHECK(r.ratio_holds);
  CHECK_FALSE(r.t_holds);
  CHECK(r.pass_kv);
  // P = 7001: 1000/8001 = 0.12498 < 0.125 (in integers: T·NH = 16000 < 2·NKV·(T+P) = 16002); pass-Q
  r = hand(1000, 7001);
  CHECK_FALSE(r.ratio_holds);
  CHECK_FALSE(r.t_holds);
  CHECK_FALSE(r.pass_kv);
}

TEST_CASE("paper rule: both conditions, and a full prefill (P = 0)") {
  // T = 8000, P = 0: 8000 >= 5000 and 8000/8000 = 1 >= 0.125
  PaperRule r = hand(8000, 0);
  CHECK(r.t_holds);
  CHECK(r.ratio_holds);
  CHECK(r.pass_kv);
  // T = 100, P = 0: 100 < 5000, but T/(T+P) = 1 >= 0.125: with GQA a full prefill passes KV (training's answer)
  r = hand(100, 0);
  CHECK_FALSE(r.t_holds);
  CHECK(r.ratio_holds);
  CHECK(r.pass_kv);
}

TEST_CASE("paper rule: without GQA only the T condition can choose pass-KV") {
  // NKV = NH = 16: ratio threshold 2·16/16 = 2 > 1, never met; T threshold 4·1e15·16·2 / (2·16·5e10)
  // = 1.28e17 / 1.6e12 = 80000 tokens
  PaperRule r = paper_rule_pass_kv(79999, 0, 4, 1e15, 16, 16, 2, 5e10);
  CHECK(r.t_threshold == 80000.0);
  CHECK(r.ratio_threshold == 2.0);
  CHECK_FALSE(r.ratio_holds);
  CHECK_FALSE(r.pass_kv);  // a full prefill of 79999 tokens: Q (16 heads) is smaller than K + V (32 heads' worth)
  CHECK(paper_rule_pass_kv(80000, 0, 4, 1e15, 16, 16, 2, 5e10).pass_kv);
}

TEST_CASE("paper rule: the T threshold grows with N and C, shrinks with BW") {
  // N = 16: 16·1e15·1·2 / (2·16·5e10) = 3.2e16 / 1.6e12 = 20000 tokens
  CHECK(paper_rule_pass_kv(1, 0, 16, 1e15, 1, 16, 2, 5e10).t_threshold == 20000.0);
  // BW = 4e11 (8x): 8e15 / (2·16·4e11) = 8e15 / 1.28e13 = 625 tokens
  CHECK(paper_rule_pass_kv(1, 0, 4, 1e15, 1, 16, 2, 4e11).t_threshold == 625.0);
  // the Llama-3 405B slice of docs/plan.md on the model's H100 preset: N = 4, C = 350e12, NKV = 1,
  // NH = 16, e = 2, BW = 46e9: 2.8e15 / 1.472e12 = 1902.17 tokens
  CHECK(paper_rule_pass_kv(1, 0, 4, 350e12, 1, 16, 2, 46e9).t_threshold == doctest::Approx(2800000.0 / 1472.0));
}

TEST_CASE("paper rule: the reason names the deciding condition") {
  CHECK(hand(5000, 1000000).reason().rfind("pass-KV: T = 5000 >= N*C*NKV*e / (2*NH*BW) = 5000 tokens", 0) == 0);
  CHECK(hand(1000, 7000).reason().rfind("pass-KV: T/(T+P) = 12.5% >= 2*NKV/NH = 12.5%", 0) == 0);
  CHECK(hand(4999, 1000000).reason().rfind("pass-Q: T = 4999 < N*C*NKV*e / (2*NH*BW) = 5000 tokens", 0) == 0);
}

TEST_CASE("paper rule: arguments out of range are refused, naming them") {
  CHECK_THROWS_WITH_AS(paper_rule_pass_kv(0, 10, 4, 1e15, 1, 16, 2, 5e10), doctest::Contains("T (new tokens) = 0"), Error);
  CHECK_THROWS_WITH_AS(paper_rule_pass_kv(1, -1, 4, 1e15, 1, 16, 2, 5e10), doctest::Contains("P (cached tokens) = -1"), Error);
  CHECK_THROWS_WITH_AS(paper_rule_pass_kv(1, 0, 4, 1e15, 1, 16, 2, 0), doctest::Contains("BW (bytes/s) must be finite"), Error);
  CHECK_THROWS_WITH_AS(paper_rule_pass_kv(1, 0, 4, 1e15, 0, 16, 2, 5e10), doctest::Contains("NKV (KV heads) = 0"), Error);
}
