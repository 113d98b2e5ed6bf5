// rel_error.h: THE error metric of cplab, max|x - ref| / max|ref|, defined once.
//
// What it is: the number every check reports (cplab run, the tests, cplab-bench, the GPU tests),
// with one convention for the cases a plain formula gets wrong:
//   - an element where x and ref are both -inf (a row that sees no key has LSE = -inf on both
//     sides) is equal: it counts in neither maximum;
//   - any other infinity, +inf on both sides included (nothing cplab computes is legitimately
//     +inf: it is an overflow, never a match), and any NaN on either side, makes the error +inf
//     (a failure). run_experiment refuses a dense reference that overflows before comparing
//     (run/overflow.h), so an overflow is an error message, never "error 0";
//   - when max|ref| = 0 (nothing but zeros, or nothing finite, to compare with) the error is the
//     absolute max|x - ref|. A caller that must not pass on an all-zero reference (a sampled
//     check) tests RelError::scale itself.
// RelError accumulates over several arrays (a check over sampled rows adds them one by one);
// rel_error() is the one-shot form (pointers, or whole Tensor3 / Rows of the same size).
// What it is not: a tolerance (those are per dtype and per tensor: docs/numerics.md, cuda/README.md).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <limits>

#include "core/tensor.h"

namespace cplab {

struct RelError {
  double diff = 0;         // max |x - ref| over the elements compared
  double scale = 0;        // max |ref| over the same elements
  bool failed = false;     // a NaN, a +inf, or a -inf not matched by -inf

  template <class A, class B>
  void add(const A* x, const B* ref, std::size_t n) {
    for (std::size_t i = 0; i < n; ++i) {
      const double a = static_cast<double>(x[i]), b = static_cast<double>(ref[i]);
      if (std::isnan(a) || std::isnan(b)) {
        failed = true;
      } else if (std::isinf(a) || std::isinf(b)) {
        failed = failed || a != b || a > 0;  // only -inf matching -inf is equal
      } else {
        diff = std::max(diff, std::abs(a - b));
        scale = std::max(scale, std::abs(b));
      }
    }
  }
  double value() const {
    if (failed) return std::numeric_limits<double>::infinity();
    return scale > 0 ? diff / scale : diff;
  }
};

template <class A, class B>
double rel_error(const A* x, const B* ref, std::size_t n) {
  RelError e;
  e.add(x, ref, n);
  return e.value();
}

// whole tensors (x and ref of different sizes: +inf, a failure)
template <class A, class B>
double rel_error(const Tensor3<A>& x, const Tensor3<B>& ref) {
  if (x.data.size() != ref.data.size()) return std::numeric_limits<double>::infinity();
  return rel_error(x.data.data(), ref.data.data(), x.data.size());
}
template <class A, class B>
double rel_error(const Rows<A>& x, const Rows<B>& ref) {
  if (x.size() != ref.size()) return std::numeric_limits<double>::infinity();
  return rel_error(x.data(), ref.data(), static_cast<std::size_t>(x.size()));
}

}  // namespace cplab
