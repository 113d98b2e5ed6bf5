// test_gpu_util.h: what the GPU tests compare with: inputs rounded to a dtype, host <-> device copies
// as doubles, the error measures and the per-dtype tolerances of cuda/README.md.
//
// What it is: for the GPU tests of tests/cuda/ (test_attention.cpp, test_ring_gpu.cpp,
// test_modes_gpu.cpp, ...) and the CPU emulation of the kernels (emu/test_kernel_emu.cpp):
//   rounded_tensor  tests/helpers.h's seeded uniform(-1, 1) tensor, rounded to the dtype (what the GPU sees)
//   ref_case        one case's rounded q, k, v, dO and its double reference (O, LSE, dQ, dK, dV;
//                   with attention sinks also d s_h); sink_logits: fp32-exact logits for tests
//   upload / download_f / download_t / as_tensor   device buffers from and to host doubles
//   rel             max |x - ref| / max |ref|: core/rel_error.h's rel_error (the one metric and its
//                   convention: -inf on both sides is equal, any other infinity or a NaN fails)
//   lse_err         absolute LSE error per unit of max(1, |LSE|)
//   grad_err        dQ or dK error per unit of the larger of max|ref| and max|dV ref| (a window of
//                   one key makes dQ = dK = 0 exactly, where a relative error is noise over noise)
//   tolerance       the per-dtype tolerances (cuda/README.md)
//   v3_unavailable  why kernel v3 cannot run here ("" when it can: an sm_90a build on a 9.0 device)
// What it is not: used by the library; tests only (needs doctest).
#pragma once

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "attention.h"
#include "check.h"
#include "core/dense_attention.h"
#include "core/dtype.h"
#include "core/error.h"
#include "core/rel_error.h"
#include "device_buffer.h"
#include "helpers.h"

namespace cplab::cuda::test {

struct Tol {
  double o, lse, grad;
};
inline Tol tolerance(DType t) {
  if (t == DType::f32) return {1e-5, 1e-5, 1e-4};
  if (t == DType::f16) return {4e-3, 1e-4, 1e-2};
  return {2e-2, 1e-4, 5e-2};
}

// (the library's own rules: check_supported's build rule, check_device_supports' device rule)
inline std::string v3_unavailable() {
  try {
    check_supported(Kernel::v3, DType::bf16, AttnDims{1, 1, 1, 1, 64, 64});
    check_device_supports(Kernel::v3);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

inline Tensor3<double> rounded_tensor(index_t n, index_t h, index_t d, std::uint64_t seed, DType t) {
  Tensor3<double> x = cplab::test::random_tensor<double>(n, h, d, seed);
  for (double& e : x.data) e = round_to(e, t);
  return x;
}

// One attention case: its rounded inputs (seeds 1..4) and the double reference, forward and backward,
// which every single-kernel test compares with (test_attention.cpp on a GPU, emu/ on the CPU)
struct RefCase {
  Tensor3<double> q, k, v, dout;
  AttnOut<double> ref;
  AttnGrads<double> g;
};
// sinks: none, or one attention-sink logit per query head (g.dsinks is then their gradient)
inline RefCase ref_case(index_t sq, index_t sk, index_t h, index_t hk, index_t d, index_t dv, const Mask& mask, double scale,
                        DType t, const std::vector<double>& sinks = {}) {
  RefCase c{rounded_tensor(sq, h, d, 1, t), rounded_tensor(sk, hk, d, 2, t), rounded_tensor(sk, hk, dv, 3, t),
            rounded_tensor(sq, h, dv, 4, t), {}, {}};
  const double* s = sinks.empty() ? nullptr : sinks.data();
  c.ref = dense_forward(c.q, c.k, c.v, mask, scale, s);
  c.g = dense_backward(c.q, c.k, c.v, c.ref, c.dout, mask, scale, s);
  return c;
}

// sink logits for h heads, exact in fp32 (the kernels take fp32), of both signs and large enough to
// matter next to a few keys' weights: 0.75, -0.5, 1.25, -1.0, 0.75, ...
inline std::vector<double> sink_logits(index_t h) {
  const double pattern[4] = {0.75, -0.5, 1.25, -1.0};
  std::vector<double> s(static_cast<size_t>(h));
  for (index_t i = 0; i < h; ++i) s[static_cast<size_t>(i)] = pattern[i % 4];
  return s;
}

// x rounded to t, as a new device buffer, or written at byte_offset of an existing one
inline DeviceBuffer<std::byte> upload(const std::vector<double>& x, DType t) {
  const std::vector<std::byte> b = to_dtype(x, t);
  DeviceBuffer<std::byte> d(b.size());
  d.copy_from_host(b);
  return d;
}
inline void upload(DeviceBuffer<std::byte>& dst, std::size_t byte_offset, const std::vector<double>& x, DType t) {
  const std::vector<std::byte> b = to_dtype(x, t);
  upload_sync(dst.data() + byte_offset, b.data(), b.size());
}
// count elements of type t (or fp32) at src, as doubles
inline std::vector<double> download_t(const std::byte* src, std::size_t count, DType t) {
  std::vector<std::byte> b(count * dtype_size(t));
  CPLAB_CUDA_CHECK(cudaMemcpy(b.data(), src, b.size(), cudaMemcpyDeviceToHost));
  return from_dtype(b, t);
}
inline std::vector<double> download_f(const float* src, std::size_t count) {
  std::vector<float> f(count);
  CPLAB_CUDA_CHECK(cudaMemcpy(f.data(), src, count * sizeof(float), cudaMemcpyDeviceToHost));
  return {f.begin(), f.end()};
}

// a downloaded (n, h, d) tensor
inline Tensor3<double> as_tensor(std::vector<double> v, index_t n, index_t h, index_t d) {
  Tensor3<double> t(n, h, d);
  REQUIRE(v.size() == t.data.size());
  t.data = std::move(v);
  return t;
}

inline double rel(const std::vector<double>& x, const std::vector<double>& ref) {
  REQUIRE(x.size() == ref.size());
  return cplab::rel_error(x.data(), ref.data(), x.size());
}

inline double lse_err(const std::vector<double>& x, const Rows<double>& ref) {
  double worst = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    const double r = ref.data()[i];
    if (std::isinf(r) || std::isinf(x[i])) {
      if (x[i] != r) return INFINITY;
      continue;
    }
    if (std::isnan(x[i])) return INFINITY;
    worst = std::max(worst, std::abs(x[i] - r) / std::max(1.0, std::abs(r)));
  }
  return worst;
}

// dQ or dK error: max|x - ref| / max(max|ref|, max|dV ref|). A sliding window of 1 key (no sink)
// makes dQ = dK = 0 exactly (P = 1, so dS = P (dP - Delta) = 0): the reference holds rounding noise
// there (~1e-17) and a relative error would divide the kernel's fp32 noise by it. dV (= dO on the
// row's own key) is never all zero, and sets the scale of the gradients instead.
inline double grad_err(const std::vector<double>& x, const std::vector<double>& ref, const std::vector<double>& dv_ref) {
  REQUIRE(x.size() == ref.size());
  double diff = 0, scale = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    if (!std::isfinite(x[i])) return INFINITY;
    diff = std::max(diff, std::abs(x[i] - ref[i]));
    scale = std::max(scale, std::abs(ref[i]));
  }
  for (double e : dv_ref) scale = std::max(scale, std::abs(e));
  return scale > 0 ? diff / scale : diff;
}

}  // namespace cplab::cuda::test
