// test_dcp_optimum.cpp: cplab's DCP scheduler against the exhaustive optimum of 420 small batches.
//
// What it is: issue 24's quality test. 420 seeded random batches (2-16 ranks, 2-10 samples, lengths
// multiples of 256 up to min(16 ranks, 24K), M 4096, the overhead cost with two parameter sets);
// for each, the optimum by the block-view branch and bound (dcp_exact_tree.h) with a node limit 20x
// the one cplab's scheduler uses, required to complete, cross-checked against the other exact method
// (dcp_exact.h: every list schedule in every order) wherever that one completes (<= 6 samples on <= 8
// ranks); cplab's makespan must be within 0.1% of it, and the lower bound never above it.
// What it is not: a timing (the figures for 64 ranks are measured by `cplab schedule --dist`).
#include <doctest/doctest.h>

#include <random>

#include "dcp/dcp_bounds.h"
#include "dcp/dcp_cplab.h"
#include "dcp/dcp_exact.h"
#include "dcp/dcp_exact_tree.h"

using namespace cplab;

TEST_CASE("dcp optimum: cplab is within 0.1% of the exhaustive optimum on 420 small batches") {
  std::mt19937_64 rng(2024);
  const CostModel costs[] = {parse_cost("overhead", ""), parse_cost("overhead", "a=0,alpha=1,beta=1,o=4")};
  int cross_checked = 0, heuristic_only = 0;
  double worst = 0;
  for (int b = 0; b < 420; ++b) {
    const std::int64_t N = std::int64_t{2} << (rng() % 4);  // 2, 4, 8, 16
    const int n = 2 + static_cast<int>(rng() % 9);          // 2..10
    std::vector<std::int64_t> L(static_cast<size_t>(n));
    const std::int64_t units = std::min<std::int64_t>(16 * N, 96);  // <= N * M and <= 24K
    for (std::int64_t& x : L) x = 256 * (1 + static_cast<std::int64_t>(rng() % static_cast<std::uint64_t>(units)));
    const CostModel& cost = costs[b % 2];
    CAPTURE(b);
    CAPTURE(N);
    CAPTURE(n);
    const DcpSchedule c = schedule_cplab(L, N, 4096, cost);
    // the optimum: the tree search from "everything one after another on all N ranks" (a schedule)
    double serial = 0;
    for (std::int64_t x : L) serial += cost.time(x, N);
    bool complete = false;
    const DcpSchedule e = schedule_exact_tree(L, N, 4096, cost, serial * 1.0001, 20 * kExactNodes, complete);
    REQUIRE(complete);
    const double opt = e.rounds.empty() ? serial : e.makespan;
    if (!e.rounds.empty()) {
      CHECK(e.aligned);
      CHECK_NOTHROW(check(e, L, 4096));
    }
    if (n <= 6 && N <= 8) {  // the other exact method: list schedules in every order
      bool done = false;
      const DcpSchedule f = schedule_exact(L, N, 4096, cost, serial * 1.0001, 3000000, done);
      if (done) {
        ++cross_checked;
        CHECK(f.makespan == doctest::Approx(opt).epsilon(1e-9));
      }
    }
    CHECK(c.makespan <= opt * 1.001);
    CHECK(c.makespan >= opt * (1 - 1e-9));  // nothing beats the optimum
    CHECK(lower_bounds(L, N, 4096, cost, c.makespan).moldable <= opt * (1 + kRelTol));
    worst = std::max(worst, c.makespan / opt);
    heuristic_only += c.makespan > opt * (1 + 1e-9) ? 1 : 0;
  }
  MESSAGE("cplab / optimum: worst " << worst << ", above the optimum on " << heuristic_only
                                    << " of 420; exact methods cross-checked on " << cross_checked);
  CHECK(cross_checked >= 60);  // the two exact methods were compared on many batches
}

TEST_CASE("dcp optimum: with samples that need a quarter of the ranks or more, the bound stays below the optimum") {
  // dcp_bound_huge.h branches on where such samples run: here 1-3 of them (16K-64K tokens on 16
  // ranks, M 4096: cp_min 4 to 16) beside 3-6 short ones, against the block-view optimum
  std::mt19937_64 rng(99);
  const CostModel cost = parse_cost("overhead", "");
  int tight = 0, done = 0;
  for (int b = 0; b < 150; ++b) {
    const std::int64_t N = b % 3 == 0 ? 8 : 16;
    std::vector<std::int64_t> L;
    const int huge = 1 + static_cast<int>(rng() % 3), small = 3 + static_cast<int>(rng() % 4);
    for (int i = 0; i < huge; ++i) L.push_back(1024 * (16 + static_cast<std::int64_t>(rng() % static_cast<std::uint64_t>(N * 4 - 15))));
    for (int i = 0; i < small; ++i) L.push_back(256 * (1 + static_cast<std::int64_t>(rng() % 40)));
    CAPTURE(b);
    double serial = 0;
    for (std::int64_t x : L) serial += cost.time(x, N);
    bool complete = false;
    const DcpSchedule e = schedule_exact_tree(L, N, 4096, cost, serial * 1.0001, 20 * kExactNodes, complete);
    if (!complete) continue;
    ++done;
    const double opt = e.rounds.empty() ? serial : e.makespan;
    const double lb = lower_bounds(L, N, 4096, cost, opt).moldable;
    CHECK(lb <= opt * (1 + kRelTol));
    tight += lb >= opt * (1 - 1e-6) ? 1 : 0;
  }
  MESSAGE("searches complete: " << done << " of 150; bound at the optimum on " << tight);
  CHECK(done >= 100);
}
