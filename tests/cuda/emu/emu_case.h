// emu_case.h: one attention case run by the emulated kernels (emu_kernels.h) and checked against
// the double reference, for test_kernel_emu.cpp (shapes, dtypes, masks) and
// test_kernel_emu_masks.cpp (sliding windows, chunks, packed sequences, attention sinks).
//
// What it is: run_case, as on the GPU (tests/cuda/test_attention.cpp): outputs poisoned with NaN
// first, backward accumulated onto a non-zero start, Delta from the kernel's own O, the reference
// reference/core/dense_attention.h on the same rounded inputs (with the sinks when given), the
// per-dtype tolerances of test_gpu_util.h (cuda/README.md; dQ and dK per unit of the larger of their
// own and dV's magnitude: grad_err). With sinks, the forward kernel takes
// them (attention_forward's `sinks`), and d s_h comes from the emulated sink_grad kernel, checked
// against the reference's dsinks with the gradient tolerance.
// What it is not: the GPU tests, or a definition of a mask (the cases build theirs from the
// reference: mask.h, mask_rule.h PositionRule, thd.h token_mask).
#pragma once

#include <doctest/doctest.h>

#include <cmath>
#include <algorithm>
#include <cstring>
#include <string>
#include <type_traits>
#include <vector>

#include "core/dense_attention.h"
#include "core/dtype.h"
#include "emu_kernels.h"
#include "test_gpu_util.h"

