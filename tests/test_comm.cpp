// test_comm.cpp: simulated ranks: point-to-point, collectives, byte accounting, schedule bugs.
#include <doctest/doctest.h>

#include <numeric>

#include "sim/comm.h"

using namespace cplab;

TEST_CASE("comm: send/recv copies bytes and records both ends in the trace") {
  Trace t(3);
  SimComm c(3, &t);
  c.set_step(Phase::bwd, 2);
  const std::vector<float> x = {1, 2, 3};
  c.send<float>(0, 2, "kv", x);
  CHECK(c.pending() == 1);
  const std::vector<float> y = c.recv<float>(2, 0, "kv");
  CHECK(y == x);
  CHECK(c.pending() == 0);
  REQUIRE(t.events().size() == 2);
  CHECK(t.events()[0].kind == EventKind::send);
  CHECK(t.events()[0].bytes == 12);
  CHECK(t.events()[0].step == 2);
  CHECK(t.events()[0].phase == Phase::bwd);
  CHECK(t.events()[1].kind == EventKind::recv);
  CHECK(t.events()[1].rank == 2);
  CHECK(t.events()[1].peer == 0);
  CHECK(t.bytes_sent_per_rank() == std::vector<std::int64_t>{12, 0, 0});
}

TEST_CASE("comm: a receive that would hang or mismatch is reported") {
  SimComm c(2, nullptr);
  CHECK_THROWS_AS(c.recv<double>(1, 0, "kv"), std::logic_error);
  c.send<double>(0, 1, "kv", std::vector<double>{1.0});
  CHECK_THROWS_AS(c.recv<double>(1, 0, "dkv"), std::logic_error);
  CHECK_THROWS_AS(c.send<double>(0, 5, "kv", std::vector<double>{1.0}), std::logic_error);
}

TEST_CASE("comm: all-gather, all-to-all and reduce-scatter, with P-1 messages per rank") {
  const int P = 4;
  Trace t(P);
  SimComm c(P, &t);
  std::vector<std::vector<double>> in(P);
  for (int r = 0; r < P; ++r) in[r] = {10.0 * r, 10.0 * r + 1};
  const auto g = c.all_gather<double>("k", in);
  for (int r = 0; r < P; ++r) CHECK(g[r] == std::vector<double>{0, 1, 10, 11, 20, 21, 30, 31});

  std::vector<std::vector<std::vector<double>>> a2a(P, std::vector<std::vector<double>>(P));
  for (int r = 0; r < P; ++r)
    for (int d = 0; d < P; ++d) a2a[r][d] = {100.0 * r + d};
  const auto x = c.all_to_all<double>("q", a2a);
  for (int d = 0; d < P; ++d) CHECK(x[d] == std::vector<double>{0.0 + d, 100.0 + d, 200.0 + d, 300.0 + d});

  std::vector<std::vector<double>> parts(P, std::vector<double>(2 * P));
  for (int r = 0; r < P; ++r) std::iota(parts[r].begin(), parts[r].end(), 1.0 * r);
  const auto rs = c.reduce_scatter<double>("dk", parts);
  for (int r = 0; r < P; ++r) {
    // block r of rank s holds (2r + s, 2r + 1 + s); summed over s = 0..3: 8r + 6, 8r + 10
    CHECK(rs[r] == std::vector<double>{8.0 * r + 6, 8.0 * r + 10});
  }
  CHECK(c.pending() == 0);
  // per rank: all-gather 3 x 16 B, all-to-all 3 x 8 B, reduce-scatter 3 x 16 B
  for (auto b : t.bytes_sent_per_rank()) CHECK(b == 3 * 16 + 3 * 8 + 3 * 16);
  for (auto m : t.messages_sent_per_rank()) CHECK(m == 9);
}
