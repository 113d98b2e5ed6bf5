// row_kernels.cpp: the row loops of row_kernels.h: Eigen arrays (any CPU) and AVX2 + FMA intrinsics
// (functions compiled for that target only, called only when the CPU reports both), chosen once.
#include "core/row_kernels.h"

#include <Eigen/Core>
#include <algorithm>
#include <limits>
#include <string>

#include "core/avx2_dispatch.h"
#ifdef CPLAB_X86
#include <immintrin.h>
#endif

namespace cplab {

namespace {

template <class T>
using Row = Eigen::Map<Eigen::Array<T, 1, Eigen::Dynamic>>;
template <class T>
using CRow = Eigen::Map<const Eigen::Array<T, 1, Eigen::Dynamic>>;

// ---- generic: Eigen's vectorised arrays at the build's instruction set
template <class T>
T max_generic(const T* x, std::int64_t n) {
  return n > 0 ? CRow<T>(x, n).maxCoeff() : -std::numeric_limits<T>::infinity();
}
template <class T>
T exp_sum_generic(T* x, std::int64_t n, T c) {
  if (n <= 0) return T(0);
  Row<T> r(x, n);
  r = (r - c).exp();
  return r.sum();
}
template <class T>
void grad_generic(T* ds, const T* p, std::int64_t n, T delta) {
  if (n > 0) Row<T>(ds, n) = CRow<T>(p, n) * (Row<T>(ds, n) - delta);
}

#ifdef CPLAB_X86
#define AVX2 __attribute__((target("avx2,fma")))

// exp of 4 doubles (Cephes / Eigen pexp_double); below log(DBL_MIN) the result is 0, NaN gives NaN
AVX2 inline __m256d exp4(const __m256d in) {
  __m256d x = in;
  const __m256d lo = _mm256_set1_pd(-708.3964185322641), hi = _mm256_set1_pd(709.0);
  const __m256d under = _mm256_cmp_pd(x, lo, _CMP_LT_OQ);
  x = _mm256_min_pd(_mm256_max_pd(x, lo), hi);
  const __m256d fx = _mm256_floor_pd(_mm256_fmadd_pd(x, _mm256_set1_pd(1.4426950408889634), _mm256_set1_pd(0.5)));
  x = _mm256_fnmadd_pd(fx, _mm256_set1_pd(0.693145751953125), x);
  x = _mm256_fnmadd_pd(fx, _mm256_set1_pd(1.42860682030941723212e-6), x);
  const __m256d x2 = _mm256_mul_pd(x, x);
  __m256d px = _mm256_set1_pd(1.26177193074810590878e-4);
  px = _mm256_fmadd_pd(px, x2, _mm256_set1_pd(3.02994407707441961300e-2));
  px = _mm256_fmadd_pd(px, x2, _mm256_set1_pd(9.99999999999999999910e-1));
  px = _mm256_mul_pd(px, x);
  __m256d qx = _mm256_set1_pd(3.00198505138664455042e-6);
  qx = _mm256_fmadd_pd(qx, x2, _mm256_set1_pd(2.52448340349684104192e-3));
  qx = _mm256_fmadd_pd(qx, x2, _mm256_set1_pd(2.27265548208155028766e-1));
  qx = _mm256_fmadd_pd(qx, x2, _mm256_set1_pd(2.00000000000000000009e0));
  x = _mm256_div_pd(px, _mm256_sub_pd(qx, px));
  x = _mm256_fmadd_pd(_mm256_set1_pd(2.0), x, _mm256_set1_pd(1.0));
  const __m128i e = _mm_add_epi32(_mm256_cvtpd_epi32(fx), _mm_set1_epi32(1023));  // fx in [-1022, 1023]
  const __m256d pow2 = _mm256_castsi256_pd(_mm256_slli_epi64(_mm256_cvtepi32_epi64(e), 52));
  const __m256d r = _mm256_andnot_pd(under, _mm256_mul_pd(x, pow2));
  return _mm256_or_pd(r, _mm256_cmp_pd(in, in, _CMP_UNORD_Q));  // NaN stays NaN, as Eigen's exp
}

// exp of 8 floats (Cephes / Eigen pexp_float); below log(FLT_MIN) the result is 0, NaN gives NaN
AVX2 inline __m256 exp8(const __m256 in) {
  __m256 x = in;
  const __m256 lo = _mm256_set1_ps(-87.33654475f), hi = _mm256_set1_ps(88.0f);
  const __m256 under = _mm256_cmp_ps(x, lo, _CMP_LT_OQ);
  x = _mm256_min_ps(_mm256_max_ps(x, lo), hi);
  const __m256 fx = _mm256_floor_ps(_mm256_fmadd_ps(x, _mm256_set1_ps(1.44269504088896341f), _mm256_set1_ps(0.5f)));
  x = _mm256_fnmadd_ps(fx, _mm256_set1_ps(0.693359375f), x);
  x = _mm256_fnmadd_ps(fx, _mm256_set1_ps(-2.12194440e-4f), x);
  const __m256 z = _mm256_mul_ps(x, x);
  __m256 y = _mm256_set1_ps(1.9875691500E-4f);
  y = _mm256_fmadd_ps(y, x, _mm256_set1_ps(1.3981999507E-3f));
  y = _mm256_fmadd_ps(y, x, _mm256_set1_ps(8.3334519073E-3f));
  y = _mm256_fmadd_ps(y, x, _mm256_set1_ps(4.1665795894E-2f));
  y = _mm256_fmadd_ps(y, x, _mm256_set1_ps(1.6666665459E-1f));
  y = _mm256_fmadd_ps(y, x, _mm256_set1_ps(5.0000001201E-1f));
  y = _mm256_add_ps(_mm256_fmadd_ps(y, z, x), _mm256_set1_ps(1.0f));
  const __m256i e = _mm256_add_epi32(_mm256_cvtps_epi32(fx), _mm256_set1_epi32(127));  // fx in [-126, 127]
  const __m256 r = _mm256_andnot_ps(under, _mm256_mul_ps(y, _mm256_castsi256_ps(_mm256_slli_epi32(e, 23))));
  return _mm256_or_ps(r, _mm256_cmp_ps(in, in, _CMP_UNORD_Q));  // NaN stays NaN, as Eigen's exp
}

// the AVX2 vector of T: its width and the operations the loops need
template <class T>
struct V;
template <>
struct V<double> {
  using R = __m256d;
  static constexpr int w = 4;
  AVX2 static R load(const double* p) { return _mm256_loadu_pd(p); }
  AVX2 static void store(double* p, R x) { _mm256_storeu_pd(p, x); }
  AVX2 static R set(double c) { return _mm256_set1_pd(c); }
  AVX2 static R max(R a, R b) { return _mm256_max_pd(a, b); }
  AVX2 static R add(R a, R b) { return _mm256_add_pd(a, b); }
  AVX2 static R sub(R a, R b) { return _mm256_sub_pd(a, b); }
  AVX2 static R mul(R a, R b) { return _mm256_mul_pd(a, b); }
  AVX2 static R exp(R x) { return exp4(x); }
};
template <>
struct V<float> {
  using R = __m256;
  static constexpr int w = 8;
  AVX2 static R load(const float* p) { return _mm256_loadu_ps(p); }
  AVX2 static void store(float* p, R x) { _mm256_storeu_ps(p, x); }
  AVX2 static R set(float c) { return _mm256_set1_ps(c); }
  AVX2 static R max(R a, R b) { return _mm256_max_ps(a, b); }
  AVX2 static R add(R a, R b) { return _mm256_add_ps(a, b); }
  AVX2 static R sub(R a, R b) { return _mm256_sub_ps(a, b); }
  AVX2 static R mul(R a, R b) { return _mm256_mul_ps(a, b); }
  AVX2 static R exp(R x) { return exp8(x); }
};

// the lanes of a vector, for the horizontal reductions and the row's tail
template <class T>
struct alignas(32) Lanes {
  T v[V<T>::w];
};

template <class T>
AVX2 T max_avx2(const T* x, std::int64_t n) {
  using X = V<T>;
  T m = -std::numeric_limits<T>::infinity();
  std::int64_t j = 0;
  if (n >= X::w) {
    typename X::R acc = X::load(x);
    for (j = X::w; j + X::w <= n; j += X::w) acc = X::max(acc, X::load(x + j));
    Lanes<T> l;
    X::store(l.v, acc);
    for (T e : l.v) m = std::max(m, e);
  }
  for (; j < n; ++j) m = std::max(m, x[j]);
  return m;
}

// x[j] = exp(x[j] - c) for j < n, and their sum; the tail goes through one vector padded with -inf
// (exp: 0)
template <class T>
AVX2 T exp_avx2(T* x, std::int64_t n, T c) {
  using X = V<T>;
  const typename X::R vc = X::set(c);
  typename X::R acc = X::set(T(0));
  std::int64_t j = 0;
  for (; j + X::w <= n; j += X::w) {
    const typename X::R e = X::exp(X::sub(X::load(x + j), vc));
    X::store(x + j, e);
    acc = X::add(acc, e);
  }
  if (j < n) {
    Lanes<T> t;
    std::fill(t.v, t.v + X::w, -std::numeric_limits<T>::infinity());
    std::copy(x + j, x + n, t.v);
    const typename X::R e = X::exp(X::sub(X::load(t.v), vc));
    X::store(t.v, e);
    std::copy(t.v, t.v + (n - j), x + j);
    acc = X::add(acc, e);
  }
  Lanes<T> l;
  X::store(l.v, acc);
  T s = 0;
  for (T e : l.v) s += e;
  return s;
}

template <class T>
AVX2 void grad_avx2(T* ds, const T* p, std::int64_t n, T delta) {
  using X = V<T>;
  const typename X::R vd = X::set(delta);
  std::int64_t j = 0;
  for (; j + X::w <= n; j += X::w) X::store(ds + j, X::mul(X::load(p + j), X::sub(X::load(ds + j), vd)));
  for (; j < n; ++j) ds[j] = p[j] * (ds[j] - delta);
}

#undef AVX2
#endif

template <class T>
struct Kernels {
  T (*max)(const T*, std::int64_t);
  T (*exp_sum)(T*, std::int64_t, T);
  void (*grad)(T*, const T*, std::int64_t, T);
};

template <class T>
const Kernels<T>& kernels(Route route) {
  static const Kernels<T> generic{max_generic<T>, exp_sum_generic<T>, grad_generic<T>};
#ifdef CPLAB_X86
  static const bool avx2 = cpu_has_avx2_fma();
  static const Kernels<T> wide{max_avx2<T>, exp_avx2<T>, grad_avx2<T>};
  if (route == Route::fast && avx2) return wide;
#else
  (void)route;
#endif
  return generic;
}

}  // namespace

template <class T>
T row_max(Route route, const T* x, std::int64_t n) {
  return kernels<T>(route).max(x, n);
}
template <class T>
T exp_shift_sum(Route route, T* x, std::int64_t n, T c) {
  return kernels<T>(route).exp_sum(x, n, c);
}
template <class T>
void exp_shift(Route route, T* x, std::int64_t n, T c) {
  kernels<T>(route).exp_sum(x, n, c);  // the same values; the sum (one vector add) unused
}
template <class T>
void grad_scores(Route route, T* ds, const T* p, std::int64_t n, T delta) {
  kernels<T>(route).grad(ds, p, n, delta);
}

const char* row_kernels_isa() {
  static const std::string isa = cpu_has_avx2_fma() ? std::string("avx2+fma")
                                                     : std::string("generic (") + Eigen::SimdInstructionSetsInUse() + ")";
  return isa.c_str();
}

#define CPLAB_INSTANTIATE(T)                                      \
  template T row_max<T>(Route, const T*, std::int64_t);          \
  template T exp_shift_sum<T>(Route, T*, std::int64_t, T);       \
  template void exp_shift<T>(Route, T*, std::int64_t, T);        \
  template void grad_scores<T>(Route, T*, const T*, std::int64_t, T);
CPLAB_INSTANTIATE(float)
CPLAB_INSTANTIATE(double)
#undef CPLAB_INSTANTIATE

}  // namespace cplab
