// test_merge.cpp: the (O, LSE) merge: exactness, streaming == fold, -inf safety.
#include <doctest/doctest.h>

#include "helpers.h"
#include <utility>

#include "core/merge.h"

using namespace cplab;
using namespace cplab::test;

namespace {
constexpr double ninf = -std::numeric_limits<double>::infinity();
}

TEST_CASE("merge: lse_merge and weights are -inf safe") {
  CHECK(lse_merge(ninf, ninf) == ninf);
  CHECK(lse_merge(ninf, 1.5) == 1.5);
  CHECK(lse_merge(2.0, ninf) == 2.0);
  CHECK(lse_merge(0.0, 0.0) == doctest::Approx(std::log(2.0)));
  CHECK(lse_merge(1000.0, 1000.0) == doctest::Approx(1000.0 + std::log(2.0)));  // no overflow
  CHECK(merge_weight(ninf, ninf) == 0.0);
  CHECK(merge_weight(ninf, 3.0) == 0.0);
  CHECK(merge_weight(1.0, 1.0) == 1.0);
}

TEST_CASE("merge: attention over split keys, merged both ways, equals attention over all keys") {
  const index_t sq = 11, sk = 17, h = 2, d = 4;
  const auto q = random_tensor<double>(sq, h, d, 1), k = random_tensor<double>(sk, h, d, 2);
  const auto v = random_tensor<double>(sk, h, d, 3);
  const AttnOut<double> full = dense_forward(q, k, v, Mask::none(), 0.5);
  // three key blocks: [0,6), [6,6) (empty: a partial with LSE = -inf), [6,17)
  const std::vector<std::pair<index_t, index_t>> blocks = {{0, 6}, {6, 0}, {6, 11}};
  Tensor3<double> o_s(sq, h, d);
  Rows<double> l_s = Rows<double>::Constant(h, sq, ninf);
  PostLoopFold<double> fold(sq, h, d);
  for (auto [b0, nb] : blocks) {
    Tensor3<double> o_i(sq, h, d);
    Rows<double> l_i(h, sq);
    attention_forward<double>(q.view(), k.view().rows(b0, nb), v.view().rows(b0, nb), Mask::none(), 0.5,
                              o_i.view(), rows_view(l_i));
    merge_streaming<double>(o_s.view(), rows_view(l_s), 0, o_i.view(), rows_view(std::as_const(l_i)));
    fold.add(0, o_i, l_i);
  }
  Tensor3<double> o_f(sq, h, d);
  Rows<double> l_f(h, sq);
  fold.finish(o_f.view(), rows_view(l_f));
  CHECK(rel_error(o_s, full.o) < 1e-14);
  CHECK(rel_error(l_s, full.lse) < 1e-14);
  CHECK(rel_error(o_f, full.o) < 1e-14);
  CHECK(rel_error(l_f, full.lse) < 1e-14);
  CHECK(fold.partials() == 3);
}

TEST_CASE("merge: rows that no partial covers stay O = 0, LSE = -inf, never NaN") {
  Tensor3<double> o(4, 1, 2);
  Rows<double> l = Rows<double>::Constant(1, 4, ninf);
  Tensor3<double> part(2, 1, 2);
  Rows<double> lp = Rows<double>::Constant(1, 2, ninf);  // two empty partials
  merge_streaming<double>(o.view(), rows_view(l), 1, part.view(), rows_view(std::as_const(lp)));
  for (double x : o.data) CHECK(x == 0.0);
  for (index_t t = 0; t < 4; ++t) CHECK(l(0, t) == ninf);
  PostLoopFold<double> fold(4, 1, 2);
  fold.add(2, part, lp);
  fold.finish(o.view(), rows_view(l));
  for (double x : o.data) CHECK(x == 0.0);
  CHECK(parse_merge("fold") == MergeKind::fold);
  CHECK_THROWS_WITH_AS(parse_merge("online"), "merge 'online' is not one of: streaming, fold", Error);
}
