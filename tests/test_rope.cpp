// test_rope.cpp: RoPE, and RoPE under context parallelism (positions from the layout, TE's formula).
#include <doctest/doctest.h>

#include <cmath>
#include <random>
#include <vector>

#include "core/error.h"
#include "layout/layout.h"
#include "layout/rope.h"
#include "layout/thd.h"

using namespace cplab;

namespace {

Tensor3<double> random_x(index_t n, index_t h, index_t d, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  Tensor3<double> x(n, h, d);
  for (auto& e : x.data) e = u(rng);
  return x;
}

double max_abs_diff(const std::vector<double>& a, const std::vector<double>& b) {
  REQUIRE(a.size() == b.size());
  double m = 0;
  for (size_t i = 0; i < a.size(); ++i) m = std::max(m, std::abs(a[i] - b[i]));
  return m;
}

// TE's position of rank r's local token l, computed per sequence of the packed layout
index_t te_position(const std::vector<index_t>& cu_padded, index_t cp, index_t rank, index_t l) {
  size_t s = 0;
  while (s + 2 < cu_padded.size() && cu_padded[s + 1] / cp <= l) ++s;
  const index_t local_len = (cu_padded[s + 1] - cu_padded[s]) / cp;
  return te_rope_position(l - cu_padded[s] / cp, rank, cp, local_len);
}

}  // namespace

TEST_CASE("rope: the positions of TE's THD example (cp = 3, cu_seqlens = 0,12,36,42, zigzag) and TE's formula") {
  const Packing p = Packing::unpadded({0, 12, 36, 42});
  const Partition part(Layout::zigzag, p.cu_seqlens_padded, 3);
  const std::vector<std::vector<index_t>> want = {
      {0, 1, 10, 11, 0, 1, 2, 3, 20, 21, 22, 23, 0, 5},
      {2, 3, 8, 9, 4, 5, 6, 7, 16, 17, 18, 19, 1, 4},
      {4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 2, 3},
  };
  for (index_t r = 0; r < 3; ++r) {
    CAPTURE(r);
    const std::vector<index_t> pos = rope_positions(part, p, r);
    CHECK(pos == want[static_cast<size_t>(r)]);
    for (index_t l = 0; l < part.local_len(); ++l) {
      CAPTURE(l);
      CHECK(te_position(p.cu_seqlens_padded, 3, r, l) == pos[static_cast<size_t>(l)]);
    }
  }
}

TEST_CASE("rope: TE's formula equals rope_positions for zigzag, every cp, packed with padding") {
  for (index_t cp : {1, 2, 3, 4})
    for (const std::vector<index_t>& cu : {std::vector<index_t>{0, 12, 36, 42}, std::vector<index_t>{0, 10, 34, 39}}) {
      const Packing p = Packing::padded(cu, 2 * cp);
      const Partition part(Layout::zigzag, p.cu_seqlens_padded, cp);
      for (index_t r = 0; r < cp; ++r) {
        const std::vector<index_t> pos = rope_positions(part, p, r);
        for (index_t l = 0; l < part.local_len(); ++l)
          CHECK(te_position(p.cu_seqlens_padded, cp, r, l) == pos[static_cast<size_t>(l)]);
      }
    }
}

TEST_CASE("rope: applying RoPE to each rank's local Q/K with these positions equals applying it to the "
          "unsharded sequence, then sharding") {
  const index_t h = 3, d = 8;
  std::uint64_t seed = 1;
  int cases = 0;
  for (Layout L : {Layout::zigzag, Layout::striped, Layout::contiguous})
    for (index_t cp : {1, 2, 3, 4})
      for (int packed = 0; packed < 3; ++packed)
        for (index_t rotary_dim : {0, 4}) {
          const index_t f = layout_factor(L, cp);
          const Packing p = packed == 0   ? Packing::single(5 * f)
                            : packed == 1 ? Packing::padded({0, 12, 36, 42}, f)
                                          : Packing::padded({0, 10, 34, 39}, f);
          const Partition part = packed == 0 ? Partition(L, p.total(), cp) : Partition(L, p.cu_seqlens_padded, cp);
          CAPTURE(to_string(L));
          CAPTURE(cp);
          CAPTURE(packed);
          const RopeConfig cfg{rotary_dim, 10000.0};

          Tensor3<double> x = random_x(p.total(), h, d, seed++);
          const std::vector<Tensor3<double>> local_in = shard(part, x);
          std::vector<index_t> global_pos(static_cast<size_t>(p.total()));
          for (index_t g = 0; g < p.total(); ++g) global_pos[static_cast<size_t>(g)] = p.pos_of(g);
          apply_rope(x, global_pos, cfg);
          const std::vector<Tensor3<double>> want = shard(part, x);

          for (index_t r = 0; r < cp; ++r) {
            Tensor3<double> y = local_in[static_cast<size_t>(r)];
            apply_rope(y, rope_positions(part, p, r), cfg);
            CHECK(y.data == want[static_cast<size_t>(r)].data);  // bitwise
          }
          ++cases;
        }
  CHECK(cases == 3 * 4 * 3 * 2);
}

