// tensor.h: the tensors the reference passes around, and Eigen views of one head.
//
// What it is: Tensor3<T>, an (n, h, d) row-major array ("thd" with batch 1: token-major, then head,
// then head dim) that owns its elements, or borrows read-only ones (Tensor3::borrow: the caller
// keeps that memory alive while the tensor and its copies live; the first non-const access copies
// it, core/buffer.h), View3<T> / CView3<T> non-owning views of a run of its tokens, and
// head(view, i) which gives the (n, d) Eigen matrix of head i with row stride h*d.
// LSE-like per-(head, token) values are Rows<T> = Eigen row-major (h, n) arrays, TE's packed [h, t].
// What it is not: a general tensor library. No broadcasting, no batch dimension, no strides other
// than the one a contiguous token range needs.
#pragma once

#include <Eigen/Dense>
#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "core/alloc.h"
#include "core/buffer.h"

namespace cplab {

using index_t = std::int64_t;

template <class T>
using Mat = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
template <class T>
using Rows = Eigen::Array<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;  // (h, n)
template <class T>
using HeadMap = Eigen::Map<Mat<T>, 0, Eigen::OuterStride<>>;
template <class T>
using CHeadMap = Eigen::Map<const Mat<T>, 0, Eigen::OuterStride<>>;

// Non-owning view of n consecutive tokens of an (N, h, d) tensor.
template <class T>
struct View3 {
  T* data = nullptr;
  index_t n = 0, h = 0, d = 0;
  View3 rows(index_t begin, index_t count) const { return View3{data + begin * h * d, count, h, d}; }
};
template <class T>
struct CView3 {
  const T* data = nullptr;
  index_t n = 0, h = 0, d = 0;
  CView3() = default;
  CView3(const T* p, index_t n_, index_t h_, index_t d_) : data(p), n(n_), h(h_), d(d_) {}
  CView3(View3<T> v) : data(v.data), n(v.n), h(v.h), d(v.d) {}  // NOLINT: implicit by design
  CView3 rows(index_t begin, index_t count) const { return CView3{data + begin * h * d, count, h, d}; }
};

// (n, d) matrix of head i, rows strided by h*d
template <class T>
HeadMap<T> head(View3<T> v, index_t i) {
  return HeadMap<T>(v.data + i * v.d, v.n, v.d, Eigen::OuterStride<>(v.h * v.d));
}
template <class T>
CHeadMap<T> head(CView3<T> v, index_t i) {
  return CHeadMap<T>(v.data + i * v.d, v.n, v.d, Eigen::OuterStride<>(v.h * v.d));
}

// (n, h, d) tensor: owning and zero-initialised (its allocation fails with a message, core/alloc.h),
// or borrowing (borrow()).
template <class T>
struct Tensor3 {
  index_t n = 0, h = 0, d = 0;
  Buffer<T> data;  // n*h*d elements; core/buffer.h: owned, or borrowed and copied on first write
  Tensor3() = default;
  // a failed allocation is cplab::Error "out of memory allocating N GiB for an (n, h, d) tensor"
  Tensor3(index_t n_, index_t h_, index_t d_)
      : n(n_), h(h_), d(d_), data(alloc_vector<T>(tensor_numel(n_, h_, d_), [&] { return describe(); })) {}
  // p: (n, h, d) row-major, read without a copy; the caller keeps it alive and unchanged while the
  // tensor and its copies live. Any non-const access copies it first (nothing writes into p).
  static Tensor3 borrow(const T* p, index_t n_, index_t h_, index_t d_) {
    const size_t numel = tensor_numel(n_, h_, d_);
    Tensor3 x;
    x.n = n_, x.h = h_, x.d = d_;
    if (p == nullptr && numel > 0) throw Error("borrowing " + x.describe() + ": the data pointer is null");
    x.data = Buffer<T>::borrow(p, numel);
    return x;
  }
  bool borrowed() const { return data.borrowed(); }
  index_t numel() const { return n * h * d; }
  T& at(index_t t, index_t hh, index_t dd) { return data[static_cast<size_t>((t * h + hh) * d + dd)]; }
  const T& at(index_t t, index_t hh, index_t dd) const {
    return data[static_cast<size_t>((t * h + hh) * d + dd)];
  }
  T* token(index_t t) { return data.data() + t * h * d; }
  const T* token(index_t t) const { return data.data() + t * h * d; }
  View3<T> view() { return View3<T>{data.data(), n, h, d}; }
  CView3<T> view() const { return CView3<T>{data.data(), n, h, d}; }
  CView3<T> cview() const { return view(); }
  std::string describe() const {
    return "an (" + std::to_string(n) + ", " + std::to_string(h) + ", " + std::to_string(d) + ") tensor";
  }

 private:
  static size_t tensor_numel(index_t a, index_t b, index_t c) {
    size_t ab = 0, abc = 0;
    if (a < 0 || b < 0 || c < 0 || __builtin_mul_overflow(static_cast<size_t>(a), static_cast<size_t>(b), &ab) ||
        __builtin_mul_overflow(ab, static_cast<size_t>(c), &abc))
      throw Error("a tensor of shape (" + std::to_string(a) + ", " + std::to_string(b) + ", " + std::to_string(c) +
                  ") has a negative dimension or too many elements");
    return abc;
  }
};

// element-wise cast (e.g. the double inputs of a run to float)
template <class To, class From>
Tensor3<To> cast(const Tensor3<From>& x) {
  Tensor3<To> y(x.n, x.h, x.d);
  for (size_t i = 0; i < x.data.size(); ++i) y.data[i] = static_cast<To>(x.data[i]);
  return y;
}
template <class To, class From>
Rows<To> cast(const Rows<From>& x) {
  return x.template cast<To>();
}

// heads [h0, h0 + count) of x, as a new (n, count, d) tensor
template <class T>
Tensor3<T> slice_heads(const Tensor3<T>& x, index_t h0, index_t count) {
  Tensor3<T> y(x.n, count, x.d);
  for (index_t t = 0; t < x.n; ++t)
    std::copy(x.token(t) + h0 * x.d, x.token(t) + (h0 + count) * x.d, y.token(t));
  return y;
}
// write y (n, count, d) into heads [h0, h0 + count) of x (n, h, d)
template <class T>
void place_heads(Tensor3<T>& x, index_t h0, const Tensor3<T>& y) {
  for (index_t t = 0; t < x.n; ++t) std::copy(y.token(t), y.token(t) + y.h * y.d, x.token(t) + h0 * x.d);
}
// each head repeated f times in place: (n, h, d) -> (n, h*f, d), head i -> heads [i*f, (i+1)*f)
template <class T>
Tensor3<T> repeat_heads(const Tensor3<T>& x, index_t f) {
  Tensor3<T> y(x.n, x.h * f, x.d);
  for (index_t t = 0; t < x.n; ++t)
    for (index_t i = 0; i < x.h * f; ++i) std::copy(x.token(t) + (i / f) * x.d, x.token(t) + (i / f + 1) * x.d, y.token(t) + i * x.d);
  return y;
}
// the adjoint of repeat_heads: (n, h*f, d) -> (n, h, d), summing each head's f copies
template <class T>
Tensor3<T> sum_repeated_heads(const Tensor3<T>& y, index_t f) {
  Tensor3<T> x(y.n, y.h / f, y.d);
  for (index_t t = 0; t < y.n; ++t)
    for (index_t i = 0; i < y.h; ++i)
      for (index_t e = 0; e < y.d; ++e) x.at(t, i / f, e) += y.at(t, i, e);
  return x;
}

}  // namespace cplab
