// test_layout.cpp: layouts (layout_index.h, layout.h): inverses, the zigzag/striped definitions,
// sharding, spans, and the divisibility errors.
#include <doctest/doctest.h>

#include <set>

#include "helpers.h"
#include "layout/layout.h"

using namespace cplab;

TEST_CASE("layout: owner is the exact inverse of global, and every token has one owner") {
  for (Layout L : {Layout::contiguous, Layout::zigzag, Layout::striped})
    for (index_t P : {1, 2, 3, 4, 8})
      for (index_t k : {1, 3}) {
        const index_t S = 2 * P * k;
        const Partition p(L, S, P);
        std::set<index_t> seen;
        for (index_t r = 0; r < P; ++r)
          for (index_t l = 0; l < p.local_len(); ++l) {
            const index_t g = p.global(r, l);
            REQUIRE(g >= 0);
            REQUIRE(g < S);
            const RankLocal o = p.owner(g);
            CHECK(o.rank == r);
            CHECK(o.local == l);
            seen.insert(g);
          }
        CHECK(static_cast<index_t>(seen.size()) == S);
      }
}

TEST_CASE("layout: zigzag rank r holds chunk r then chunk 2cp-1-r (TE's seq_idx = [r, 2P-1-r])") {
  const Partition p(Layout::zigzag, 16, 4);  // chunks of 2
  CHECK(p.indices(0) == std::vector<index_t>{0, 1, 14, 15});
  CHECK(p.indices(1) == std::vector<index_t>{2, 3, 12, 13});
  CHECK(p.indices(3) == std::vector<index_t>{6, 7, 8, 9});
  const Partition s(Layout::striped, 12, 3);
  CHECK(s.indices(1) == std::vector<index_t>{1, 4, 7, 10});
  const Partition c(Layout::contiguous, 12, 3);
  CHECK(c.indices(2) == std::vector<index_t>{8, 9, 10, 11});
}

TEST_CASE("layout: spans compress index lists") {
  CHECK(to_spans({0, 1, 14, 15}) == std::vector<Span>{{0, 2, 1}, {14, 2, 1}});
  CHECK(to_spans({1, 4, 7, 10}) == std::vector<Span>{{1, 4, 3}});
  CHECK(to_spans({5}) == std::vector<Span>{{5, 1, 1}});
  CHECK(to_spans({}).empty());
  const Partition p(Layout::zigzag, 16, 4);
  CHECK(p.spans(1, 2, 2) == std::vector<Span>{{12, 2, 1}});
}

TEST_CASE("layout: shard then unshard is the identity, for tensors and rows") {
  const auto x = test::random_tensor<double>(24, 3, 5, 9);
  for (Layout L : {Layout::contiguous, Layout::zigzag, Layout::striped}) {
    const Partition p(L, 24, 3);
    const auto parts = shard(p, x);
    REQUIRE(parts.size() == 3);
    CHECK(parts[1].at(0, 2, 4) == x.at(p.global(1, 0), 2, 4));
    CHECK(unshard(p, parts).data == x.data);
    Rows<double> lse = Rows<double>::Random(3, 24);
    CHECK((unshard_rows(p, shard_rows(p, lse)) == lse).all());
  }
}

TEST_CASE("layout: divisibility and range errors name the rule") {
  CHECK_THROWS_WITH_AS(Partition(Layout::zigzag, 1000, 8),
                       "seq 1000 is not a multiple of 2*cp = 16 (zigzag splits the sequence into 2*cp equal chunks)",
                       Error);
  CHECK_THROWS_WITH_AS(Partition(Layout::striped, 10, 4),
                       "seq 10 is not a multiple of cp = 4 (striped gives every rank seq/cp tokens)", Error);
  CHECK_THROWS_WITH_AS(Partition(Layout::contiguous, 10, 0), "cp 0 must be >= 1", Error);
  CHECK_THROWS_WITH_AS(Partition(Layout::contiguous, 0, 2), "seq 0 must be >= 1", Error);
  CHECK_THROWS_WITH_AS(parse_layout("diagonal"), "layout 'diagonal' is not one of: contiguous, zigzag, striped", Error);
  CHECK_NOTHROW(Partition(Layout::striped, 6, 3));
}

TEST_CASE("layout: spans print as runs and count their positions") {
  const std::vector<Span> s = to_spans({0, 1, 2, 3, 12, 13, 20, 24, 28});
  CHECK(span_count(s) == 9);
  CHECK(to_string(s) == "0..3 12..13 20..28 step 4");
  CHECK(to_string(std::vector<Span>{}) == "");
  CHECK(to_string(std::vector<Span>{{5, 1, 3}}) == "5..5");
}
