// dense_attention.h: the oracle. Attention over whole, unsharded tensors.
//
// What it is: dense_forward / dense_backward, softmax(scale * Q K^T + mask) V with its LSE and
// gradients, on the full sequence. Every CP mode in cplab is tested against these in double
// precision. They are attention_kernel.h applied to the whole tensors (one "tile"); the kernel
// itself is checked against a scalar triple loop in tests/test_dense.cpp. With attention sinks
// (sinks.h) the forward puts exp(s_h) into every row's softmax denominator and the backward also
// gives d s_h.
// What it is not: context parallel. No ranks, no layouts, no merging.
#pragma once

#include <cmath>

#include <vector>

#include "core/attention_kernel.h"
#include "core/sinks.h"

namespace cplab {

template <class T>
struct AttnOut {
  Tensor3<T> o;  // (s, h, dv)
  Rows<T> lse;   // (h, s), natural log; -inf for a fully masked row
};

template <class T>
struct AttnGrads {
  Tensor3<T> dq;  // (s, h, d)
  Tensor3<T> dk;  // (s, hk, d)
  Tensor3<T> dv;  // (s, hk, dv)
  std::vector<T> dsinks = {};  // (h): with sinks only
};

// the default softmax scale 1/sqrt(d) (d = QK head dim), as TE and FlashAttention use
inline double default_scale(index_t d) { return 1.0 / std::sqrt(static_cast<double>(d)); }

template <class T>
AttnOut<T> dense_forward(const Tensor3<T>& q /*(s,h,d)*/, const Tensor3<T>& k /*(s,hk,d)*/,
                         const Tensor3<T>& v /*(s,hk,dv)*/, const Mask& mask, T scale,
                         const T* sinks = nullptr /*(h) or none*/) {
  AttnOut<T> out{Tensor3<T>(q.n, q.h, v.d), Rows<T>(q.h, q.n)};
  attention_forward<T>(q.view(), k.view(), v.view(), mask, scale, out.o.view(), rows_view(out.lse), sinks);
  return out;
}

template <class T>
AttnGrads<T> dense_backward(const Tensor3<T>& q, const Tensor3<T>& k, const Tensor3<T>& v,
                            const AttnOut<T>& fwd, const Tensor3<T>& dout /*(s,h,dv)*/,
                            const Mask& mask, T scale, const T* sinks = nullptr /*(h) or none*/) {
  AttnGrads<T> g{Tensor3<T>(q.n, q.h, q.d), Tensor3<T>(k.n, k.h, k.d), Tensor3<T>(v.n, v.h, v.d)};
  const Rows<T> delta = softmax_delta<T>(fwd.o.view(), dout.view());
  attention_backward<T>(q.view(), k.view(), v.view(), dout.view(), rows_view(fwd.lse),
                        rows_view(delta), mask, scale, g.dq.view(), g.dk.view(), g.dv.view());
  if (sinks) {
    g.dsinks.assign(static_cast<size_t>(q.h), T(0));
    sink_grad<T>(fwd.o.view(), dout.view(), rows_view(fwd.lse), sinks, g.dsinks.data());
  }
  return g;
}

}  // namespace cplab
