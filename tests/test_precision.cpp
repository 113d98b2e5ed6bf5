// test_precision.cpp: --precision (run/precision.h) and the ring's emulated storage (cp_spec.h
// partials_dtype, merge_dtype; modes/ring_p2p.cpp).
//
// What it is: round_in_place against round_to; the parser's stages and rules; a 2-rank ring whose
// output, with each step's partial O rounded to bf16 and the running sum rounded after the merge,
// equals the same computation written here from the definitions (dense partials over each rank's KV
// block, rounded, merged with the two-partial rule of merge.h); and the storage's effect on the
// errors: none unset, float-sized with fp32 storage in a double run, bf16-sized with bf16.
// What it is not: cplab check's use of it (a tolerance computed from an emulated run).
#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <random>

#include "core/dtype.h"
#include "core/error.h"
#include "run/precision.h"

namespace cplab {

namespace {

// O (S, h, dv) and LSE (h rows of S) of queries rows over keys [k0, k1), non-causal, written out
struct Dense {
  std::vector<double> o, lse;
};
Dense dense_over(const Inputs& in, index_t k0, index_t k1, double scale) {
  const index_t S = in.q.n, h = in.q.h, d = in.q.d, dv = in.v.d, hk = in.k.h;
  Dense r{std::vector<double>(static_cast<size_t>(S * h * dv), 0.0), std::vector<double>(static_cast<size_t>(S * h), 0.0)};
  for (index_t t = 0; t < S; ++t)
    for (index_t i = 0; i < h; ++i) {
      const index_t g = i / (h / hk);
      std::vector<double> s;
      double m = -std::numeric_limits<double>::infinity();
      for (index_t k = k0; k < k1; ++k) {
        double x = 0;
        for (index_t e = 0; e < d; ++e) x += in.q.at(t, i, e) * in.k.at(k, g, e);
        s.push_back(scale * x), m = std::max(m, scale * x);
      }
      double l = 0;
      for (size_t a = 0; a < s.size(); ++a) {
        const double p = std::exp(s[a] - m);
        l += p;
        for (index_t e = 0; e < dv; ++e) r.o[static_cast<size_t>((t * h + i) * dv + e)] += p * in.v.at(k0 + static_cast<index_t>(a), g, e);
      }
      for (index_t e = 0; e < dv; ++e) r.o[static_cast<size_t>((t * h + i) * dv + e)] /= l;
      r.lse[static_cast<size_t>(t * h + i)] = m + std::log(l);
    }
  return r;
}

}  // namespace

TEST_CASE("precision: round_in_place rounds as round_to does, in float and double buffers") {
  std::mt19937_64 rng(5);
  std::uniform_real_distribution<double> u(-70000.0, 70000.0);
  std::vector<double> x(2000);
  for (size_t i = 0; i < x.size(); ++i) x[i] = i % 3 == 0 ? u(rng) : u(rng) * 1e-9;
  for (DType t : {DType::f32, DType::f16, DType::bf16}) {
    std::vector<double> a = x;
    std::vector<float> b(x.begin(), x.end());
    round_in_place(a.data(), a.size(), t);
    round_in_place(b.data(), b.size(), t);
    for (size_t i = 0; i < x.size(); ++i) {
      CHECK(a[i] == round_to(x[i], t));
      CHECK(static_cast<double>(b[i]) == round_to(static_cast<double>(static_cast<float>(x[i])), t));
    }
  }
}

TEST_CASE("precision: --precision's stages, their order in the text, and its rules") {
  const Precision p = parse_precision("merge=bf16,inputs=bf16,accumulate=fp32,partials=fp16");
  CHECK(p.inputs == DType::bf16);
  CHECK(p.partials == DType::f16);
  CHECK(p.merge == DType::bf16);
  CHECK(p.accumulate == std::string("float"));
  CHECK(to_string(p) == "inputs=bf16,accumulate=fp32,partials=fp16,merge=bf16");
  CHECK(parse_precision("accumulate=fp64").accumulate == std::string("double"));
  for (const char* bad : {"", "inputs", "inputs=", "=bf16", "inputs=bf8", "accumulate=bf16", "x=fp32", "merge=bf16,merge=fp32",
                          "merge=bf16,"})
    CHECK_THROWS_AS(parse_precision(bad), Error);
  CpFields f;
  f.mode = Mode::allgather, f.seq = 64, f.partials_dtype = DType::bf16;
  CHECK_THROWS_WITH_AS(CpSpec{f}, doctest::Contains("modes p2p and a2a+p2p"), Error);
  f.mode = Mode::p2p, f.partials_dtype.reset(), f.merge_dtype = DType::bf16, f.merge = MergeKind::fold;
  CHECK_THROWS_WITH_AS(CpSpec{f}, doctest::Contains("--merge fold"), Error);
}

TEST_CASE("precision: a 2-rank ring with bf16 partials and a bf16 running sum equals the same storage written out") {
  CpFields f;
  f.mode = Mode::p2p, f.layout = Layout::contiguous, f.cp = 2, f.seq = 32, f.heads = 2, f.kv_heads = 1, f.head_dim = 8;
  f.partials_dtype = DType::bf16, f.merge_dtype = DType::bf16;
  RunSpec rs;
  rs.cp = CpSpec(f);
  rs.seed = 3;
  const Inputs in = make_inputs(rs);
  const RunReport run = run_experiment(rs, in);
  const index_t S = 32, h = 2, dv = 8, n = S / 2;
  const double scale = rs.cp.scale();
  const Dense block[2] = {dense_over(in, 0, n, scale), dense_over(in, n, S, scale)};
  double worst = 0;
  for (index_t t = 0; t < S; ++t) {
    const index_t own = t / n, other = 1 - own;  // step 0: the rank's own KV block; step 1: the other
    for (index_t i = 0; i < h; ++i) {
      const size_t row = static_cast<size_t>(t * h + i);
      const double la = block[own].lse[row], lb = block[other].lse[row];
      const double l = std::max(la, lb) + std::log1p(std::exp(std::min(la, lb) - std::max(la, lb)));
      for (index_t e = 0; e < dv; ++e) {
        const size_t x = row * static_cast<size_t>(dv) + static_cast<size_t>(e);
        const double acc = round_to(block[own].o[x], DType::bf16);  // step 0's partial, stored
        const double part = round_to(block[other].o[x], DType::bf16);
        const double merged = round_to(std::exp(la - l) * acc + std::exp(lb - l) * part, DType::bf16);
        worst = std::max(worst, std::abs(run.o.at(t, i, e) - merged));
      }
    }
  }
  MESSAGE("largest difference from the written-out storage: " << worst);
  CHECK(worst <= 1e-12);
  CHECK(*run.err_o > 1e-4);  // and the rounding did happen
}

TEST_CASE("precision: the ring's storage sets the size of the errors (none, fp32, bf16), forward and backward") {
  auto errors = [](std::optional<DType> partials, std::optional<DType> merge) {
    CpFields f;
    f.mode = Mode::p2p, f.layout = Layout::zigzag, f.cp = 4, f.seq = 128, f.heads = 4, f.kv_heads = 2, f.head_dim = 16,
    f.causal = true, f.partials_dtype = partials, f.merge_dtype = merge;
    RunSpec rs;
    rs.cp = CpSpec(f);
    rs.backward = true, rs.seed = 9;
    const RunReport r = run_experiment(rs, make_inputs(rs));
    return std::max({*r.err_o, *r.err_dq, *r.err_dk, *r.err_dv});
  };
  const double none = errors(std::nullopt, std::nullopt), f32 = errors(DType::f32, DType::f32),
               bf16_merge = errors(std::nullopt, DType::bf16), bf16 = errors(DType::bf16, DType::bf16);
  MESSAGE("worst error over O, dQ, dK, dV: none " << none << ", fp32 " << f32 << ", merge bf16 " << bf16_merge << ", partials and merge bf16 " << bf16);
  CHECK(none <= 1e-12);
  CHECK(f32 > 1e-9);
  CHECK(f32 <= 1e-6);
  CHECK(bf16_merge > 1e-4);
  CHECK(bf16 > 1e-4);
  CHECK(bf16 <= 5e-2);
}

}  // namespace cplab