namespace cplab_emu_test {

using namespace cplab;
using namespace cplab::cuda;
using namespace cplab::cuda::test;
using cplab_emu::CpAsync;

// packed sequences starting at starts[0] = 0, ..., ending at the last start (rows = keys), causal
// inside each, and one row, `empty`, that sees no key (a padding row): the THD cases' ranges mask
inline Mask packed_causal(const std::vector<std::int64_t>& starts, std::int64_t empty) {
  const std::int64_t n = starts.back();
  std::vector<std::int64_t> lo(static_cast<size_t>(n)), hi(static_cast<size_t>(n));
  for (std::int64_t a = 0; a < n; ++a) {
    const std::int64_t s0 = *(std::upper_bound(starts.begin(), starts.end(), a) - 1);
    lo[static_cast<size_t>(a)] = s0, hi[static_cast<size_t>(a)] = a == empty ? s0 : a + 1;
  }
  return Mask::ranges(std::move(lo), std::move(hi));
}

struct Case {
  std::string name;
  index_t sq, sk;
  Mask mask;
};

// x as elements of T (the kernels' input), and back
template <class T>
std::vector<T> as_elements(const std::vector<double>& x, DType t) {
  const std::vector<std::byte> b = to_dtype(x, t);
  REQUIRE(b.size() == x.size() * sizeof(T));
  std::vector<T> r(x.size());
  std::memcpy(static_cast<void*>(r.data()), b.data(), b.size());
  return r;
}
template <class T>
std::vector<double> as_doubles(const std::vector<T>& x, DType t) {
  std::vector<std::byte> b(x.size() * sizeof(T));
  std::memcpy(b.data(), static_cast<const void*>(x.data()), b.size());
  return from_dtype(b, t);
}
inline std::vector<double> minus(const std::vector<float>& x, double c) {
  std::vector<double> r(x.begin(), x.end());
  for (double& e : r) e -= c;
  return r;
}
template <class T>
std::vector<T> poisoned(size_t n) {  // every byte 0xFF: NaN in fp32, fp16, bf16
  std::vector<T> r(n);
  std::memset(static_cast<void*>(r.data()), 0xFF, n * sizeof(T));
  return r;
}
inline std::vector<float> as_floats(const std::vector<double>& x) { return {x.begin(), x.end()}; }

// Delta = rowsum(dO * O) from the kernel's own O (softmax_delta on the GPU), (h, sq), fp32
inline std::vector<float> delta_of(const std::vector<double>& o, const Tensor3<double>& dout, index_t sq, index_t h,
                                   index_t dv) {
  std::vector<float> delta(static_cast<size_t>(h * sq));
  for (index_t a = 0; a < sq; ++a)
    for (index_t i = 0; i < h; ++i) {
      double s = 0;
      for (index_t e = 0; e < dv; ++e) s += o[static_cast<size_t>((a * h + i) * dv + e)] * dout.at(a, i, e);
      delta[static_cast<size_t>(i * sq + a)] = static_cast<float>(s);
    }
  return delta;
}

// version 1 (any dtype), 2 or 3 (fp16 / bf16; 3: the forward only, its backward is v2's); sinks: none, or one fp32-exact logit per query head
template <class T>
void run_case(int version, DType t, index_t d, index_t dv, index_t h, index_t hk, const Case& c, CpAsync mode,
              const std::vector<double>& sinks = {}) {
  CAPTURE(version);
  CAPTURE(to_string(t));
  CAPTURE(d);
  CAPTURE(dv);
  CAPTURE(hk);
  CAPTURE(c.name);
  const bool with_sinks = !sinks.empty();
  CAPTURE(with_sinks);
  const std::string cp_async = mode == CpAsync::immediate ? "immediate" : "deferred";
  CAPTURE(cp_async);
  const Tol tol = tolerance(t);
  const AttnDims dims{c.sq, c.sk, h, hk, d, dv};
  const double scale = 1.0 / std::sqrt(static_cast<double>(d));
  const RefCase rc = ref_case(c.sq, c.sk, h, hk, d, dv, c.mask, scale, t, sinks);
  const auto &q = rc.q, &k = rc.k, &v = rc.v, &dout = rc.dout;
  const AttnOut<double>& ref = rc.ref;
  const AttnGrads<double>& g = rc.g;

  const std::vector<T> Q = as_elements<T>(q.data, t), K = as_elements<T>(k.data, t), V = as_elements<T>(v.data, t),
                       dO = as_elements<T>(dout.data, t);
  std::vector<T> O = poisoned<T>(static_cast<size_t>(c.sq * h * dv));
  std::vector<float> L = poisoned<float>(static_cast<size_t>(h * c.sq));
  const std::vector<float> S = as_floats(sinks);
  const float* sk = with_sinks ? S.data() : nullptr;
  const MaskRule rule = c.mask.rule();
  const auto fscale = static_cast<float>(scale);
  if (version == 1) cplab_emu::v1_forward<T>(dims, Q.data(), K.data(), V.data(), rule, fscale, O.data(), L.data(), sk);
  else if constexpr (!std::is_same_v<T, float>) {  // v2, v3: fp16 / bf16 only
    if (version == 3) cplab_emu::v3_forward<T>(mode, dims, Q.data(), K.data(), V.data(), rule, fscale, O.data(), L.data(), sk);
    else cplab_emu::v2_forward<T>(mode, dims, Q.data(), K.data(), V.data(), rule, fscale, O.data(), L.data(), sk);
  }
  const std::vector<double> o = as_doubles(O, t);
  CHECK(rel(o, ref.o.data) < tol.o);
  CHECK(lse_err(std::vector<double>(L.begin(), L.end()), ref.lse) < tol.lse);
  if (version == 3) return;  // kernel v3's backward is v2's (attention.h): the v2 cases

  const std::vector<float> delta = delta_of(o, dout, c.sq, h, dv);
  // the backward accumulates (+=) into its fp32 outputs: start them at c0, not 0
  const float c0 = 0.375f;
  std::vector<float> dQ(static_cast<size_t>(c.sq * h * d), c0), dK(static_cast<size_t>(c.sk * hk * d), c0),
      dV(static_cast<size_t>(c.sk * hk * dv), c0);
  if (version == 1)
    cplab_emu::v1_backward<T>(dims, Q.data(), K.data(), V.data(), dO.data(), L.data(), delta.data(), rule, fscale,
                              dQ.data(), dK.data(), dV.data());
  else if constexpr (!std::is_same_v<T, float>)
    cplab_emu::v2_backward<T>(mode, dims, Q.data(), K.data(), V.data(), dO.data(), L.data(), delta.data(), rule, fscale,
                              dQ.data(), dK.data(), dV.data());
  CHECK(grad_err(minus(dQ, c0), g.dq.data, g.dv.data) < tol.grad);
  CHECK(grad_err(minus(dK, c0), g.dk.data, g.dv.data) < tol.grad);
  CHECK(rel(minus(dV, c0), g.dv.data) < tol.grad);
  if (!with_sinks) return;
  std::vector<float> ds(static_cast<size_t>(h), c0);  // sink_grad accumulates (-=) too
  cplab_emu::sink_grad(c.sq, h, L.data(), delta.data(), S.data(), ds.data());
  REQUIRE(g.dsinks.size() == static_cast<size_t>(h));
  CHECK(rel(minus(ds, c0), g.dsinks) < tol.grad);
}

}  // namespace cplab_emu_test
