// merge.cu: the element-wise kernels of merge.h: the (O, LSE) merges, the fp32 accumulation, the
// casts, and their host API.
//
// What it is: a warp per (row, head) for the O of merge_streaming and fold_correction (lanes over
// the row's elements: coalesced), a thread per (row, head) for the LSE (merge_lse, and
// merge_streaming's second launch), a thread per element for fill_f32, accumulate_f32 and cast_from_f32; the
// rows of a partial checked (cplab::Error) before any launch. The kernels also run on the CPU
// emulation (CPLAB_EMULATE cuts the host API: tests/cuda/emu/emu_merge.cpp). The merges use
// core/softmax_rules.h's lse_merge / merge_weight, the reference's own definitions (reference/core/merge.h).
// What it is not: the attention kernels or Delta (attention.cu and the attention_v*.cu files).
#include <cstdint>
#include <string>

#include "attention_impl.cuh"  // to_float / from_float, dispatch, check_launch, blocks_for
#include "core/error.h"
#include "merge.h"

namespace cplab::cuda {

using namespace detail;

namespace {

constexpr int kThreads = 256;
constexpr int kRowsPerBlock = kThreads / 32;  // merge and fold: a warp per (row, head)

// O of rows [row0, row0 + m) of (o_acc (n,h,dv), lse_acc (h,n)) merged with (o_part (m,h,dv), lse_part (h,m)):
// a warp per (row, head), its lanes over the row's dv elements, so neighbouring lanes touch neighbouring
// words (coalesced). The LSE is merged after (merge_lse_kernel, the next launch: this one reads the old one).
template <class T>
__global__ void merge_kernel(float* __restrict__ o_acc, const float* __restrict__ lse_acc, std::int64_t n, std::int64_t h,
                             std::int64_t dv, std::int64_t row0, std::int64_t m, const T* __restrict__ o_part,
                             const float* __restrict__ lse_part) {
  const std::int64_t x = static_cast<std::int64_t>(blockIdx.x) * kRowsPerBlock + threadIdx.x / 32;  // (row, head) of the partial
  const int lane = static_cast<int>(threadIdx.x % 32);
  if (x >= m * h) return;
  const std::int64_t t = x / h, i = x % h;
  const float la = lse_acc[i * n + row0 + t], lb = lse_part[i * m + t];
  const float l = lse_merge(la, lb), wa = merge_weight(la, l), wb = merge_weight(lb, l);
  float* O = o_acc + ((row0 + t) * h + i) * dv;
  for (std::int64_t e = lane; e < dv; e += 32) O[e] = wa * O[e] + wb * to_float(o_part[x * dv + e]);
}

__global__ void merge_lse_kernel(float* __restrict__ lse_acc, std::int64_t n, std::int64_t h, std::int64_t row0,
                                 std::int64_t m, const float* __restrict__ lse_part) {
  const std::int64_t x = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (x >= m * h) return;
  const std::int64_t i = x / m, t = x % m;
  lse_acc[i * n + row0 + t] = lse_merge(lse_acc[i * n + row0 + t], lse_part[i * m + t]);
}

// o_acc rows [row0, row0 + m) += exp(lse_part - lse_final) o_part: a warp per (row, head), lanes over dv
template <class T>
__global__ void fold_kernel(float* __restrict__ o_acc, const float* __restrict__ lse_final, std::int64_t n,
                            std::int64_t h, std::int64_t dv, std::int64_t row0, std::int64_t m,
                            const T* __restrict__ o_part, const float* __restrict__ lse_part) {
  const std::int64_t x = static_cast<std::int64_t>(blockIdx.x) * kRowsPerBlock + threadIdx.x / 32;
  const int lane = static_cast<int>(threadIdx.x % 32);
  if (x >= m * h) return;
  const std::int64_t t = x / h, i = x % h;
  const float w = merge_weight(lse_part[i * m + t], lse_final[i * n + row0 + t]);
  float* O = o_acc + ((row0 + t) * h + i) * dv;
  for (std::int64_t e = lane; e < dv; e += 32) O[e] += w * to_float(o_part[x * dv + e]);
}

__global__ void fill_kernel(float* __restrict__ y, std::int64_t count, float value) {
  const std::int64_t j = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (j < count) y[j] = value;
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

#ifndef CPLAB_EMULATE
void check_rows(std::int64_t n, std::int64_t h, std::int64_t dv, std::int64_t row0, std::int64_t m) {
  require(n > 0 && h > 0 && dv > 0, "merge needs n, h, dv > 0");
  require(row0 >= 0 && m >= 0 && row0 + m <= n, "a partial's rows [" + std::to_string(row0) + ", " +
                                                    std::to_string(row0 + m) + ") must lie in the accumulator's [0, " +
                                                    std::to_string(n) + ")");
}

#endif  // CPLAB_EMULATE

}  // namespace

#ifndef CPLAB_EMULATE
void merge_streaming(DType dtype, std::int64_t n, std::int64_t h, std::int64_t dv, float* o_acc, float* lse_acc,
                     std::int64_t row0, std::int64_t m, const void* o_part, const float* lse_part,
                     cudaStream_t stream) {
  check_rows(n, h, dv, row0, m);
  if (m == 0) return;
  dispatch(dtype, [&](auto tag) {
    using T = decltype(tag);
    merge_kernel<T><<<blocks_for(m * h, kRowsPerBlock), kThreads, 0, stream>>>(o_acc, lse_acc, n, h, dv, row0, m,
                                                                               static_cast<const T*>(o_part), lse_part);
    check_launch("merge_streaming");
  });
  merge_lse_kernel<<<blocks_for(m * h, kThreads), kThreads, 0, stream>>>(lse_acc, n, h, row0, m, lse_part);  // after O
  check_launch("merge_streaming (LSE)");
}

void merge_lse(std::int64_t n, std::int64_t h, float* lse_acc, std::int64_t row0, std::int64_t m, const float* lse_part,
               cudaStream_t stream) {
  check_rows(n, h, 1, row0, m);
  if (m == 0) return;
  merge_lse_kernel<<<blocks_for(m * h, kThreads), kThreads, 0, stream>>>(lse_acc, n, h, row0, m, lse_part);
  check_launch("merge_lse");
}

void fold_correction(DType dtype, std::int64_t n, std::int64_t h, std::int64_t dv, float* o_acc,
                     const float* lse_final, std::int64_t row0, std::int64_t m, const void* o_part,
                     const float* lse_part, cudaStream_t stream) {
  check_rows(n, h, dv, row0, m);
  if (m == 0) return;
  dispatch(dtype, [&](auto tag) {
    using T = decltype(tag);
    fold_kernel<T><<<blocks_for(m * h, kRowsPerBlock), kThreads, 0, stream>>>(o_acc, lse_final, n, h, dv, row0, m,
                                                                         static_cast<const T*>(o_part), lse_part);
    check_launch("fold_correction");
  });
}

void fill_f32(float* y, std::int64_t count, float value, cudaStream_t stream) {
  require(count >= 0, "fill_f32 needs count >= 0");
  if (count == 0) return;
  fill_kernel<<<blocks_for(count, kThreads), kThreads, 0, stream>>>(y, count, value);
  check_launch("fill_f32");
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

#endif  // CPLAB_EMULATE

}  // namespace cplab::cuda
