// attention_kernel.cpp: Eigen implementation of attention_kernel.h (see there for the math).
//
// Per head and per block of kRowBlock query rows: [lo, hi) = the key columns any row of the block
// can see (every row's visible keys are one run, mask.h), S = scale * Q_blk K[lo:hi]^T as one Eigen
// product, masked entries set to -inf, then the softmax / gradient algebra on whole matrices.
#include "core/attention_kernel.h"

#include <cmath>
#include <exception>
#include <limits>
#include <string>

#include "core/error.h"

namespace cplab {

namespace {

template <class T>
constexpr T kNegInf = -std::numeric_limits<T>::infinity();

// OpenMP loop over [0, n) that carries the first exception (e.g. std::bad_alloc) out of the
// parallel region and rethrows it, instead of std::terminate
template <class F>
void parallel_for(index_t n, F&& body) {
  std::exception_ptr err;
#pragma omp parallel for schedule(dynamic)
  for (index_t i = 0; i < n; ++i) {
    try {
      body(i);
    } catch (...) {
#pragma omp critical(cplab_parallel_for)
      if (!err) err = std::current_exception();
    }
  }
  if (err) std::rethrow_exception(err);
}

// the key columns [lo, hi) that some row of block [a0, a0+n) can see (hi = 0: none)
KeyRange block_keys(const Mask& m, index_t a0, index_t n, index_t sk) {
  KeyRange b{sk, 0};
  for (index_t a = a0; a < a0 + n; ++a) {
    const KeyRange r = m.keys(a, sk);
    if (r.lo >= r.hi) continue;
    b.lo = std::min(b.lo, r.lo);
    b.hi = std::max(b.hi, r.hi);
  }
  if (b.hi == 0) b.lo = 0;
  return b;
}

// set the entries of S (rows a0.., columns kb.lo..) outside each row's visible run to `value`
template <class T>
void fill_masked(Mat<T>& S, const Mask& m, index_t a0, KeyRange kb, index_t sk, T value) {
  if (m.kind == Mask::Kind::none) return;
  for (index_t a = 0; a < S.rows(); ++a) {
    KeyRange r = m.keys(a0 + a, sk);
    if (r.lo >= r.hi) r = {kb.lo, kb.lo};  // nothing visible
    if (r.lo > kb.lo) S.row(a).head(r.lo - kb.lo).setConstant(value);
    if (r.hi < kb.hi) S.row(a).tail(kb.hi - r.hi).setConstant(value);
  }
}

// S (n, kb.hi - kb.lo) = scale * Qblk K[kb]^T with entries outside each row's visible run set to -inf
template <class T>
Mat<T> masked_scores(const CHeadMap<T>& Qh, const CHeadMap<T>& Kh, const Mask& m, T scale,
                     index_t a0, index_t n, KeyRange kb, index_t sk) {
  const index_t w = kb.hi - kb.lo;
  Mat<T> S = scale * (Qh.middleRows(a0, n) * Kh.middleRows(kb.lo, w).transpose());
  fill_masked<T>(S, m, a0, kb, sk, kNegInf<T>);
  return S;
}

}  // namespace

void check_attention_shapes(index_t sq, index_t h, index_t d, index_t sk, index_t hk, index_t dk,
                            index_t skv, index_t hkv, index_t dv) {
  require(h >= 1, "heads " + std::to_string(h) + " must be >= 1");
  require(hk >= 1, "kv-heads " + std::to_string(hk) + " must be >= 1");
  require(h % hk == 0, "kv-heads " + std::to_string(hk) + " does not divide heads " +
                           std::to_string(h) + " (GQA/MQA needs heads = kv-heads * group size)");
  require(d >= 1, "head-dim " + std::to_string(d) + " must be >= 1");
  require(dv >= 1, "v head-dim " + std::to_string(dv) + " must be >= 1");
  require(d == dk, "Q head-dim " + std::to_string(d) + " differs from K head-dim " + std::to_string(dk));
  require(sk == skv, "K has " + std::to_string(sk) + " tokens but V has " + std::to_string(skv));
  require(hk == hkv, "K has " + std::to_string(hk) + " heads but V has " + std::to_string(hkv));
  require(sq >= 0 && sk >= 0, "token counts must be >= 0");
}

template <class T>
void attention_forward(CView3<T> q, CView3<T> k, CView3<T> v, const Mask& mask, T scale,
                       View3<T> o, RowsView<T> lse, const T* sinks) {
  check_attention_shapes(q.n, q.h, q.d, k.n, k.h, k.d, v.n, v.h, v.d);
  require(o.n == q.n && o.h == q.h && o.d == v.d, "O must be (sq, h, dv)");
  require(lse.h == q.h && lse.n == q.n, "LSE must be (h, sq)");
  const index_t sq = q.n, sk = k.n, group = q.h / k.h;

  parallel_for(q.h, [&](index_t i) {
    const CHeadMap<T> Qh = head(q, i), Kh = head(k, i / group), Vh = head(v, i / group);
    HeadMap<T> Oh = head(o, i);
    for (index_t a0 = 0; a0 < sq; a0 += kRowBlock) {
      const index_t n = std::min(kRowBlock, sq - a0);
      const KeyRange kb = block_keys(mask, a0, n, sk);
      if (kb.hi <= kb.lo) {  // the whole block is masked
        Oh.middleRows(a0, n).setZero();
        for (index_t a = 0; a < n; ++a) lse(i, a0 + a) = kNegInf<T>;
        continue;
      }
      Mat<T> S = masked_scores<T>(Qh, Kh, mask, scale, a0, n, kb, sk);
      Eigen::Matrix<T, Eigen::Dynamic, 1> m = S.rowwise().maxCoeff();
      for (index_t a = 0; a < n; ++a) {
        if (m(a) == kNegInf<T>) {  // fully masked row: P = 0 (not exp(-inf - -inf) = NaN)
          S.row(a).setZero();
        } else {
          if (sinks) m(a) = std::max(m(a), sinks[i]);  // the sink's logit is one more in the row
          S.row(a) = (S.row(a).array() - m(a)).exp().matrix();
        }
      }
      // Eigen's vectorised exp clamps its argument, so exp(-inf) comes out as ~1e-308, not 0:
      // masked entries are set to exactly 0 (padding and masked keys contribute nothing at all)
      fill_masked<T>(S, mask, a0, kb, sk, T(0));
      Eigen::Matrix<T, Eigen::Dynamic, 1> l = S.rowwise().sum();
      if (sinks)  // exp(s_h) joins the denominator of every row that sees a key; its value row is 0
        for (index_t a = 0; a < n; ++a)
          if (m(a) != kNegInf<T>) l(a) += std::exp(sinks[i] - m(a));
      Oh.middleRows(a0, n).noalias() = S * Vh.middleRows(kb.lo, kb.hi - kb.lo);
      for (index_t a = 0; a < n; ++a) {
        if (l(a) > T(0)) {
          Oh.row(a0 + a) /= l(a);
          lse(i, a0 + a) = m(a) + std::log(l(a));
        } else {
          Oh.row(a0 + a).setZero();
          lse(i, a0 + a) = kNegInf<T>;
        }
      }
    }
  });
}

template <class T>
Rows<T> softmax_delta(CView3<T> o, CView3<T> dout) {
  require(o.n == dout.n && o.h == dout.h && o.d == dout.d, "O and dO must have the same shape");
  Rows<T> delta(o.h, o.n);
  for (index_t i = 0; i < o.h; ++i)
    delta.row(i) = (head(o, i).array() * head(dout, i).array()).rowwise().sum().transpose();
  return delta;
}

template <class T>
void attention_backward(CView3<T> q, CView3<T> k, CView3<T> v, CView3<T> dout,
                        RowsView<const T> lse, RowsView<const T> delta, const Mask& mask,
                        T scale, View3<T> dq, View3<T> dk, View3<T> dv) {
  check_attention_shapes(q.n, q.h, q.d, k.n, k.h, k.d, v.n, v.h, v.d);
  require(dout.n == q.n && dout.h == q.h && dout.d == v.d, "dO must be (sq, h, dv)");
  require(lse.h == q.h && lse.n == q.n && delta.h == q.h && delta.n == q.n,
          "LSE and Delta must be (h, sq)");
  require(dq.n == q.n && dq.h == q.h && dq.d == q.d, "dQ must be (sq, h, d)");
  require(dk.n == k.n && dk.h == k.h && dk.d == k.d, "dK must be (sk, hk, d)");
  require(dv.n == v.n && dv.h == v.h && dv.d == v.d, "dV must be (sk, hk, dv)");
  const index_t sq = q.n, sk = k.n, group = q.h / k.h;

  // parallel over KV heads: each thread owns dK/dV of its KV head and dQ of that head's group
  parallel_for(k.h, [&](index_t g) {
    const CHeadMap<T> Kh = head(k, g), Vh = head(v, g);
    HeadMap<T> dKh = head(dk, g), dVh = head(dv, g);
    for (index_t i = g * group; i < (g + 1) * group; ++i) {
      const CHeadMap<T> Qh = head(q, i), dOh = head(dout, i);
      HeadMap<T> dQh = head(dq, i);
      for (index_t a0 = 0; a0 < sq; a0 += kRowBlock) {
        const index_t n = std::min(kRowBlock, sq - a0);
        const KeyRange kb = block_keys(mask, a0, n, sk);
        if (kb.hi <= kb.lo) continue;  // fully masked block: no gradient at all
        const index_t w = kb.hi - kb.lo;
        Mat<T> P = masked_scores<T>(Qh, Kh, mask, scale, a0, n, kb, sk);
        for (index_t a = 0; a < n; ++a) {
          const T L = lse(i, a0 + a);
          if (L == kNegInf<T>) P.row(a).setZero();  // empty row: P = 0, never exp(-inf + inf)
          else P.row(a) = (P.row(a).array() - L).exp().matrix();
        }
        fill_masked<T>(P, mask, a0, kb, sk, T(0));  // exactly 0, not Eigen's clamped exp(-inf)
        const auto dO_blk = dOh.middleRows(a0, n);
        dVh.middleRows(kb.lo, w).noalias() += P.transpose() * dO_blk;
        Mat<T> dS = dO_blk * Vh.middleRows(kb.lo, w).transpose();  // dP
        for (index_t a = 0; a < n; ++a) dS.row(a).array() -= delta(i, a0 + a);
        dS.array() *= P.array();  // dS = P * (dP - Delta)
        dQh.middleRows(a0, n).noalias() += scale * (dS * Kh.middleRows(kb.lo, w));
        dKh.middleRows(kb.lo, w).noalias() += scale * (dS.transpose() * Qh.middleRows(a0, n));
      }
    }
  });
}

#define CPLAB_INSTANTIATE(T)                                                                     \
  template void attention_forward<T>(CView3<T>, CView3<T>, CView3<T>, const Mask&, T, View3<T>,  \
                                     RowsView<T>, const T*);                                     \
  template Rows<T> softmax_delta<T>(CView3<T>, CView3<T>);                                       \
  template void attention_backward<T>(CView3<T>, CView3<T>, CView3<T>, CView3<T>,                \
                                      RowsView<const T>, RowsView<const T>, const Mask&, T,      \
                                      View3<T>, View3<T>, View3<T>);
CPLAB_INSTANTIATE(float)
CPLAB_INSTANTIATE(double)
#undef CPLAB_INSTANTIATE

}  // namespace cplab
