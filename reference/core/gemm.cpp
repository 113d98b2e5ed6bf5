// gemm.cpp: gemm<T> and gemm_backend (see gemm.h): OpenBLAS's cblas when built with it, else Eigen.
#include "core/gemm.h"

#ifdef CPLAB_HAVE_OPENBLAS
#include <cblas.h>
#endif

namespace cplab {

namespace {

#ifndef CPLAB_HAVE_OPENBLAS
template <class T>
using Strided = Eigen::Map<const Mat<T>, 0, Eigen::OuterStride<>>;

// op(X) of a row-major (rows, cols) matrix stored with row stride ld
template <class T>
Strided<T> stored(const T* x, index_t rows, index_t cols, index_t ld) {
  return Strided<T>(x, rows, cols, Eigen::OuterStride<>(ld));
}
#endif

}  // namespace

template <class T>
void gemm(Trans ta, Trans tb, index_t m, index_t n, index_t k, T alpha, const T* a, index_t lda,
          const T* b, index_t ldb, T beta, T* c, index_t ldc) {
  if (m <= 0 || n <= 0) return;
#ifdef CPLAB_HAVE_OPENBLAS
  const auto op = [](Trans t) { return t == Trans::yes ? CblasTrans : CblasNoTrans; };
  if constexpr (std::is_same_v<T, double>)
    cblas_dgemm(CblasRowMajor, op(ta), op(tb), static_cast<blasint>(m), static_cast<blasint>(n),
                static_cast<blasint>(k), alpha, a, static_cast<blasint>(lda), b, static_cast<blasint>(ldb), beta, c,
                static_cast<blasint>(ldc));
  else
    cblas_sgemm(CblasRowMajor, op(ta), op(tb), static_cast<blasint>(m), static_cast<blasint>(n),
                static_cast<blasint>(k), alpha, a, static_cast<blasint>(lda), b, static_cast<blasint>(ldb), beta, c,
                static_cast<blasint>(ldc));
#else
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
#endif
}

std::string gemm_backend() {
#ifdef CPLAB_HAVE_OPENBLAS
  const int par = openblas_get_parallel();
  return std::string("OpenBLAS (") + openblas_get_config() + "), core " + openblas_get_corename() + ", " +
         (par == 2 ? "openmp" : par == 1 ? "pthreads" : "serial");
#else
  return "Eigen " + std::to_string(EIGEN_WORLD_VERSION) + "." + std::to_string(EIGEN_MAJOR_VERSION) + "." +
         std::to_string(EIGEN_MINOR_VERSION) + " (" + Eigen::SimdInstructionSetsInUse() + ")";
#endif
}

bool gemm_threads_follow_openmp() {
#ifdef CPLAB_HAVE_OPENBLAS
  return openblas_get_parallel() == 2;
#else
  return false;
#endif
}

template void gemm<float>(Trans, Trans, index_t, index_t, index_t, float, const float*, index_t, const float*,
                          index_t, float, float*, index_t);
template void gemm<double>(Trans, Trans, index_t, index_t, index_t, double, const double*, index_t, const double*,
                           index_t, double, double*, index_t);

}  // namespace cplab