TEST_CASE("rope: inverse undoes apply, and is the backward") {
  const Tensor3<double> x0 = random_x(17, 2, 16, 42);
  std::vector<index_t> pos(17);
  for (size_t t = 0; t < pos.size(); ++t) pos[t] = static_cast<index_t>(t * 37 + 3);
  for (index_t rd : {0, 6, 16}) {
    Tensor3<double> x = x0;
    apply_rope(x, pos, RopeConfig{rd, 10000.0});
    CHECK(max_abs_diff(x.data, x0.data) > 1e-3);  // it did rotate
    apply_rope(x, pos, RopeConfig{rd, 10000.0}, /*inverse=*/true);
    CHECK(max_abs_diff(x.data, x0.data) < 1e-12);
  }
  // backward: <R x, y> = <x, R^T y> for the linear map R = apply_rope
  const Tensor3<double> y0 = random_x(17, 2, 16, 43);
  Tensor3<double> rx = x0, rty = y0;
  apply_rope(rx, pos, RopeConfig{});
  apply_rope(rty, pos, RopeConfig{}, true);
  double a = 0, b = 0;
  for (size_t i = 0; i < x0.data.size(); ++i) {
    a += rx.data[i] * y0.data[i];
    b += x0.data[i] * rty.data[i];
  }
  CHECK(std::abs(a - b) < 1e-12);
}

TEST_CASE("rope: rotary_dim < d leaves the tail untouched, position 0 is the identity") {
  const Tensor3<double> x0 = random_x(9, 3, 10, 7);
  std::vector<index_t> pos(9);
  for (size_t t = 0; t < pos.size(); ++t) pos[t] = static_cast<index_t>(t + 1);
  Tensor3<double> x = x0;
  apply_rope(x, pos, RopeConfig{4, 10000.0});
  for (index_t t = 0; t < x.n; ++t)
    for (index_t hh = 0; hh < x.h; ++hh) {
      for (index_t k = 4; k < x.d; ++k) CHECK(x.at(t, hh, k) == x0.at(t, hh, k));
      CHECK(x.at(t, hh, 0) != x0.at(t, hh, 0));
    }
  Tensor3<double> z = x0;
  apply_rope(z, std::vector<index_t>(9, 0), RopeConfig{});
  CHECK(z.data == x0.data);
}

TEST_CASE("rope: a hand-computed token (d = 4, pos = 1, base = 10000)") {
  // pairs (0, 2) at theta = 1 and (1, 3) at theta = 1 * 10000^(-2/4) = 0.01
  Tensor3<double> x(1, 1, 4);
  x.data = {1, 2, 3, 4};
  apply_rope(x, {1}, RopeConfig{});
  const double c1 = std::cos(1.0), s1 = std::sin(1.0), c2 = std::cos(0.01), s2 = std::sin(0.01);
  CHECK(std::abs(x.data[0] - (1 * c1 - 3 * s1)) < 1e-15);
  CHECK(std::abs(x.data[1] - (2 * c2 - 4 * s2)) < 1e-15);
  CHECK(std::abs(x.data[2] - (3 * c1 + 1 * s1)) < 1e-15);
  CHECK(std::abs(x.data[3] - (4 * c2 + 2 * s2)) < 1e-15);
  // the same numbers written out
  CHECK(std::abs(x.data[0] - -1.9841106485555495) < 1e-12);
  CHECK(std::abs(x.data[1] - 1.959900667496664) < 1e-12);
  CHECK(std::abs(x.data[2] - 2.4623779024123156) < 1e-12);
  CHECK(std::abs(x.data[3] - 4.019799668334994) < 1e-12);
}

TEST_CASE("rope: bad input names the rule") {
  Tensor3<double> x(2, 1, 6);
  CHECK_THROWS_WITH_AS(apply_rope(x, {0}, RopeConfig{}), "rope: 1 positions for 2 tokens (need one position per token)",
                       cplab::Error);
  CHECK_THROWS_WITH_AS(apply_rope(x, {0, 1}, RopeConfig{3, 10000.0}),
                       "rope: rotary_dim 3 must be even (dims i and i + rotary_dim/2 are rotated as a pair)",
                       cplab::Error);
  CHECK_THROWS_WITH_AS(apply_rope(x, {0, 1}, RopeConfig{8, 10000.0}), "rope: rotary_dim 8 must be <= head dim d = 6",
                       cplab::Error);
  CHECK_THROWS_WITH_AS(apply_rope(x, {0, -1}, RopeConfig{}), "rope: position -1 of token 1 must be >= 0", cplab::Error);
  CHECK_THROWS_WITH_AS(apply_rope(x, {0, 1}, RopeConfig{-2, 10000.0}), "rope: rotary_dim -2 must be >= 0", cplab::Error);
  Tensor3<double> odd(1, 1, 5);
  CHECK_THROWS_WITH_AS(apply_rope(odd, {0}, RopeConfig{}),
                       "rope: rotary_dim 5 must be even (dims i and i + rotary_dim/2 are rotated as a pair)",
                       cplab::Error);
  CHECK_NOTHROW(apply_rope(odd, {0}, RopeConfig{4, 10000.0}));
}

TEST_CASE("rope: float instantiation matches double") {
  const Tensor3<double> xd0 = random_x(33, 2, 12, 99);
  std::vector<index_t> pos(33);
  for (size_t t = 0; t < pos.size(); ++t) pos[t] = static_cast<index_t>(t * 101);
  Tensor3<double> xd = xd0;
  Tensor3<float> xf = cast<float>(xd0);
  apply_rope(xd, pos, RopeConfig{8, 10000.0});
  apply_rope(xf, pos, RopeConfig{8, 10000.0});
  for (size_t i = 0; i < xd.data.size(); ++i) CHECK(std::abs(static_cast<double>(xf.data[i]) - xd.data[i]) < 1e-6);
  apply_rope(xf, pos, RopeConfig{8, 10000.0}, true);
  for (size_t i = 0; i < xd.data.size(); ++i) CHECK(std::abs(static_cast<double>(xf.data[i]) - xd0.data[i]) < 1e-6);
}
