// test_cpu_kernel.cpp: the CPU attention kernel's two routes (core/kernel_route.h, issue 25).
// gemm.h on both routes against a scalar triple loop (every transpose, strided operands, beta 0
// ignoring a NaN in C); row_kernels.h's fast loops against scalar std::exp / max / p (dp - delta) for
// every tail length, underflow and NaN; then CP runs of every mode x mask (causal, full, window,
// chunk, packed, sinks) forced onto the fast route, checked against dense attention AND against the
// same run on the portable route (<= 1e-10 in double, 1e-4 in float); the route rule itself; and the
// same bits on 1 and 2 OpenMP threads when the backward splits a lone KV head's rows into groups.
// What it is not: a speed test (bench/cpu's cplab-cpu-bench measures speed; no test reads a clock).
#include <doctest/doctest.h>

#include <omp.h>

#include <cmath>
#include <cstdlib>
#include <limits>
#include <random>
#include <vector>

#include "core/gemm.h"
#include "core/kernel_route.h"
#include "core/rel_error.h"
#include "core/row_kernels.h"
#include "core/runtime_env.h"
#include "core/util.h"
#include "run/experiment.h"

using namespace cplab;

namespace {

template <class T>
std::vector<T> uniform(size_t n, std::mt19937_64& rng, double lo = -1, double hi = 1) {
  std::uniform_real_distribution<double> u(lo, hi);
  std::vector<T> x(n);
  for (T& e : x) e = static_cast<T>(u(rng));
  return x;
}

template <class T>
void check_gemm(Route route, double tol) {
  std::mt19937_64 rng(5);
  const index_t m = 13, n = 11, k = 7, pad = 3;  // every operand stored with a row stride > its width
  for (const Trans ta : {Trans::no, Trans::yes})
    for (const Trans tb : {Trans::no, Trans::yes})
      for (const T beta : {T(0), T(1)}) {
        CAPTURE(static_cast<int>(ta));
        CAPTURE(static_cast<int>(tb));
        CAPTURE(beta);
        const index_t ar = ta == Trans::yes ? k : m, ac = ta == Trans::yes ? m : k;
        const index_t br = tb == Trans::yes ? n : k, bc = tb == Trans::yes ? k : n;
        const index_t lda = ac + pad, ldb = bc + pad, ldc = n + pad;
        const std::vector<T> a = uniform<T>(sz(ar * lda), rng), b = uniform<T>(sz(br * ldb), rng);
        std::vector<T> c = uniform<T>(sz(m * ldc), rng);
        if (beta == T(0)) c[0] = std::numeric_limits<T>::quiet_NaN();  // beta 0: C is overwritten, NaN too
        std::vector<double> want(sz(m * n));
        for (index_t i = 0; i < m; ++i)
          for (index_t j = 0; j < n; ++j) {
            double s = 0;
            for (index_t e = 0; e < k; ++e)
              s += static_cast<double>(ta == Trans::yes ? a[sz(e * lda + i)] : a[sz(i * lda + e)]) *
                   static_cast<double>(tb == Trans::yes ? b[sz(j * ldb + e)] : b[sz(e * ldb + j)]);
            want[sz(i * n + j)] = 0.5 * s + (beta == T(0) ? 0.0 : static_cast<double>(c[sz(i * ldc + j)]));
          }
        const std::vector<T> before = c;
        gemm<T>(route, ta, tb, m, n, k, T(0.5), a.data(), lda, b.data(), ldb, beta, c.data(), ldc);
        double worst = 0;
        for (index_t i = 0; i < m; ++i)
          for (index_t j = 0; j < n; ++j)
            worst = std::max(worst, std::abs(static_cast<double>(c[sz(i * ldc + j)]) - want[sz(i * n + j)]));
        CHECK(worst <= tol);
        for (index_t i = 0; i < m; ++i)  // the padding between rows of C is never written
          for (index_t j = n; j < ldc; ++j) CHECK(c[sz(i * ldc + j)] == before[sz(i * ldc + j)]);
      }
}

template <class T>
void check_rows(double ulps) {
  std::mt19937_64 rng(9);
  const double eps = std::numeric_limits<T>::epsilon();
  for (std::int64_t n = 0; n <= 37; ++n) {
    CAPTURE(n);
    const std::vector<T> x0 = uniform<T>(sz(n), rng, -30, 0.5);
    const T c = T(0.25);
    std::vector<T> x = x0;
    const T mx = row_max(Route::fast, x.data(), n);
    T want_max = -std::numeric_limits<T>::infinity();
    for (T e : x0) want_max = std::max(want_max, e);
    CHECK(mx == want_max);
    const T sum = exp_shift_sum(Route::fast, x.data(), n, c);
    double want_sum = 0, worst = 0;
    for (std::int64_t j = 0; j < n; ++j) {
      const double want = std::exp(static_cast<double>(x0[sz(j)] - c));
      want_sum += static_cast<double>(x[sz(j)]);
      worst = std::max(worst, std::abs(static_cast<double>(x[sz(j)]) - want) / want);
    }
    CHECK(worst <= ulps * eps);
    CHECK(std::abs(static_cast<double>(sum) - want_sum) <= 8 * eps * std::max(1.0, want_sum));
    std::vector<T> y = x0;
    exp_shift(Route::fast, y.data(), n, c);
    CHECK(y == x);  // the same values with or without the sum
    std::vector<T> ds = uniform<T>(sz(n), rng), p = uniform<T>(sz(n), rng, 0, 1);
    const std::vector<T> dp = ds;
    grad_scores(Route::fast, ds.data(), p.data(), n, T(0.3));
    for (std::int64_t j = 0; j < n; ++j) CHECK(ds[sz(j)] == p[sz(j)] * (dp[sz(j)] - T(0.3)));
  }
  // far below the smallest normal number: exactly 0; NaN (inf - inf: overflowed scores) stays NaN
  std::vector<T> u(9, T(-1e4));
  u[4] = std::numeric_limits<T>::quiet_NaN();
  exp_shift(Route::fast, u.data(), 9, T(0));
  for (int j = 0; j < 9; ++j) CHECK((j == 4 ? std::isnan(u[sz(j)]) : u[sz(j)] == T(0)));
  std::vector<T> z(5, T(0));
  CHECK(exp_shift_sum(Route::fast, z.data(), 5, T(0)) == T(5));  // exp(0) = 1 exactly
}

struct RunCase {
  std::string name;
  CpFields f;
};

std::vector<RunCase> run_cases() {
  std::vector<RunCase> cases;
  const auto base = [](Mode mode) {
    CpFields f;
    f.mode = mode, f.layout = Layout::zigzag, f.cp = 4, f.seq = 96, f.heads = 4, f.kv_heads = 2;
    f.head_dim = 8, f.v_head_dim = 6, f.causal = true;
    if (mode == Mode::a2a) f.kv_heads = 4;
    if (mode == Mode::a2a_p2p) f.icp = 2, f.ocp = 2;
    return f;
  };
  for (Mode mode : {Mode::p2p, Mode::allgather, Mode::a2a, Mode::a2a_p2p}) {
    const std::string m = to_string(mode);
    cases.push_back({m + " causal", base(mode)});
    CpFields full = base(mode);
    full.causal = false;
    cases.push_back({m + " full", full});
    CpFields win = base(mode);
    win.window = 7, win.sinks = true;
    cases.push_back({m + " window 7 + sinks", win});
    CpFields chunk = base(mode);
    chunk.chunk = 16;
    cases.push_back({m + " chunk 16", chunk});
    if (mode != Mode::a2a_p2p) {
      CpFields packed = base(mode);
      packed.seq = 0, packed.cu_seqlens = {0, 37, 100, 101, 150}, packed.pad = true;
      cases.push_back({m + " packed", packed});
    }
  }
  return cases;
}

// the largest difference between two runs' results (rel_error of each output)
double between(const RunReport& a, const RunReport& b) {
  return std::max({rel_error(a.o, b.o), rel_error(a.lse, b.lse), rel_error(a.dq, b.dq), rel_error(a.dk, b.dk),
                   rel_error(a.dv, b.dv)});
}

}  // namespace

