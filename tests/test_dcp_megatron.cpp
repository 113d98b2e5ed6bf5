// test_dcp_megatron.cpp: Megatron v1's BalancedCPScheduler reproduced under every cost model.
//
// What it is: batches whose real Megatron placement was derived by hand from the algorithm of
// Megatron's hybrid_cp_schedule.py as docs/sources.md describes it (the derivation is written beside each), checked
// under Megatron's own l2 cost AND under the overhead cost: Megatron balances L^2 / cp whatever
// the hardware costs, so the placement must not change with the cost; only the evaluated loads do.
// What it is not: the 8-sample example and the misalignment case (tests/test_dcp.cpp), or cplab's
// scheduler.
#include <doctest/doctest.h>

#include <algorithm>

#include "dcp/dcp_megatron.h"

using namespace cplab;

namespace {

// [round][rank] the samples the rank runs in that round, in order
std::vector<std::vector<std::vector<int>>> placement(const DcpSchedule& s) {
  std::vector<std::vector<std::vector<int>>> out;
  for (const DcpRound& r : s.rounds) {
    std::vector<std::vector<int>> ranks(static_cast<size_t>(s.ranks));
    for (const DcpGroup& g : r.groups)
      for (std::int64_t q = g.start; q < g.start + g.size; ++q) ranks[static_cast<size_t>(q)] = g.samples;
    out.push_back(ranks);
  }
  return out;
}

const CostModel kL2{};
const CostModel kOverhead = parse_cost("overhead", "");

}  // namespace

TEST_CASE("dcp megatron: the issue's 7-length batch is one round with rank 6 = s2 s4 s1 under every cost") {
  // lengths s0..s6 = 6144, 2048, 4096, 4096, 4096, 12288, 4096; N 8, M 4096.
  // cp: s0 2, s5 4, the rest 1. Megatron's work w = (L/1K)^2 / cp: s0 18, s1 4, s2 s3 s4 s6 16, s5 36.
  // Stable sort by length, descending: s5 s0 s2 s3 s4 s6 s1.
  // Buckets: k = 3 distinct sizes, sum w = 122, target 40.67, cut when cur + w > 44.73:
  //   s5 (36) | +s0 = 54 > 44.73: cut | s0 s2 (34) | +s3 = 50: cut | s3 s4 (32) | +s6 = 48: cut | s6 s1 (20)
  //   (the reserve rule n - i <= remaining_k - len(buckets) never fires) -> [s5] [s0 s2] [s3 s4] [s6 s1].
  // Placement (a new group on the lowest free ranks while enough are free, else the least-loaded
  // group of the size, earliest on ties):
  //   s5 CP4 -> ranks 0-3 (36); s0 CP2 -> ranks 4-5 (18, arms the balance stop: 2 < 4);
  //   s2 -> rank 6 (16); s3 -> rank 7 (16); s4: no free rank, ranks 6 and 7 tie at 16 -> rank 6 (32);
  //   s6 -> rank 7 (16 < 32) (32); s1: tie at 32 -> rank 6 (36). Loads 36 36 36 36 18 18 36 32: the
  //   5% stop never held (min 18), the list is empty.
  // trim_overload: the first max rank, 0, holds one sample -> stop. fill_empty_gpus: no empty rank.
  // So one round: s5 on ranks 0-3, s0 on 4-5, rank 6 = s2, s4, s1, rank 7 = s3, s6.
  const std::vector<std::int64_t> L = {6144, 2048, 4096, 4096, 4096, 12288, 4096};
  const std::vector<std::vector<int>> want = {{5}, {5}, {5}, {5}, {0}, {0}, {2, 4, 1}, {3, 6}};
  for (const CostModel& cost : {kL2, kOverhead}) {
    CAPTURE(cost.describe());
    const DcpSchedule s = schedule_megatron_v1(L, 8, 4096, cost);
    const auto p = placement(s);
    REQUIRE(p.size() == 1);
    CHECK(p[0] == want);
    CHECK(s.aligned);
    // the loads are the chosen cost's: rank 6 runs three CP1 samples one after another
    const double r6 = cost.time(4096, 1) + cost.time(4096, 1) + cost.time(2048, 1);
    double got = 0;
    for (const DcpGroup& g : s.rounds[0].groups)
      if (g.start == 6) got = g.load;
    CHECK(got == doctest::Approx(r6).epsilon(1e-12));
    CHECK(s.makespan == doctest::Approx(std::max({cost.time(12288, 4), cost.time(6144, 2), r6, 2 * cost.time(4096, 1)})).epsilon(1e-12));
  }
}

