// attention.cu: the host API of attention.h: checks, dispatch to v1 / v2 / v3, and the small
// element-wise kernels (Delta, the (O, LSE) merges, casts).
//
// What it is: to_string(Kernel), check_supported (every rule a call must satisfy, as cplab::Error,
// before any CUDA call), check_device_supports, DeviceMask, the DType -> element type dispatch,
// and one-thread-per-(row, head) kernels for softmax_delta, merge_streaming, merge_lse,
// fold_correction; a thread per element for casts.
// The merges use softmax_rules.h's lse_merge / merge_weight, the reference's own definitions.
// What it is not: the attention kernels (attention_v1.cu, attention_v2_*.cu, attention_v3_fwd.cu).
#include <cstdint>
#include <initializer_list>
#include <string>
#include <utility>

#include "attention_impl.cuh"
#include "error.h"
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
  const auto s = [](std::int64_t v) { return std::to_string(v); };
  require(x.sq > 0 && x.sk > 0, "attention needs sq > 0 and sk > 0 (got sq = " + s(x.sq) + ", sk = " + s(x.sk) + ")");
  require(x.h > 0 && x.hk > 0 && x.h % x.hk == 0,
          "query heads h = " + s(x.h) + " must be a positive multiple of KV heads hk = " + s(x.hk));
  require(x.d > 0 && x.dv > 0, "head dims must be positive (got d = " + s(x.d) + ", dv = " + s(x.dv) + ")");
  require(x.sq < (std::int64_t{1} << 31) && x.sk < (std::int64_t{1} << 31), "sq and sk must be below 2^31");
  require(x.h <= 65535, "query heads h = " + s(x.h) + ": the kernels launch a grid row per head, and a grid's y dimension is at most 65535");
  if (kernel == Kernel::v1) {
    require(x.d <= 128 && x.dv <= 128, "kernel v1 needs head dims <= 128 (got d = " + s(x.d) + ", dv = " + s(x.dv) + ")");
    return;
  }
  require(kernel == Kernel::v2 || kernel == Kernel::v3, "kernel must be v1, v2 or v3");
  const std::string k = to_string(kernel);
  require(dtype == DType::f16 || dtype == DType::bf16, "kernel " + k + " takes fp16 or bf16 inputs, not " + to_string(dtype));
  require(x.d == 64 || x.d == 128, "kernel " + k + " needs head dim 64 or 128 (got d = " + s(x.d) + ")");
  require(x.dv == x.d, "kernel " + k + " needs dv == d (got d = " + s(x.d) + ", dv = " + s(x.dv) + ")");
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
                       const MaskRule& mask, float scale, void* o, float* lse, cudaStream_t stream) {
  check_supported(kernel, dtype, dims);
  check_aligned(kernel, {{"q", q}, {"k", k}, {"v", v}}, "o", o);
  dispatch(dtype, [&](auto tag) {
    using T = decltype(tag);
    const T *Q = static_cast<const T*>(q), *K = static_cast<const T*>(k), *V = static_cast<const T*>(v);
    if constexpr (std::is_same_v<T, float>) {
      v1_forward<T>(dims, Q, K, V, mask, scale, static_cast<T*>(o), lse, stream);  // v2 refused fp32 above
    } else {
      if (kernel == Kernel::v1) v1_forward<T>(dims, Q, K, V, mask, scale, static_cast<T*>(o), lse, stream);
      else if (kernel == Kernel::v2) v2_forward<T>(dims, Q, K, V, mask, scale, static_cast<T*>(o), lse, stream);
      else v3_forward<T>(dims, Q, K, V, mask, scale, static_cast<T*>(o), lse, stream);
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

// rows [row0, row0 + m) of (o_acc (n,h,dv), lse_acc (h,n)) merged with (o_part (m,h,dv), lse_part (h,m))
template <class T>
__global__ void merge_kernel(float* __restrict__ o_acc, float* __restrict__ lse_acc, std::int64_t n, std::int64_t h,
                             std::int64_t dv, std::int64_t row0, std::int64_t m, const T* __restrict__ o_part,
                             const float* __restrict__ lse_part) {
  const std::int64_t x = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (x >= m * h) return;
  const std::int64_t t = x / h, i = x % h;
  const float la = lse_acc[i * n + row0 + t], lb = lse_part[i * m + t];
  const float l = lse_merge(la, lb), wa = merge_weight(la, l), wb = merge_weight(lb, l);
  float* O = o_acc + ((row0 + t) * h + i) * dv;
  for (std::int64_t e = 0; e < dv; ++e) O[e] = wa * O[e] + wb * to_float(o_part[x * dv + e]);
  lse_acc[i * n + row0 + t] = l;
}

__global__ void merge_lse_kernel(float* __restrict__ lse_acc, std::int64_t n, std::int64_t h, std::int64_t row0,
                                 std::int64_t m, const float* __restrict__ lse_part) {
  const std::int64_t x = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (x >= m * h) return;
  const std::int64_t i = x / m, t = x % m;
  lse_acc[i * n + row0 + t] = lse_merge(lse_acc[i * n + row0 + t], lse_part[i * m + t]);
}

template <class T>
__global__ void fold_kernel(float* __restrict__ o_acc, const float* __restrict__ lse_final, std::int64_t n,
                            std::int64_t h, std::int64_t dv, std::int64_t row0, std::int64_t m,
                            const T* __restrict__ o_part, const float* __restrict__ lse_part) {
  const std::int64_t x = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (x >= m * h) return;
  const std::int64_t t = x / h, i = x % h;
  const float w = merge_weight(lse_part[i * m + t], lse_final[i * n + row0 + t]);
  float* O = o_acc + ((row0 + t) * h + i) * dv;
  for (std::int64_t e = 0; e < dv; ++e) O[e] += w * to_float(o_part[x * dv + e]);
}

__global__ void accumulate_kernel(float* __restrict__ y, const float* __restrict__ x, std::int64_t count) {
  const std::int64_t j = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (j < count) y[j] += x[j];
}

template <class T>
__global__ void cast_kernel(const float* __restrict__ x, T* __restrict__ y, std::int64_t count) {
  const std::int64_t j = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (j < count) y[j] = from_float<T>(x[j]);
}

void check_rows(std::int64_t n, std::int64_t h, std::int64_t dv, std::int64_t row0, std::int64_t m) {
  require(n > 0 && h > 0 && dv > 0, "merge needs n, h, dv > 0");
  require(row0 >= 0 && m >= 0 && row0 + m <= n, "a partial's rows [" + std::to_string(row0) + ", " + std::to_string(row0 + m) +
                                                    ") must lie in the accumulator's [0, " + std::to_string(n) + ")");
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

void merge_streaming(DType dtype, std::int64_t n, std::int64_t h, std::int64_t dv, float* o_acc, float* lse_acc,
                     std::int64_t row0, std::int64_t m, const void* o_part, const float* lse_part, cudaStream_t stream) {
  check_rows(n, h, dv, row0, m);
  if (m == 0) return;
  dispatch(dtype, [&](auto tag) {
    using T = decltype(tag);
    merge_kernel<T><<<blocks_for(m * h, kThreads), kThreads, 0, stream>>>(o_acc, lse_acc, n, h, dv, row0, m,
                                                                          static_cast<const T*>(o_part), lse_part);
    check_launch("merge_streaming");
  });
}

void merge_lse(std::int64_t n, std::int64_t h, float* lse_acc, std::int64_t row0, std::int64_t m, const float* lse_part,
               cudaStream_t stream) {
  check_rows(n, h, 1, row0, m);
  if (m == 0) return;
  merge_lse_kernel<<<blocks_for(m * h, kThreads), kThreads, 0, stream>>>(lse_acc, n, h, row0, m, lse_part);
  check_launch("merge_lse");
}

void fold_correction(DType dtype, std::int64_t n, std::int64_t h, std::int64_t dv, float* o_acc, const float* lse_final,
                     std::int64_t row0, std::int64_t m, const void* o_part, const float* lse_part, cudaStream_t stream) {
  check_rows(n, h, dv, row0, m);
  if (m == 0) return;
  dispatch(dtype, [&](auto tag) {
    using T = decltype(tag);
    fold_kernel<T><<<blocks_for(m * h, kThreads), kThreads, 0, stream>>>(o_acc, lse_final, n, h, dv, row0, m,
                                                                         static_cast<const T*>(o_part), lse_part);
    check_launch("fold_correction");
  });
}

void accumulate_f32(float* y, const float* x, std::int64_t count, cudaStream_t stream) {
  require(count >= 0, "accumulate_f32 needs count >= 0");
  if (count == 0) return;
  accumulate_kernel<<<blocks_for(count, kThreads), kThreads, 0, stream>>>(y, x, count);
  check_launch("accumulate_f32");
}

void cast_from_f32(DType dtype, const float* x, void* y, std::int64_t count, cudaStream_t stream) {
  require(count >= 0, "cast_from_f32 needs count >= 0");
  if (count == 0) return;
  dispatch(dtype, [&](auto tag) {
    using T = decltype(tag);
    cast_kernel<T><<<blocks_for(count, kThreads), kThreads, 0, stream>>>(x, static_cast<T*>(y), count);
    check_launch("cast_from_f32");
  });
}

}  // namespace cplab::cuda
