// test_thd.cpp: packed sequences: TE's partitioned indices (docs/sources.md), padding, token masks.
#include <doctest/doctest.h>

#include <algorithm>

#include "core/error.h"
#include "layout/thd.h"

using namespace cplab;

TEST_CASE("thd: TE's example (cp = 3, cu_seqlens = 0,12,36,42) gives exactly its three index lists") {
  const Packing p = Packing::unpadded(parse_cu_seqlens("0,12,36,42"));
  const Partition part(Layout::zigzag, p.cu_seqlens_padded, 3);
  CHECK(part.indices(0) == std::vector<index_t>{0, 1, 10, 11, 12, 13, 14, 15, 32, 33, 34, 35, 36, 41});
  CHECK(part.indices(1) == std::vector<index_t>{2, 3, 8, 9, 16, 17, 18, 19, 28, 29, 30, 31, 37, 40});
  CHECK(part.indices(2) == std::vector<index_t>{4, 5, 6, 7, 20, 21, 22, 23, 24, 25, 26, 27, 38, 39});
  // TE's own unit test: P = 2, cu = [0, 8, 16]
  const Partition te(Layout::zigzag, std::vector<index_t>{0, 8, 16}, 2);
  CHECK(te.indices(0) == std::vector<index_t>{0, 1, 6, 7, 8, 9, 14, 15});
  CHECK(te.indices(1) == std::vector<index_t>{2, 3, 4, 5, 10, 11, 12, 13});
}

TEST_CASE("thd: packed owner is the inverse of packed global, for every layout") {
  const Packing p = Packing::padded({0, 5, 17, 18, 40}, 8);
  for (Layout L : {Layout::contiguous, Layout::zigzag, Layout::striped})
    for (index_t P : {1, 2, 4}) {
      const Partition part(L, p.cu_seqlens_padded, P);
      std::vector<int> seen(static_cast<size_t>(part.seq()), 0);
      for (index_t r = 0; r < P; ++r)
        for (index_t l = 0; l < part.local_len(); ++l) {
          const index_t g = part.global(r, l);
          const RankLocal o = part.owner(g);
          CHECK(o.rank == r);
          CHECK(o.local == l);
          seen[static_cast<size_t>(g)] += 1;
        }
      for (int x : seen) CHECK(x == 1);
      for (index_t r = 0; r < P; ++r) {  // within a rank, positions increase (token masks rely on it)
        const auto idx = part.indices(r);
        CHECK(std::is_sorted(idx.begin(), idx.end()));
      }
    }
}

TEST_CASE("thd: padding helper and per-token facts") {
  const Packing p = Packing::padded(parse_cu_seqlens("0,10,34,39"), 6);  // TE's example: lengths 10, 24, 5
  CHECK(p.cu_seqlens_padded == std::vector<index_t>{0, 12, 36, 42});
  CHECK(p.has_padding());
  CHECK(p.seq_of(11) == 0);
  CHECK(p.seq_of(12) == 1);
  CHECK(p.pos_of(13) == 1);
  CHECK(p.real(9));
  CHECK_FALSE(p.real(10));
  CHECK_FALSE(p.real(41));
  CHECK(p.real_tokens().size() == 39);
  CHECK(Packing::padded({0, 12, 36, 42}, 6).cu_seqlens_padded == std::vector<index_t>{0, 12, 36, 42});
}

TEST_CASE("thd: token masks are block-diagonal, causal inside, and empty for padding") {
  const Packing p = Packing::padded({0, 3, 7}, 4);  // seq 0: 3 real + 1 pad at [0,4); seq 1: 4 real at [4,8)
  std::vector<index_t> all = {0, 1, 2, 3, 4, 5, 6, 7};
  const Mask m = token_mask(p, all, all, true);
  for (index_t a = 0; a < 8; ++a)
    for (index_t b = 0; b < 8; ++b) {
      const KeyRange r = m.keys(a, 8);
      const bool vis = b >= r.lo && b < r.hi;
      const bool expect = p.real(a) && p.real(b) && p.seq_of(a) == p.seq_of(b) && b <= a;
      CAPTURE(a);
      CAPTURE(b);
      CHECK(vis == expect);
    }
  const Mask n = token_mask(p, {5}, all, false);  // non-causal: all real keys of its sequence
  CHECK(n.keys(0, 8).lo == 4);
  CHECK(n.keys(0, 8).hi == 8);
  const Mask sub = token_mask(p, {2}, {1, 2, 5}, true);  // keys given as a sorted subset
  CHECK(sub.keys(0, 3).lo == 0);
  CHECK(sub.keys(0, 3).hi == 2);
}

TEST_CASE("thd: bad packings are refused with the rule") {
  CHECK_THROWS_WITH_AS(parse_cu_seqlens("0,12,12,42"), "cu_seqlens must strictly increase (sequence 1 would have length 0)", Error);
  CHECK_THROWS_WITH_AS(parse_cu_seqlens("1,12"), "cu_seqlens must start at 0, got 1", Error);
  CHECK_THROWS_WITH_AS(parse_cu_seqlens("0,x"), "cu_seqlens entry 'x' is not an integer", Error);
  CHECK_THROWS_WITH_AS(parse_cu_seqlens("0"), "cu_seqlens '0' needs at least two entries (0 and the total)", Error);
  CHECK_THROWS_WITH_AS(check_packed_lengths({0, 12, 34, 42}, Layout::zigzag, 3),
                       "sequence 1 has length 22, not a multiple of 2*cp = 6 (zigzag splits every sequence into "
                       "2*cp equal chunks); pass --pad to pad each sequence to a multiple of 6",
                       Error);
  CHECK_NOTHROW(check_packed_lengths({0, 12, 36, 42}, Layout::zigzag, 3));
  CHECK_THROWS_WITH_AS(Partition(Layout::zigzag, std::vector<index_t>{0, 12, 34}, 3),
                       "sequence 1 (padded): seq 22 is not a multiple of 2*cp = 6 (zigzag splits the sequence into 2*cp equal chunks)",
                       Error);
}
