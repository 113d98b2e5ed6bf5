// test_sinks.cpp: attention sinks (core/sinks.h). The dense kernel's sink (inside the softmax) against
// scalar loops; the modes' route (one more partial merged into the final (O, LSE)) against the
// kernel's; the backward, d s_h included, against central finite differences, on the dense oracle
// and through CP runs (ring with an early stop, all-to-all) whose sinks are given as --sink-logits.
// What it is not: the sweep of every mode and mask (test_masks.cpp).
#include <doctest/doctest.h>

#include <cmath>
#include <random>

#include "core/dense_attention.h"
#include "core/rel_error.h"
#include "run/experiment.h"

using namespace cplab;

namespace {

Tensor3<double> random3(index_t n, index_t h, index_t d, std::mt19937_64& rng) {
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  Tensor3<double> x(n, h, d);
  for (double& e : x.data) e = u(rng);
  return x;
}

double dot(const Tensor3<double>& a, const Tensor3<double>& b) {
  double s = 0;
  for (size_t i = 0; i < a.data.size(); ++i) s += a.data[i] * b.data[i];
  return s;
}

struct Dense {
  index_t S = 23, h = 4, hk = 2, d = 5, dv = 3;
  double scale = 0.7;
  Tensor3<double> q, k, v, dout;
  std::vector<double> sinks;
  Mask mask = sequence_mask(PositionRule{true, 6, 0}, 23);  // causal window 6
  explicit Dense(std::uint64_t seed) {
    std::mt19937_64 rng(seed);
    q = random3(S, h, d, rng), k = random3(S, hk, d, rng), v = random3(S, hk, dv, rng), dout = random3(S, h, dv, rng);
    sinks = {0.3, -1.2, 2.5, 0.0};
  }
  double loss() const { return dot(dense_forward(q, k, v, mask, scale, sinks.data()).o, dout); }  // sum(dO * O)
};

}  // namespace

TEST_CASE("sinks: the dense kernel puts exp(s_h) in every row's denominator (scalar loops), and the modes' merge agrees") {
  const Dense x(1);
  const AttnOut<double> f = dense_forward(x.q, x.k, x.v, x.mask, x.scale, x.sinks.data());
  double worst = 0;
  for (index_t i = 0; i < x.h; ++i)
    for (index_t t = 0; t < x.S; ++t) {
      const index_t g = i / (x.h / x.hk);
      const KeyRange kr = x.mask.keys(t, x.S);
      double z = std::exp(x.sinks[static_cast<size_t>(i)]);  // the sink's term; its value row is 0
      std::vector<double> o(static_cast<size_t>(x.dv), 0.0);
      for (index_t j = kr.lo; j < kr.hi; ++j) {
        double s = 0;
        for (index_t e = 0; e < x.d; ++e) s += x.q.token(t)[i * x.d + e] * x.k.token(j)[g * x.d + e];
        const double p = std::exp(x.scale * s);
        z += p;
        for (index_t e = 0; e < x.dv; ++e) o[static_cast<size_t>(e)] += p * x.v.token(j)[g * x.dv + e];
      }
      worst = std::max(worst, std::abs(f.lse(i, t) - std::log(z)));
      for (index_t e = 0; e < x.dv; ++e) worst = std::max(worst, std::abs(f.o.token(t)[i * x.dv + e] - o[static_cast<size_t>(e)] / z));
    }
  CHECK(worst < 1e-13);
  // the modes' route: attention without sinks, then the sink merged in as the partial (0, s_h)
  AttnOut<double> m = dense_forward(x.q, x.k, x.v, x.mask, x.scale);
  apply_sinks<double>(m.o.view(), rows_view(m.lse), x.sinks.data());
  CHECK(rel_error(m.o.data.data(), f.o.data.data(), f.o.data.size()) < 1e-14);
  CHECK(rel_error(m.lse.data(), f.lse.data(), static_cast<size_t>(f.lse.size())) < 1e-14);
  // a row that sees no key (padding) stays empty: O = 0, LSE = -inf, no gradient
  Tensor3<double> o1(1, 1, 2);
  Rows<double> l1 = Rows<double>::Constant(1, 1, -std::numeric_limits<double>::infinity());
  const double s1 = 3.0;
  apply_sinks<double>(o1.view(), rows_view(l1), &s1);
  CHECK(l1(0, 0) == -std::numeric_limits<double>::infinity());
  double ds = 0;
  sink_grad<double>(o1.view(), o1.view(), rows_view(std::as_const(l1)), &s1, &ds);
  CHECK(ds == 0.0);
}

