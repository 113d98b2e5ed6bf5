// row_kernels.h: the element-wise softmax and gradient work of the CPU attention kernel, on one row
// of a score block at a time, vectorised for the CPU it runs on.
//
// What it is: four loops over a contiguous run x[0, n) of one row (n >= 0):
//   row_max(x, n)                 max_j x[j]  (-inf when n = 0)
//   exp_shift_sum(x, n, c)        x[j] = exp(x[j] - c) in place, returns sum_j x[j]   (forward P, l)
//   exp_shift(x, n, c)            x[j] = exp(x[j] - c) in place                       (backward P)
//   grad_scores(ds, p, n, delta)  ds[j] = p[j] * (ds[j] - delta) in place              (dS from dP)
// Inputs are finite and x[j] - c <= about 0 (c is the row's max or its LSE). exp is the Cephes
// rational approximation Eigen uses (within about 1 ulp); a result below the smallest normal number
// (x - c < -708.39 in double, < -87.33 in float) is 0, which changes a sum by less than that number;
// a NaN (inf - inf: scores that overflowed) stays NaN, so such a row ends with l = NaN, as before.
// Dispatch (route: kernel_route.h): Route::fast runs AVX2 + FMA code (intrinsics in functions compiled
// for that target only, so the build stays machine-independent) where the CPU has them (checked
// once); Route::portable, or a CPU without them, runs Eigen's arrays at the build's own instruction
// set. row_kernels_isa() names what the fast route runs here.
// What it is not: the masking (the caller passes each row's visible run) or the GEMMs (gemm.h).
#pragma once

#include <cstdint>

#include "core/kernel_route.h"

namespace cplab {

template <class T>
T row_max(Route route, const T* x, std::int64_t n);
template <class T>
T exp_shift_sum(Route route, T* x, std::int64_t n, T c);
template <class T>
void exp_shift(Route route, T* x, std::int64_t n, T c);
template <class T>
void grad_scores(Route route, T* ds, const T* p, std::int64_t n, T delta);

// the fast route's loops here: "avx2+fma" or "generic (<Eigen's SIMD>)"
const char* row_kernels_isa();

}  // namespace cplab
