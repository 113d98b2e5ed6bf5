// gemm.cpp: gemm<T> and gemm_backend (see gemm.h): OpenBLAS's cblas when built with it, else Eigen.
#include "core/gemm.h"

#include "core/runtime_env.h"

#ifdef CPLAB_HAVE_OPENBLAS
#include <cblas.h>
#endif

namespace cplab {

namespace {

template <class T>
using Strided = Eigen::Map<const Mat<T>, 0, Eigen::OuterStride<>>;

// op(X) of a row-major (rows, cols) matrix stored with row stride ld
template <class T>
Strided<T> stored(const T* x, index_t rows, index_t cols, index_t ld) {
  return Strided<T>(x, rows, cols, Eigen::OuterStride<>(ld));
}

}  // namespace

template <class T>
void gemm(Route route, Trans ta, Trans tb, index_t m, index_t n, index_t k, T alpha, const T* a, index_t lda,
          const T* b, index_t ldb, T beta, T* c, index_t ldc) {
  if (m <= 0 || n <= 0) return;
#ifdef CPLAB_HAVE_OPENBLAS
  if (route == Route::fast) {
    // a pthreads OpenBLAS (not what install-deps.sh installs) would start its own threads inside
    // the kernel's OpenMP threads: keep it to one
    static const bool one_level = [] {
      if (openblas_get_parallel() == 1) openblas_set_num_threads(1);
      return true;
    }();
    (void)one_level;
    const auto op = [](Trans t) { return t == Trans::yes ? CblasTrans : CblasNoTrans; };
    const auto i = [](index_t x) { return static_cast<blasint>(x); };
    if constexpr (std::is_same_v<T, double>)
      cblas_dgemm(CblasRowMajor, op(ta), op(tb), i(m), i(n), i(k), alpha, a, i(lda), b, i(ldb), beta, c, i(ldc));
    else
      cblas_sgemm(CblasRowMajor, op(ta), op(tb), i(m), i(n), i(k), alpha, a, i(lda), b, i(ldb), beta, c, i(ldc));
    return;
  }
#else
  (void)route;
#endif
  Eigen::Map<Mat<T>, 0, Eigen::OuterStride<>> C(c, m, n, Eigen::OuterStride<>(ldc));
  if (beta == T(0)) C.setZero();
  else if (beta != T(1)) C *= beta;
  if (k <= 0) return;
  const bool at = ta == Trans::yes, bt = tb == Trans::yes;
  const auto A = stored(a, at ? k : m, at ? m : k, lda);
  const auto B = stored(b, bt ? n : k, bt ? k : n, ldb);
  if (!at && !bt) C.noalias() += alpha * (A * B);
  else if (!at && bt) C.noalias() += alpha * (A * B.transpose());
  else if (at && !bt) C.noalias() += alpha * (A.transpose() * B);
  else C.noalias() += alpha * (A.transpose() * B.transpose());
}

std::string gemm_backend() {
#ifdef CPLAB_HAVE_OPENBLAS
  const int par = openblas_get_parallel();
  const std::string note = blas_core_note();
  return std::string("OpenBLAS (") + openblas_get_config() + "), core " + openblas_get_corename() +
         (note.empty() ? "" : " " + note) + ", " + (par == 2 ? "openmp" : par == 1 ? "pthreads" : "serial");
#else
  return "Eigen " + std::to_string(EIGEN_WORLD_VERSION) + "." + std::to_string(EIGEN_MAJOR_VERSION) + "." +
         std::to_string(EIGEN_MINOR_VERSION) + " (" + Eigen::SimdInstructionSetsInUse() + ")";
#endif
}

template void gemm<float>(Route, Trans, Trans, index_t, index_t, index_t, float, const float*, index_t, const float*,
                          index_t, float, float*, index_t);
template void gemm<double>(Route, Trans, Trans, index_t, index_t, index_t, double, const double*, index_t, const double*,
                           index_t, double, double*, index_t);

}  // namespace cplab
