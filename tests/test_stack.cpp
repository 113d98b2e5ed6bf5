// test_stack.cpp: a stack of attention layers, each with its own CP mode (Megatron's per-layer
// --cp-comm-type), equals the dense stack: output, input gradient and every weight gradient.
#include <doctest/doctest.h>

#include <random>

#include "core/rel_error.h"
#include "modes/layer_stack.h"

using namespace cplab;

namespace {

double rel(const Mat<double>& a, const Mat<double>& b) {
  REQUIRE(a.rows() == b.rows());
  REQUIRE(a.cols() == b.cols());
  return rel_error(a.data(), b.data(), static_cast<size_t>(a.size()));  // core/rel_error.h
}

void check_stack(const StackSpec& s, Layout layout, index_t cp, index_t seq) {
  const std::vector<LayerWeights> w = random_weights(s, 5);
  std::mt19937_64 rng(9);
  std::uniform_real_distribution<double> u(-1, 1);
  Mat<double> x(seq, s.hidden), dy(seq, s.hidden);
  for (index_t i = 0; i < x.size(); ++i) x.data()[i] = u(rng), dy.data()[i] = u(rng);
  const StackResult ref = dense_stack(s, w, x, dy);
  Trace trace(static_cast<int>(cp));
  SimComm comm(static_cast<int>(cp), &trace);
  const StackResult got = cp_stack(s, Partition(layout, seq, cp), w, x, dy, comm);
  CHECK(rel(got.y, ref.y) <= 1e-10);
  CHECK(rel(got.dx, ref.dx) <= 1e-10);
  REQUIRE(got.dw.size() == ref.dw.size());
  for (size_t l = 0; l < ref.dw.size(); ++l) {
    CAPTURE(l);
    CHECK(rel(got.dw[l].wq, ref.dw[l].wq) <= 1e-10);
    CHECK(rel(got.dw[l].wk, ref.dw[l].wk) <= 1e-10);
    CHECK(rel(got.dw[l].wv, ref.dw[l].wv) <= 1e-10);
    CHECK(rel(got.dw[l].wo, ref.dw[l].wo) <= 1e-10);
  }
  CHECK(comm.pending() == 0);
  CHECK(rel(got.y, x) > 1e-3);  // the layers did something
}

}  // namespace

TEST_CASE("stack: p2p p2p a2a a2a+p2p (Megatron's per-layer cp_comm_type) equals the dense stack, with RoPE") {
  StackSpec s;
  s.modes = {{Mode::p2p}, {Mode::p2p}, {Mode::a2a}, {Mode::a2a_p2p, 2, 2}};
  s.hidden = 12;
  s.heads = 4;
  s.kv_heads = 4;
  s.head_dim = 6;
  check_stack(s, Layout::zigzag, 4, 32);
  s.causal = false;
  check_stack(s, Layout::zigzag, 4, 32);
}

TEST_CASE("stack: allgather, p2p and a2a layers over striped and contiguous layouts, GQA") {
  StackSpec s;
  s.modes = {{Mode::allgather}, {Mode::p2p}, {Mode::a2a}};
  s.hidden = 10;
  s.heads = 4;
  s.kv_heads = 2;
  s.head_dim = 4;
  s.rope.rotary_dim = 2;
  for (Layout L : {Layout::striped, Layout::contiguous}) check_stack(s, L, 2, 18);
}