TEST_CASE("cpu kernel: gemm on both routes against a scalar loop, every transpose, strided, beta 0 ignores NaN") {
  check_gemm<double>(Route::portable, 1e-13);
  check_gemm<double>(Route::fast, 1e-13);
  check_gemm<float>(Route::portable, 1e-5);
  check_gemm<float>(Route::fast, 1e-5);
}

TEST_CASE("cpu kernel: the fast route's row loops against scalar exp, max and dS, every tail length") {
  const std::string here = "fast route here: products " + gemm_backend() + ", row loops " + row_kernels_isa();
  MESSAGE(here);
  check_rows<double>(4);
  check_rows<float>(4);
}

TEST_CASE("cpu kernel: OpenBLAS runs kernels this CPU has, never its Prescott fallback (core/runtime_env.h)") {
  // test_main.cpp called prepare_runtime, as every cplab program does
  const std::string b = gemm_backend();
  MESSAGE(b);
  if (b.rfind("OpenBLAS", 0) != 0) return;  // a build without OpenBLAS: Eigen does the products
  const bool users_choice = std::getenv("OPENBLAS_CORETYPE") != nullptr && blas_core_note().empty();
#if defined(__x86_64__)
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && !users_choice)
    CHECK_MESSAGE(b.find("core Prescott") == std::string::npos, "OpenBLAS chose its generic SSE3 kernels on a CPU with AVX2");
