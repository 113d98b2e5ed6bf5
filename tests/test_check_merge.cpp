// test_check_merge.cpp: `cplab check` names the bugs of a ring's online-softmax merge and of its
// backward (issue 38), injected one at a time into a naive ring (tests/naive_ring.h).
//
// What it is: for p2p rings (zigzag causal cp 4, contiguous, non-causal, a causal window of 9, packed
// sequences with padding; GQA 8 heads over 2), the naive ring with every switch off must match the
// reference to 1e-12 and be checked "equivalent"; then each bug alone (the running output not
// rescaled, by the scores' or the LSEs' running max; partial outputs summed or averaged; the backward
// with each step's partial LSE or partial D; a stale KV buffer, step 0's or the previous step's) must
// be named first. The table of cases and verdicts is printed (MESSAGE).
// What it is not: the other faults (tests/test_check.cpp) or the command line.
#include <doctest/doctest.h>

#include <cstdio>
#include <sstream>

#include "check/check.h"
#include "check_claimed.h"
#include "check_configs.h"
#include "check_table.h"
#include "naive_ring.h"
#include "core/util.h"

namespace cplab::test {

namespace {

std::vector<Config> ring_configs() {
  CpFields packed = fields(Mode::p2p, Layout::zigzag, 2, 0, true);
  packed.cu_seqlens = {0, 10, 34, 39};
  packed.pad = true;
  return {
      {"p2p zigzag causal cp 4 seq 128", fields(Mode::p2p, Layout::zigzag, 4, 128, true)},
      {"p2p contiguous causal cp 4 seq 64", fields(Mode::p2p, Layout::contiguous, 4, 64, true)},
      {"p2p zigzag non-causal cp 4 seq 64", fields(Mode::p2p, Layout::zigzag, 4, 64, false)},
      {"p2p zigzag causal window 9 cp 4 seq 64", windowed(fields(Mode::p2p, Layout::zigzag, 4, 64, true), 9)},
      {"p2p zigzag causal cp 2 packed 0,10,34,39 --pad", packed},
  };
}

// max |x - y| / max |y| over every value (-inf = -inf)
double rel(const Tensor3<double>& x, const Tensor3<double>& y) {
  double m = 0, sc = 0;
  for (size_t e = 0; e < y.data.size(); ++e) {
    if (std::isinf(y.data[e]) && x.data[e] == y.data[e]) continue;
    m = std::max(m, std::abs(x.data[e] - y.data[e]));
    sc = std::max(sc, std::abs(y.data[e]));
  }
  return sc > 0 ? m / sc : m;
}

struct Bug {
  std::string name;
  RingBugs bugs;
  std::string expect_id;  // "": the verdict must be "equivalent"
};

std::vector<Bug> bugs(index_t P) {
  using M = RingBugs::Merge;
  std::vector<Bug> v = {
      {"none", {}, ""},
      {"none (merge by the steps' LSEs)", {M::online_lse, false, false, false, 0}, ""},
      {"running output not rescaled (scores' max)", {M::online_scores, true, false, false, 0}, "merge_not_rescaled:scores"},
      {"running output not rescaled (LSEs' max)", {M::online_lse, true, false, false, 0}, "merge_not_rescaled:lse"},
      {"partial O's summed", {M::sum, false, false, false, 0}, "merge_weights:sum"},
      {"partial O's averaged", {M::mean, false, false, false, 0}, "merge_weights:mean"},
      {"backward with partial LSE", {M::online_scores, false, true, false, 0}, "bwd_partial_lse"},
      {"backward with partial D", {M::online_scores, false, false, true, 0}, "bwd_partial_d"},
      {"backward with step 0's KV", {M::online_scores, false, false, false, 1}, "bwd_stale_kv:step0"},
  };
  if (P > 2) v.push_back({"backward with previous step's KV", {M::online_scores, false, false, false, 2}, "bwd_stale_kv:previous"});
  return v;
}

}  // namespace

TEST_CASE("check: the naive ring with no bug is exact attention") {
  for (const Config& cfg : ring_configs()) {
    CAPTURE(cfg.name);
    const Run correct = correct_run(cfg.f);
    const Inputs& in = correct.in;
    for (RingBugs::Merge m : {RingBugs::Merge::online_scores, RingBugs::Merge::online_lse}) {
      RingBugs b;
      b.merge = m;
      const Outs x = naive_ring(correct.spec, in, b);
      for (size_t t = 0; t < x.size(); ++t) CHECK(rel(x[t], correct.out[t]) < 1e-12);
    }
  }
}

TEST_CASE("check: every merge and ring-backward bug is named first, and the correct ring is equivalent") {
  FaultTable table("injected bug");
  for (const Config& cfg : ring_configs()) {
    const CpSpec s(cfg.f);
    const Inputs in = make_inputs(RunSpec{s, true, "double", 11});  // correct_run's inputs
    for (const Bug& bug : bugs(s.P())) {
      CAPTURE(cfg.name);
      CAPTURE(bug.name);
      const CheckReport r = run_check(s, claimed(in, naive_ring(s, in, bug.bugs), NpyDtype::f8));
      table.row(cfg.name, bug.name, r, bug.expect_id, r.hypotheses.front().level == 0);
    }
  }
  table.finish();
}

}  // namespace cplab::test
