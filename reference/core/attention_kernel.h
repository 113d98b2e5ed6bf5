// attention_kernel.h: exact softmax attention on one tile, forward and backward, with Eigen.
//
// What it is: the numerical core every reference mode calls for each tile it computes, and that the
// dense oracle calls for the whole sequence:
//   forward   O = softmax(scale * Q K^T + mask) V,  LSE = log sum_k exp(scale * q.k)  (natural log)
//   backward  from dO and the FINAL O/LSE of each row (FlashAttention identity):
//             P = exp(scale * Q K^T - LSE), dV += P^T dO, dP = dO V^T, Delta = rowsum(dO * O),
//             dS = P * (dP - Delta), dQ += scale * dS K, dK += scale * dS^T Q
// GQA/MQA by head mapping: query head i uses KV head i / (h / hk); KV is never replicated.
// Rows are processed in blocks of kRowBlock; each block only multiplies the key columns its mask
// can see (causal block skipping), so a causal tile costs about half a full one, kKeyBlock of them
// at a time.
// A fully masked row gives O = 0 and LSE = -inf, and its backward contributes exactly 0: nothing
// here turns -inf into NaN.
// Attention sinks (sinks.h): given one logit per query head, the forward adds exp(s_h) to the
// softmax denominator of every row that sees a key (O and LSE then include it; the dense oracle's
// route); the backward needs nothing more than that final LSE and O.
// Speed (issue 25): the products go through gemm.h and the row work through row_kernels.h; a call
// with at least kernel_route.h's kFastRouteWork (rows x keys x heads) takes the fast route (OpenBLAS,
// AVX2), smaller ones the portable route (Eigen at the build's instruction set: the same bits on
// every machine). bench/cpu (cplab-cpu-bench) measures it against the machine's GEMM peak.
// What it is not: a GPU kernel (see cuda/), or a CP algorithm (see ring_p2p.h). Heads run in
// parallel with OpenMP; results do not depend on the number of threads.
#pragma once

#include "core/mask.h"
#include "core/tensor.h"

namespace cplab {

// (h, n) per-(head, token) values (LSE, Delta), a window of columns of a larger Rows<T>
template <class T>
struct RowsView {
  T* data = nullptr;
  index_t h = 0, n = 0, stride = 0;  // element (i, t) at data[i * stride + t]
  T& operator()(index_t i, index_t t) const { return data[i * stride + t]; }
};
template <class T>
RowsView<T> rows_view(Rows<T>& x, index_t col0 = 0, index_t count = -1) {
  return RowsView<T>{x.data() + col0, x.rows(), count < 0 ? x.cols() - col0 : count, x.cols()};
}
template <class T>
RowsView<const T> rows_view(const Rows<T>& x, index_t col0 = 0, index_t count = -1) {
  return RowsView<const T>{x.data() + col0, x.rows(), count < 0 ? x.cols() - col0 : count, x.cols()};
}

inline constexpr index_t kRowBlock = 256;
// a block's visible key window is taken kKeyBlock columns at a time (the forward with the online
// softmax of softmax_rules.h), so its scratch stays (kRowBlock, kKeyBlock) however long the window
inline constexpr index_t kKeyBlock = 1024;

// Checks shapes (h % hk == 0, matching token counts and head dims, non-empty dims) and throws
// cplab::Error naming the rule that is broken.
void check_attention_shapes(index_t sq, index_t h, index_t d, index_t sk, index_t hk, index_t dk,
                            index_t skv, index_t hkv, index_t dv);

// Writes o (sq, h, dv) and lse (h, sq). sinks: null, or one logit per query head (sinks.h)
template <class T>
void attention_forward(CView3<T> q /*(sq,h,d)*/, CView3<T> k /*(sk,hk,d)*/,
                       CView3<T> v /*(sk,hk,dv)*/, const Mask& mask, T scale,
                       View3<T> o /*(sq,h,dv)*/, RowsView<T> lse /*(h,sq)*/, const T* sinks = nullptr);

// Delta(i, t) = sum_e dO(t, i, e) * O(t, i, e): the rowsum the backward needs, from the final O.
template <class T>
Rows<T> softmax_delta(CView3<T> o /*(n,h,dv)*/, CView3<T> dout /*(n,h,dv)*/);

// ACCUMULATES into dq (sq, h, d), dk (sk, hk, d), dv (sk, hk, dv). lse and delta are the final
// (merged) values of these query rows.
template <class T>
void attention_backward(CView3<T> q /*(sq,h,d)*/, CView3<T> k /*(sk,hk,d)*/,
                        CView3<T> v /*(sk,hk,dv)*/, CView3<T> dout /*(sq,h,dv)*/,
                        RowsView<const T> lse /*(h,sq)*/, RowsView<const T> delta /*(h,sq)*/,
                        const Mask& mask, T scale, View3<T> dq /*(sq,h,d)*/,
                        View3<T> dk /*(sk,hk,d)*/, View3<T> dv /*(sk,hk,dv)*/);

}  // namespace cplab