#endif
  if (!blas_core_note().empty()) CHECK(b.find(blas_core_note()) != std::string::npos);
  (void)users_choice;
}

TEST_CASE("cpu kernel: the route rule (small calls portable, large fast, a forced choice wins)") {
  CHECK(kernel_route(1) == Route::portable);
  CHECK(kernel_route(static_cast<double>(kFastRouteWork) - 1) == Route::portable);
  CHECK(kernel_route(static_cast<double>(kFastRouteWork)) == Route::fast);
  {
    const RouteScope g(RouteChoice::fast);
    CHECK(kernel_route(1) == Route::fast);
  }
  {
    const RouteScope g(RouteChoice::portable);
    CHECK(kernel_route(1e12) == Route::portable);
  }
  CHECK(kernel_route(1e12) == Route::fast);
}

TEST_CASE("cpu kernel: every mode x mask on the fast route, against dense and the portable route, <= 1e-10") {
  for (const RunCase& c : run_cases())
    for (const std::string dtype : {"double", "float"}) {
      CAPTURE(c.name);
      CAPTURE(dtype);
      RunSpec s{CpSpec(c.f), true};
      s.dtype = dtype;
      s.seed = 3;
      const Inputs in = make_inputs(s);
      RunReport fast, portable;
      {
        const RouteScope g(RouteChoice::fast);
        fast = run_experiment(s, in);
      }
      {
        const RouteScope g(RouteChoice::portable);
        portable = run_experiment(s, in);
      }
      const double tol = run_tolerance(dtype);
      CHECK(fast.max_error() <= tol);
      CHECK(portable.max_error() <= tol);
      CHECK(between(fast, portable) <= tol);
      CHECK(fast.padding_max_abs == 0);
    }
}

TEST_CASE("cpu kernel: the same bits on 1 and 2 threads when a lone KV head's rows run as parallel groups") {
  // a2a on 2 ranks with 2 KV heads: one KV head per rank, so the backward splits its row blocks
  CpFields f;
  f.mode = Mode::a2a, f.layout = Layout::zigzag, f.cp = 2, f.seq = 1024, f.heads = 2, f.kv_heads = 2;
  f.head_dim = 64, f.causal = true;
  RunSpec s{CpSpec(f), true};
  const Inputs in = make_inputs(s);
  const int saved = omp_get_max_threads();
  std::vector<RunReport> r;
  for (const int threads : {1, 2}) {
    const RouteScope g(RouteChoice::fast);
    omp_set_num_threads(threads);
    r.push_back(run_experiment(s, in));
  }
  omp_set_num_threads(saved);
  CHECK(r[0].o.data == r[1].o.data);
  CHECK((r[0].lse == r[1].lse).all());
  CHECK(r[0].dq.data == r[1].dq.data);
  CHECK(r[0].dk.data == r[1].dk.data);
  CHECK(r[0].dv.data == r[1].dv.data);
  CHECK(r[1].max_error() <= 1e-10);
}
