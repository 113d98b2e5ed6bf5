// test_kernel_emu.cpp: the attention kernels v1 and v2 (their own source, cuda/attention_v*.cu)
// run on the CPU by the host emulation of emu.h / mma_emu.h, against the double reference.
//
// What it is: a fast subset of tests/cuda/test_attention.cpp's cases, so the kernels' indexing, tiling,
// masking, barriers and cp.async pipelining are checked in every CI run without a GPU: v2 forward
// and backward for bf16 and fp16, head dims 64 and 128, MHA and GQA, masks none / causal /
// bottom-right causal with sq != sk / THD per-sequence causal ranges with an empty row, ragged
// sizes, cp.async landing at its wait (deferred) and at once (immediate); v1 in fp32 with d != dv.
// As on the GPU: outputs poisoned with NaN first, backward accumulated onto a non-zero start,
// Delta from the kernel's own O, the reference reference/core/dense_attention.h on the same rounded
// inputs, the per-dtype tolerances of test_gpu_util.h (cuda/README.md).
// What it is not: a GPU test (emu.h and mma_emu.h say what the emulation cannot see: the memory
// model, the tensor cores' fp32 rounding, timing, bank conflicts), or every case of test_attention.cpp.
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>

#include <cstring>
#include <string>
#include <type_traits>
#include <vector>

#include "core/dense_attention.h"
#include "core/dtype.h"
#include "emu_kernels.h"
#include "test_gpu_util.h"

using namespace cplab;
using namespace cplab::cuda;
using namespace cplab::cuda::test;
using cplab_emu::CpAsync;

namespace {

struct Case {
  std::string name;
  index_t sq, sk;
  Mask mask;
};

// THD: three packed sequences [0, 30), [30, 100), [100, 130), causal inside each; row 110 sees nothing
Mask thd_mask() {
  std::vector<std::int64_t> lo(130), hi(130);
  for (std::int64_t a = 0; a < 130; ++a) {
    const std::int64_t s0 = a < 30 ? 0 : (a < 100 ? 30 : 100);
    lo[static_cast<size_t>(a)] = s0, hi[static_cast<size_t>(a)] = a == 110 ? s0 : a + 1;
  }
  return Mask::ranges(lo, hi);
}

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
std::vector<double> minus(const std::vector<float>& x, double c) {
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

template <class T>
void run_case(int version, DType t, index_t d, index_t dv, index_t h, index_t hk, const Case& c, CpAsync mode) {
  CAPTURE(version);
  CAPTURE(to_string(t));
  CAPTURE(d);
  CAPTURE(dv);
  CAPTURE(hk);
  CAPTURE(c.name);
  const std::string cp_async = mode == CpAsync::immediate ? "immediate" : "deferred";
  CAPTURE(cp_async);
  const Tol tol = tolerance(t);
  const AttnDims dims{c.sq, c.sk, h, hk, d, dv};
  const double scale = 1.0 / std::sqrt(static_cast<double>(d));
  const RefCase rc = ref_case(c.sq, c.sk, h, hk, d, dv, c.mask, scale, t);
  const auto &q = rc.q, &k = rc.k, &v = rc.v, &dout = rc.dout;
  const AttnOut<double>& ref = rc.ref;
  const AttnGrads<double>& g = rc.g;

  const std::vector<T> Q = as_elements<T>(q.data, t), K = as_elements<T>(k.data, t), V = as_elements<T>(v.data, t),
                       dO = as_elements<T>(dout.data, t);
  std::vector<T> O = poisoned<T>(static_cast<size_t>(c.sq * h * dv));
  std::vector<float> L = poisoned<float>(static_cast<size_t>(h * c.sq));
  const MaskRule rule = c.mask.rule();
  const auto fscale = static_cast<float>(scale);
  if (version == 1) cplab_emu::v1_forward<T>(dims, Q.data(), K.data(), V.data(), rule, fscale, O.data(), L.data());
  else if constexpr (!std::is_same_v<T, float>)  // v2: fp16 / bf16 only
    cplab_emu::v2_forward<T>(mode, dims, Q.data(), K.data(), V.data(), rule, fscale, O.data(), L.data());
  const std::vector<double> o = as_doubles(O, t);
  CHECK(rel(o, ref.o.data) < tol.o);
  CHECK(lse_err(std::vector<double>(L.begin(), L.end()), ref.lse) < tol.lse);

  // Delta = rowsum(dO * O) from the kernel's own O (softmax_delta on the GPU), (h, sq), fp32
  std::vector<float> delta(static_cast<size_t>(h * c.sq));
  for (index_t a = 0; a < c.sq; ++a)
    for (index_t i = 0; i < h; ++i) {
      double s = 0;
      for (index_t e = 0; e < dv; ++e) s += o[static_cast<size_t>((a * h + i) * dv + e)] * dout.at(a, i, e);
      delta[static_cast<size_t>(i * c.sq + a)] = static_cast<float>(s);
    }
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
  CHECK(rel(minus(dQ, c0), g.dq.data) < tol.grad);
  CHECK(rel(minus(dK, c0), g.dk.data) < tol.grad);
  CHECK(rel(minus(dV, c0), g.dv.data) < tol.grad);
}

const Case kNone{"none, 130 x 70", 130, 70, Mask::none()};
const Case kCausal{"causal, 130 x 130", 130, 130, Mask::causal(0)};
const Case kBottomRight{"bottom-right causal, 72 x 200", 72, 200, Mask::causal(200 - 72)};
const Case kOneRow{"bottom-right causal, 1 x 77", 1, 77, Mask::causal(76)};
const Case kThd{"THD ranges (one empty row), 130 x 130", 130, 130, thd_mask()};

}  // namespace

// h = 2: hk = 2 is MHA, hk = 1 GQA
TEST_CASE("emulated kernel v2 (fwd + bwd) equals the double reference: bf16") {
  using T = __nv_bfloat16;
  const DType t = DType::bf16;
  run_case<T>(2, t, 64, 64, 2, 2, kNone, CpAsync::deferred);
  run_case<T>(2, t, 64, 64, 2, 1, kThd, CpAsync::immediate);
  run_case<T>(2, t, 128, 128, 2, 1, kBottomRight, CpAsync::immediate);
  run_case<T>(2, t, 128, 128, 2, 2, kOneRow, CpAsync::deferred);
}

TEST_CASE("emulated kernel v2 (fwd + bwd) equals the double reference: fp16") {
  using T = __half;
  const DType t = DType::f16;
  run_case<T>(2, t, 64, 64, 2, 1, kCausal, CpAsync::deferred);
  run_case<T>(2, t, 64, 64, 2, 2, kBottomRight, CpAsync::immediate);
  run_case<T>(2, t, 128, 128, 2, 2, kThd, CpAsync::deferred);
  run_case<T>(2, t, 128, 128, 2, 1, kNone, CpAsync::immediate);
}

TEST_CASE("emulated kernel v1 (fwd + bwd) equals the double reference: fp32, d 40, dv 24") {
  run_case<float>(1, DType::f32, 40, 24, 2, 1, kBottomRight, CpAsync::deferred);
  run_case<float>(1, DType::f32, 40, 24, 2, 2, kThd, CpAsync::deferred);
}
