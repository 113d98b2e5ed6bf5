// attention.cu: the host API of attention.h: checks, dispatch to v1 / v2 / v3, and Delta.
//
// What it is: to_string(Kernel), check_supported (every rule a call must satisfy, as cplab::Error,
// before any CUDA call), check_device_supports, DeviceMask, the DType -> element type dispatch,
// and the one-thread-per-(row, head) kernel of softmax_delta.
// What it is not: the attention kernels (attention_v1.cu, attention_v2_*.cu, attention_v3_fwd.cu),
// or the (O, LSE) merges, the fp32 accumulation and the casts (merge.cu).
#include <cmath>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <utility>

#include "attention_impl.cuh"
#include "core/error.h"
#include "core/util.h"  // num
#include "tensor_map.h"  // v3_check_device

namespace cplab::cuda {

using namespace detail;

const char* to_string(Kernel k) {
  switch (k) {
    case Kernel::v1: return "v1";
    case Kernel::v2: return "v2";
    case Kernel::v3: return "v3";
  }
  return "?";
}

bool kernel_v3_built() { return v3_built(); }

void check_supported(Kernel kernel, DType dtype, const AttnDims& x) {
  require(x.sq > 0 && x.sk > 0, "attention needs sq > 0 and sk > 0 (got sq = " + num(x.sq) + ", sk = " + num(x.sk) + ")");
  require(x.h > 0 && x.hk > 0 && x.h % x.hk == 0,
          "query heads h = " + num(x.h) + " must be a positive multiple of KV heads hk = " + num(x.hk));
  require(x.d > 0 && x.dv > 0, "head dims must be positive (got d = " + num(x.d) + ", dv = " + num(x.dv) + ")");
  require(x.sq < (std::int64_t{1} << 31) && x.sk < (std::int64_t{1} << 31), "sq and sk must be below 2^31");
  require(x.h <= 65535, "query heads h = " + num(x.h) + ": the kernels launch a grid row per head, and a grid's y dimension is at most 65535");
  if (kernel == Kernel::v1) {
    require(x.d <= 128 && x.dv <= 128, "kernel v1 needs head dims <= 128 (got d = " + num(x.d) + ", dv = " + num(x.dv) + ")");
    return;
  }
  require(kernel == Kernel::v2 || kernel == Kernel::v3, "kernel must be v1, v2 or v3");
  const std::string k = to_string(kernel);
  require(dtype == DType::f16 || dtype == DType::bf16, "kernel " + k + " takes fp16 or bf16 inputs, not " + to_string(dtype));
  require(x.d == 64 || x.d == 128, "kernel " + k + " needs head dim 64 or 128 (got d = " + num(x.d) + ")");
  require(x.dv == x.d, "kernel " + k + " needs dv == d (got d = " + num(x.d) + ", dv = " + num(x.dv) + ")");
  if (kernel == Kernel::v3)
    require(v3_built(), "kernel v3 (wgmma + TMA) is not in this build: configure with CMAKE_CUDA_ARCHITECTURES including 90");
}

void check_device_supports(Kernel kernel) {
  if (kernel == Kernel::v3) v3_check_device();
}

DeviceMask::DeviceMask(const Mask& mask, std::int64_t sq) {
  rule_ = MaskRule{mask.kind, mask.offset, nullptr, nullptr};
  if (mask.kind != MaskKind::ranges) return;
  require(mask.lo && mask.hi && static_cast<std::int64_t>(mask.lo->size()) == sq &&
              static_cast<std::int64_t>(mask.hi->size()) == sq,
          "a ranges mask needs one [lo, hi) per query row (" + std::to_string(sq) + " rows)");
  lo_ = DeviceBuffer<std::int64_t>(mask.lo->size());
  hi_ = DeviceBuffer<std::int64_t>(mask.hi->size());
  lo_.copy_from_host(*mask.lo);
  hi_.copy_from_host(*mask.hi);
  rule_.lo = lo_.data();
  rule_.hi = hi_.data();
}

namespace {

// v2 and v3 read their inputs with 16-byte copies (cp.async, TMA) and write O (pairs of 2-byte
// elements) and dQ (fp32 atomics) in 4-byte words: a
// misaligned pointer (a sub-buffer at an odd offset) is refused here rather than faulting in a kernel.
void check_aligned(Kernel kernel, std::initializer_list<std::pair<const char*, const void*>> in, const char* out_name, const void* out) {
  if (kernel == Kernel::v1) return;
  for (const auto& [name, p] : in)
    require(reinterpret_cast<std::uintptr_t>(p) % 16 == 0,
            "kernel " + std::string(to_string(kernel)) + " reads " + name + " with 16-byte copies: its address must be 16-byte aligned");
  require(reinterpret_cast<std::uintptr_t>(out) % 4 == 0,
          "kernel " + std::string(to_string(kernel)) + " writes " + out_name + " in 4-byte words: its address must be 4-byte aligned");
}

}  // namespace

void attention_forward(Kernel kernel, DType dtype, const AttnDims& dims, const void* q, const void* k, const void* v,
                       const MaskRule& mask, float scale, void* o, float* lse, cudaStream_t stream, const float* sinks) {
  check_supported(kernel, dtype, dims);
  // v2 / v3 take each row's max over the RAW logits and fold scale * log2(e) into one FMA
  // (softmax_rules.h fast path), which is the max of the scaled logits only for scale > 0
  require(scale > 0.f && std::isfinite(scale), "the attention scale must be a finite number > 0 (got " + approx(scale) + ")");
  check_aligned(kernel, {{"q", q}, {"k", k}, {"v", v}}, "o", o);
  dispatch(dtype, [&](auto tag) {
    using T = decltype(tag);
    const T *Q = static_cast<const T*>(q), *K = static_cast<const T*>(k), *V = static_cast<const T*>(v);
    if constexpr (std::is_same_v<T, float>) {
      v1_forward<T>(dims, Q, K, V, mask, scale, static_cast<T*>(o), lse, sinks, stream);  // v2 refused fp32 above
    } else {
      if (kernel == Kernel::v1) v1_forward<T>(dims, Q, K, V, mask, scale, static_cast<T*>(o), lse, sinks, stream);
      else if (kernel == Kernel::v2) v2_forward<T>(dims, Q, K, V, mask, scale, static_cast<T*>(o), lse, sinks, stream);
      else v3_forward<T>(dims, Q, K, V, mask, scale, static_cast<T*>(o), lse, sinks, stream);
    }
  });
}

void attention_backward(Kernel kernel, DType dtype, const AttnDims& dims, const void* q, const void* k, const void* v,
                        const void* dout, const float* lse, const float* delta, const MaskRule& mask, float scale,
                        float* dq, float* dk, float* dv, cudaStream_t stream) {
  check_supported(kernel, dtype, dims);
  check_aligned(kernel, {{"q", q}, {"k", k}, {"v", v}, {"dout", dout}}, "dq", dq);
  dispatch(dtype, [&](auto tag) {
    using T = decltype(tag);
    const T *Q = static_cast<const T*>(q), *K = static_cast<const T*>(k), *V = static_cast<const T*>(v);
    const T* dO = static_cast<const T*>(dout);
    if constexpr (std::is_same_v<T, float>) {
      v1_backward<T>(dims, Q, K, V, dO, lse, delta, mask, scale, dq, dk, dv, stream);
    } else {
      if (kernel == Kernel::v1) v1_backward<T>(dims, Q, K, V, dO, lse, delta, mask, scale, dq, dk, dv, stream);
      else v2_backward<T>(dims, Q, K, V, dO, lse, delta, mask, scale, dq, dk, dv, stream);  // v2 and v3 (v3: forward only)
    }
  });
}

namespace {

constexpr int kThreads = 256;

// delta (h, n) = rowsum(dO * O); a thread per (token, head)
template <class T>
__global__ void delta_kernel(const T* __restrict__ o, const T* __restrict__ dout, std::int64_t n, std::int64_t h,
                             std::int64_t dv, float* __restrict__ delta) {
  const std::int64_t x = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (x >= n * h) return;
  const std::int64_t t = x / h, i = x % h;
  float sum = 0.f;
  for (std::int64_t e = 0; e < dv; ++e) sum += to_float(o[x * dv + e]) * to_float(dout[x * dv + e]);
  delta[i * n + t] = sum;
}

}  // namespace

void softmax_delta(DType dtype, std::int64_t n, std::int64_t h, std::int64_t dv, const void* o, const void* dout,
                   float* delta, cudaStream_t stream) {
  require(n > 0 && h > 0 && dv > 0, "softmax_delta needs n, h, dv > 0");
  dispatch(dtype, [&](auto tag) {
    using T = decltype(tag);
    delta_kernel<T><<<blocks_for(n * h, kThreads), kThreads, 0, stream>>>(static_cast<const T*>(o), static_cast<const T*>(dout),
                                                                          n, h, dv, delta);
    check_launch("softmax_delta");
  });
}

}  // namespace cplab::cuda