TEST_CASE("dcp megatron: trim_overload gives samples back to a second round under every cost") {
  // lengths 4096 x 3, 1024; N 2, M 4096. All cp 1; w = 16 16 16 1.
  // Buckets: k = 1, sum 49, cut above 53.9; at s3 the reserve rule fires (n - i = 1 <= 1 - 0):
  //   [s0 s1 s2] [s3].
  // Placement: s0 -> rank 0 (16), s1 -> rank 1 (16), s2: tie -> rank 0 (32), s3 -> rank 1 (17).
  //   The stop is never armed (no size below the first).
  // trim: max 32, min 17: rank 0 gives back its last sample s2 (slack 1 < 15); then max 17 (rank 1),
  //   min 16: 1 > 0.05 * 17, rank 1 gives back s3 (slack 0 < 1); then balanced. Leftovers [s2 s3].
  // Round 1: buckets [s2] [s3] (reserve rule), s2 -> rank 0, s3 -> rank 1; trim stops (rank 0 has one
  //   sample). So: round 0 = s0 | s1, round 1 = s2 | s3.
  const std::vector<std::int64_t> L = {4096, 4096, 4096, 1024};
  for (const CostModel& cost : {kL2, kOverhead}) {
    CAPTURE(cost.describe());
    const DcpSchedule s = schedule_megatron_v1(L, 2, 4096, cost);
    const auto p = placement(s);
    REQUIRE(p.size() == 2);
    CHECK(p[0] == std::vector<std::vector<int>>{{0}, {1}});
    CHECK(p[1] == std::vector<std::vector<int>>{{2}, {3}});
    CHECK(s.makespan == doctest::Approx(2 * cost.time(4096, 1)).epsilon(1e-12));
  }
}

TEST_CASE("dcp megatron: fill_empty_gpus doubles the earliest smallest group under every cost") {
  // lengths 4096, 1024; N 4, M 4096. Both cp 1, w 16 and 1.
  // Buckets: k = 1, sum 17; at s1 the reserve rule fires (1 <= 1): [s0] [s1].
  // Placement: s0 -> rank 0, s1 -> rank 1; ranks 2 and 3 stay empty. trim: min 0 -> stop.
  // fill: smallest size 1, the earliest group of it (s0, rank 0) grows to ranks 0-1 and s1's group
  //   shifts to rank 2; rank 3 is still empty: the earliest size-1 group is now s1's, it grows to
  //   ranks 2-3. So s0 runs with CP2 on ranks 0-1 and s1 with CP2 on ranks 2-3.
  const std::vector<std::int64_t> L = {4096, 1024};
  for (const CostModel& cost : {kL2, kOverhead}) {
    CAPTURE(cost.describe());
    const DcpSchedule s = schedule_megatron_v1(L, 4, 4096, cost);
    const auto p = placement(s);
    REQUIRE(p.size() == 1);
    CHECK(p[0] == std::vector<std::vector<int>>{{0}, {0}, {1}, {1}});
    CHECK(s.makespan == doctest::Approx(cost.time(4096, 2)).epsilon(1e-12));
  }
}

TEST_CASE("dcp megatron: the 8-sample example and the misaligned case keep their placement under the overhead cost") {
  // Megatron's decisions read only L^2 / cp, so the placements of tests/test_dcp.cpp (derived by
  // hand under l2 in docs/sources.md, "Megatron's dynamic CP") must be the same under any cost
  const std::vector<std::vector<std::int64_t>> batches = {
      {32768, 16384, 8192, 4096, 4096, 4096, 4096, 2048},
      {8192, 3072, 12288, 16384, 8192, 3072, 6144, 6144, 6144, 16384}};
  for (const auto& L : batches) {
    const DcpSchedule a = schedule_megatron_v1(L, 8, 4096, kL2), b = schedule_megatron_v1(L, 8, 4096, kOverhead);
    CHECK(placement(a) == placement(b));
    CHECK(a.aligned == b.aligned);
    CHECK(a.unaligned == b.unaligned);
  }
  // docs/sources.md: round 1 = s1 on 0-3, s2 on 4-5, rank 6 = s3 s5 s7, rank 7 = s4 s6
  const auto p = placement(schedule_megatron_v1(batches[0], 8, 4096, kOverhead));
  REQUIRE(p.size() == 2);
  CHECK(p[1] == std::vector<std::vector<int>>{{1}, {1}, {1}, {1}, {2}, {2}, {3, 5, 7}, {4, 6}});
}
