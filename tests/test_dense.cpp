// test_dense.cpp: the dense oracle (attention_kernel.h) against scalar loops, masks, GQA, -inf rows.
#include <doctest/doctest.h>

#include <random>

#include "helpers.h"

using namespace cplab;
using namespace cplab::test;

namespace {

struct Case {
  index_t sq, sk, h, hk, d, dv;
  Mask mask;
};

void check_against_naive(const Case& c) {
  const auto q = random_tensor<double>(c.sq, c.h, c.d, 1), k = random_tensor<double>(c.sk, c.hk, c.d, 2);
  const auto v = random_tensor<double>(c.sk, c.hk, c.dv, 3), dout = random_tensor<double>(c.sq, c.h, c.dv, 4);
  const double scale = default_scale(c.d);
  Tensor3<double> o, dq, dk, dv;
  Rows<double> lse;
  naive_attention(q, k, v, dout, scale,
                  [&](index_t a, index_t b) {
                    const KeyRange r = c.mask.keys(a, c.sk);
                    return b >= r.lo && b < r.hi;
                  },
                  o, lse, dq, dk, dv);
  const AttnOut<double> f = dense_forward(q, k, v, c.mask, scale);
  const AttnGrads<double> g = dense_backward(q, k, v, f, dout, c.mask, scale);
  CHECK(rel_error(f.o, o) <= 1e-13);
  CHECK(rel_error(f.lse, lse) <= 1e-13);
  CHECK(rel_error(g.dq, dq) <= 1e-12);
  CHECK(rel_error(g.dk, dk) <= 1e-12);
  CHECK(rel_error(g.dv, dv) <= 1e-12);
  for (double x : g.dq.data) REQUIRE(std::isfinite(x));
  for (double x : g.dk.data) REQUIRE(std::isfinite(x));
}

}  // namespace

TEST_CASE("dense: matches scalar loops for every mask, MHA/GQA/MQA, sq != sk, dv != d") {
  const std::vector<Mask> masks = {Mask::none(), Mask::causal(0), Mask::causal(-1), Mask::causal(3),
                                   Mask::causal(-5)};
  for (const Mask& m : masks)
    for (auto [h, hk] : {std::pair<index_t, index_t>{4, 4}, {4, 2}, {4, 1}})
      for (auto [sq, sk] : {std::pair<index_t, index_t>{13, 13}, {7, 19}, {300, 290}}) {
        CAPTURE(to_string(m));
        CAPTURE(h);
        CAPTURE(hk);
        CAPTURE(sq);
        CAPTURE(sk);
        check_against_naive(Case{sq, sk, h, hk, 8, 5, m});
      }
}

TEST_CASE("dense: a fully masked row gives O = 0, LSE = -inf and no NaN anywhere") {
  // causal(-3): rows 0..2 see nothing
  const Case c{10, 10, 2, 1, 4, 4, Mask::causal(-3)};
  const auto q = random_tensor<double>(c.sq, c.h, c.d, 5), k = random_tensor<double>(c.sk, c.hk, c.d, 6);
  const auto v = random_tensor<double>(c.sk, c.hk, c.dv, 7), dout = random_tensor<double>(c.sq, c.h, c.dv, 8);
  const AttnOut<double> f = dense_forward(q, k, v, c.mask, 0.5);
  for (index_t i = 0; i < c.h; ++i)
    for (index_t a = 0; a < 3; ++a) {
      CHECK(f.lse(i, a) == -std::numeric_limits<double>::infinity());
      for (index_t e = 0; e < c.dv; ++e) CHECK(f.o.at(a, i, e) == 0.0);
    }
  const AttnGrads<double> g = dense_backward(q, k, v, f, dout, c.mask, 0.5);
  for (double x : g.dq.data) CHECK(std::isfinite(x));
  for (double x : g.dk.data) CHECK(std::isfinite(x));
  for (double x : g.dv.data) CHECK(std::isfinite(x));
  for (index_t a = 0; a < 3; ++a)
    for (index_t e = 0; e < c.d; ++e) CHECK(g.dq.at(a, 0, e) == 0.0);
  // keys 7..9 are visible to no query: their gradients are exactly 0 (not exp(-inf) ~ 1e-308)
  for (index_t b = 7; b < 10; ++b)
    for (index_t e = 0; e < c.d; ++e) {
      CHECK(g.dk.at(b, 0, e) == 0.0);
      CHECK(g.dv.at(b, 0, e) == 0.0);
    }
  // and a float tile whose every row is masked (a whole skipped block)
  const auto qf = cast<float>(q), kf = cast<float>(k), vf = cast<float>(v);
  const AttnOut<float> ff = dense_forward(qf, kf, vf, Mask::causal(-20), 0.5f);
  for (index_t a = 0; a < c.sq; ++a) CHECK(ff.lse(0, a) == -std::numeric_limits<float>::infinity());
  for (float x : ff.o.data) CHECK(x == 0.0f);
}