TEST_CASE("sinks: the dense backward, d s_h included, equals central finite differences") {
  Dense x(2);
  const AttnOut<double> f = dense_forward(x.q, x.k, x.v, x.mask, x.scale, x.sinks.data());
  const AttnGrads<double> g = dense_backward(x.q, x.k, x.v, f, x.dout, x.mask, x.scale, x.sinks.data());
  REQUIRE(g.dsinks.size() == 4);
  const double eps = 1e-6;
  auto central = [&](double& param) {
    const double keep = param;
    param = keep + eps;
    const double up = x.loss();
    param = keep - eps;
    const double down = x.loss();
    param = keep;
    return (up - down) / (2 * eps);
  };
  for (size_t i = 0; i < x.sinks.size(); ++i) {
    const double fd = central(x.sinks[i]);
    CAPTURE(i);
    CHECK(std::abs(g.dsinks[i] - fd) <= 1e-8 * std::max(1.0, std::abs(fd)));
    CHECK(std::abs(g.dsinks[i]) > 1e-4);  // the check is not vacuous
  }
  for (index_t e : {index_t{0}, index_t{17}, index_t{61}}) {  // dQ, dK, dV: the backward with LSE' is still exact
    CAPTURE(e);
    CHECK(std::abs(g.dq.data[static_cast<size_t>(e)] - central(x.q.data[static_cast<size_t>(e)])) < 1e-8);
    CHECK(std::abs(g.dk.data[static_cast<size_t>(e)] - central(x.k.data[static_cast<size_t>(e)])) < 1e-8);
    CHECK(std::abs(g.dv.data[static_cast<size_t>(e % 60)] - central(x.v.data[static_cast<size_t>(e % 60)])) < 1e-8);
  }
}

TEST_CASE("sinks: d s_h of CP runs (ring stopping early, all-to-all, packed) equals central finite differences") {
  struct Case {
    Mode mode;
    Layout layout;
    bool packed;
  };
  for (const Case c : {Case{Mode::p2p, Layout::contiguous, false}, Case{Mode::a2a, Layout::zigzag, false},
                       Case{Mode::allgather, Layout::striped, true}}) {
    CpFields f;
    f.mode = c.mode;
    f.layout = c.layout;
    f.cp = 4;
    f.heads = f.kv_heads = 4;
    f.head_dim = 6;
    f.causal = true;
    f.window = 9;
    f.sinks = true;
    f.sink_logits = {0.5, -0.25, 1.5, -2.0};
    if (c.packed) f.cu_seqlens = {0, 19, 40, 45}, f.pad = true;
    else f.seq = 64;
    RunSpec s{CpSpec(f), true};
    s.seed = 3;
    const Inputs in = make_inputs(s);
    const RunReport r = run_experiment(s, in);
    CAPTURE(to_string(c.mode));
    CHECK(r.max_error() <= 1e-10);
    REQUIRE(r.dsinks.size() == 4);
    auto loss = [&](size_t i, double delta) {  // sum(dO * O) of the CP run with s_i moved by delta
      CpFields g = f;
      g.sink_logits[i] += delta;
      RunSpec t{CpSpec(g), true};
      t.seed = 3;
      Inputs moved = in;
      moved.sinks = g.sink_logits;
      return dot(run_experiment(t, moved).o, in.dout);
    };
    const double eps = 1e-6;
    for (size_t i = 0; i < 4; ++i) {
      const double fd = (loss(i, eps) - loss(i, -eps)) / (2 * eps);
      CAPTURE(i);
      CHECK(std::abs(r.dsinks[i] - fd) <= 1e-7 * std::max(1.0, std::abs(fd)));
    }
  }
}

TEST_CASE("sinks: drawn from the seed when not given, the same Q, K, V, dO as without sinks") {
  CpFields f;
  f.seq = 32;
  f.cp = 2;
  f.causal = true;
  RunSpec plain{CpSpec(f), true};
  f.sinks = true;
  RunSpec with{CpSpec(f), true};
  const Inputs a = make_inputs(plain), b = make_inputs(with);
  CHECK(a.q.data == b.q.data);
  CHECK(a.dout.data == b.dout.data);
  CHECK(a.sinks.empty());
  REQUIRE(b.sinks.size() == 8);
  for (double s : b.sinks) CHECK(std::abs(s) <= 1.0);
  with.seed = 1;
  CHECK(make_inputs(with).sinks != b.sinks);
}
