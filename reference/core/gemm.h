// gemm.h: the one matrix product the CPU attention kernel calls, routed to the fastest library built in.
//
// What it is: gemm<T>(route, ta, tb, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc), row-major BLAS semantics
//   C (m, n) = alpha * op(A) op(B) + beta * C,   op(A) (m, k), op(B) (k, n), op(X) = X or X^T
// with leading dimensions (row strides) lda, ldb, ldc, so one head of a token-major (n, h, d) tensor
// is passed as its pointer and row stride h*d, no copy. beta = 0 overwrites C (NaN in C is ignored).
// Where it goes (route: kernel_route.h):
//   - Route::fast: OpenBLAS (cblas_dgemm / cblas_sgemm) when the build found it (CPLAB_HAVE_OPENBLAS): Debian's
//     OpenBLAS picks its kernels for the CPU at run time, so the binary stays machine-independent
//     (where it does not know the CPU, prepare_runtime in core/runtime_env.h asks for the right ones).
//     The OpenMP build of OpenBLAS (libopenblas-openmp-dev, scripts/install-deps.sh) runs one thread
//     when called inside an OpenMP parallel region (the kernel's loop over heads): one level of
//     threads, never OpenBLAS threads inside OpenMP threads. Called outside a region it uses the
//     OpenMP thread count (omp_set_num_threads), which is how the benchmark measures 1- and 2-thread peaks.
//   - Route::portable, or a build without OpenBLAS: Eigen's product on Maps of the same memory (the
//     build's instruction set; the same bits on every machine).
// gemm_backend() names the route, the library's version and the kernels it chose ("OpenBLAS 0.3.21
// ... core Zen", with a note when cplab chose them), for benchmarks and `cplab run` to print.
// What it is not: a batched or mixed-precision GEMM; no shape checks beyond what BLAS itself needs
// (the callers pass shapes they computed).
#pragma once

#include <string>

#include "core/kernel_route.h"
#include "core/tensor.h"

namespace cplab {

enum class Trans : bool { no = false, yes = true };

template <class T>
void gemm(Route route, Trans ta, Trans tb, index_t m, index_t n, index_t k, T alpha, const T* a, index_t lda,
          const T* b, index_t ldb, T beta, T* c, index_t ldc);

// the fast route's library: "OpenBLAS (<config>), core <name>, <openmp|pthreads|serial>", or
// "Eigen <version> (<SIMD>)" in a build without OpenBLAS
std::string gemm_backend();

}  // namespace cplab