TEST_CASE("dense: float matches double to float precision") {
  const auto q = random_tensor<double>(64, 4, 16, 11), k = random_tensor<double>(64, 2, 16, 12);
  const auto v = random_tensor<double>(64, 2, 16, 13), dout = random_tensor<double>(64, 4, 16, 14);
  const AttnOut<double> f = dense_forward(q, k, v, Mask::causal(), 0.25);
  const AttnGrads<double> g = dense_backward(q, k, v, f, dout, Mask::causal(), 0.25);
  const auto qf = cast<float>(q), kf = cast<float>(k), vf = cast<float>(v), df = cast<float>(dout);
  const AttnOut<float> ff = dense_forward(qf, kf, vf, Mask::causal(), 0.25f);
  const AttnGrads<float> gf = dense_backward(qf, kf, vf, ff, df, Mask::causal(), 0.25f);
  CHECK(rel_error(ff.o, f.o) < 1e-5);
  CHECK(rel_error(ff.lse, f.lse) < 1e-5);
  CHECK(rel_error(gf.dq, g.dq) < 1e-4);
  CHECK(rel_error(gf.dk, g.dk) < 1e-4);
  CHECK(rel_error(gf.dv, g.dv) < 1e-4);
  CHECK(rel_error(ff.o, f.o) > 0.0);  // it really ran in float
}

TEST_CASE("dense: bad shapes are refused with the rule") {
  const auto q = random_tensor<double>(4, 3, 8, 1), k = random_tensor<double>(4, 2, 8, 2);
  const auto v = random_tensor<double>(4, 2, 8, 3);
  CHECK_THROWS_WITH_AS(dense_forward(q, k, v, Mask::none(), 1.0),
                       "kv-heads 2 does not divide heads 3 (GQA/MQA needs heads = kv-heads * group size)",
                       cplab::Error);
  const auto k2 = random_tensor<double>(4, 3, 6, 2);
  const auto v2 = random_tensor<double>(4, 3, 8, 3);
  CHECK_THROWS_WITH_AS(dense_forward(q, k2, v2, Mask::none(), 1.0), "Q head-dim 8 differs from K head-dim 6",
                       cplab::Error);
}

TEST_CASE("mask: visible_pairs closed form equals counting") {
  for (index_t sq : {0, 1, 5, 16})
    for (index_t sk : {0, 1, 4, 16, 23})
      for (index_t off : {-30, -17, -4, -1, 0, 1, 3, 15, 40}) {
        const Mask m = Mask::causal(off);
        index_t count = 0;
        for (index_t a = 0; a < sq; ++a) count += m.visible_keys(a, sk);
        CAPTURE(sq);
        CAPTURE(sk);
        CAPTURE(off);
        CHECK(visible_pairs(m, sq, sk) == count);
      }
  CHECK(visible_pairs(Mask::none(), 7, 9) == 63);
  CHECK(visible_pairs(Mask::causal(), 8, 8) == 36);
}

TEST_CASE("dense: ranges masks (one visible run per row, some empty) match scalar loops") {
  std::mt19937_64 rng(3);
  for (index_t sq : {5, 300})
    for (index_t sk : {7, 270}) {
      std::vector<std::int64_t> lo(static_cast<size_t>(sq)), hi(static_cast<size_t>(sq));
      for (index_t a = 0; a < sq; ++a) {
        const auto x = static_cast<std::int64_t>(rng() % static_cast<std::uint64_t>(sk + 1));
        const auto y = static_cast<std::int64_t>(rng() % static_cast<std::uint64_t>(sk + 1));
        lo[static_cast<size_t>(a)] = std::min(x, y);
        hi[static_cast<size_t>(a)] = (a % 5 == 0) ? std::min(x, y) : std::max(x, y);  // every 5th row empty
      }
      const Mask m = Mask::ranges(lo, hi);
      CAPTURE(sq);
      CAPTURE(sk);
      check_against_naive(Case{sq, sk, 4, 2, 8, 5, m});
      index_t count = 0;
      for (index_t a = 0; a < sq; ++a) count += hi[static_cast<size_t>(a)] - lo[static_cast<size_t>(a)];
      CHECK(visible_pairs(m, sq, sk) == count);
    }
}

TEST_CASE("mask: simplify turns ranges into the causal or none mask they equal") {
  CHECK(to_string(simplify(Mask::ranges({0, 0, 0}, {4, 4, 4}), 3, 4)) == "none");
  CHECK(to_string(simplify(Mask::ranges({0, 0, 0}, {3, 4, 4}), 3, 4)) == "causal(2)");  // bottom-right
  CHECK(to_string(simplify(Mask::ranges({0, 0, 0}, {1, 2, 3}), 3, 3)) == "causal");
  CHECK(to_string(simplify(Mask::ranges({0, 0, 0}, {1, 3, 3}), 3, 3)) == "ranges");
  CHECK(to_string(simplify(Mask::ranges({1, 0}, {2, 2}), 2, 2)) == "ranges");
}
