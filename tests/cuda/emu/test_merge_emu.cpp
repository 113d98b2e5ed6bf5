// test_merge_emu.cpp: cuda/merge.cu's (O, LSE) merge kernels (their own source, run by the CPU
// emulation: emu_merge.cpp) against the reference's merge (reference/core/merge.h, double):
// merge_streaming of a partial into part of the accumulator's rows, and TE's fold (fold_correction
// of two partials under the merged LSE). Rows empty in one or both partials (LSE -inf) included;
// dv = 70, not a multiple of the warp, so the lanes' last stride is partial; and fill_f32 (a CP
// forward's LSE accumulator set to -inf on the device).
// What it is not: a test of the host API's checks (test_attention_checks.cpp) or of timing.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "core/attention_kernel.h"  // rows_view
#include "core/merge.h"
#include "core/softmax_rules.h"
#include "core/tensor.h"
#include "emu_merge.h"

using namespace cplab;

namespace {

struct Partial {
  Tensor3<double> o;  // (rows, h, dv)
  Rows<double> lse;   // (h, rows)
};

// random O in [-1, 1], LSE in [-3, 3]; rows with (t + i) % 5 == empty_mod: LSE -inf and O 0 (an empty partial row)
Partial random_partial(index_t rows, index_t h, index_t dv, unsigned seed, index_t empty_mod) {
  std::mt19937 g(seed);
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  Partial p{Tensor3<double>(rows, h, dv), Rows<double>(h, rows)};
  for (index_t t = 0; t < rows; ++t)
    for (index_t i = 0; i < h; ++i) {
      const bool empty = (t + i) % 5 == empty_mod;
      p.lse(i, t) = empty ? neg_inf<double>() : 3.0 * u(g);
      for (index_t e = 0; e < dv; ++e) p.o.at(t, i, e) = empty ? 0.0 : u(g);
    }
  return p;
}

std::vector<float> floats(const std::vector<double>& x) { return {x.begin(), x.end()}; }
std::vector<float> floats(const Rows<double>& x) { return {x.data(), x.data() + x.size()}; }

// max |x - ref| / max |ref| over finite entries; a -inf in ref must be -inf in x (else 1)
double rel(const std::vector<float>& x, const double* ref, size_t n) {
  double diff = 0, scale = 0;
  for (size_t j = 0; j < n; ++j) {
    if (std::isinf(ref[j])) {
      if (!(std::isinf(x[j]) && x[j] < 0)) return 1.0;
      continue;
    }
    diff = std::max(diff, std::abs(static_cast<double>(x[j]) - ref[j]));
    scale = std::max(scale, std::abs(ref[j]));
  }
  return scale > 0 ? diff / scale : diff;
}

}  // namespace

TEST_CASE("emulated merge kernels: merge_streaming and fold_correction equal the reference merge") {
  const index_t n = 40, h = 3, dv = 70, row0 = 5, m = 30;
  const Partial a = random_partial(n, h, dv, 1, 0), b = random_partial(m, h, dv, 2, 1);
  // with (t + i) % 5 == 0 empty in a and (t' + i) % 5 == 1 in b (t = t' + row0): rows empty in both exist
  // reference: a, then b merged into rows [row0, row0 + m)
  Tensor3<double> o_ref = a.o;
  Rows<double> lse_ref = a.lse;
  merge_streaming<double>(o_ref.view(), rows_view(lse_ref), row0, b.o.view(), rows_view(b.lse));

  SUBCASE("merge_streaming") {
    std::vector<float> o = floats(a.o.data), lse = floats(a.lse);
    const std::vector<float> ob = floats(b.o.data), lb = floats(b.lse);
    cplab_emu::merge_streaming_f32(n, h, dv, o.data(), lse.data(), row0, m, ob.data(), lb.data());
    CHECK(rel(o, o_ref.data.data(), o.size()) < 1e-6);
    CHECK(rel(lse, lse_ref.data(), lse.size()) < 1e-6);
  }
  SUBCASE("fold_correction: both partials under the merged LSE") {
    std::vector<float> o(static_cast<size_t>(n * h * dv), 0.f);
    const std::vector<float> lse_final = floats(lse_ref), oa = floats(a.o.data), la = floats(a.lse);
    const std::vector<float> ob = floats(b.o.data), lb = floats(b.lse);
    cplab_emu::fold_correction_f32(n, h, dv, o.data(), lse_final.data(), 0, n, oa.data(), la.data());
    cplab_emu::fold_correction_f32(n, h, dv, o.data(), lse_final.data(), row0, m, ob.data(), lb.data());
    CHECK(rel(o, o_ref.data.data(), o.size()) < 1e-6);
  }
}

TEST_CASE("emulated fill_f32: every element of the range and none beyond") {
  std::vector<float> y(600, 1.f);  // 2 blocks and a partial third of 256 threads, 20 guard elements
  cplab_emu::fill_f32(y.data(), 580, neg_inf<float>());
  for (size_t j = 0; j < 580; ++j) REQUIRE(y[j] == neg_inf<float>());
  for (size_t j = 580; j < y.size(); ++j) REQUIRE(y[j] == 1.f);
}
