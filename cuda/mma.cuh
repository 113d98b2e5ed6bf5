// mma.cuh: the Ampere-class warp instructions of the v2 kernels, as small device functions.
//
// What it is: ldmatrix.m8n8.x4 (with and without .trans), mma.sync.m16n8k16 with fp32 accumulators
// for bf16 and fp16, cp.async 16-byte copies (zero-filled when out of range) with commit / wait,
// and packing two floats into a 32-bit register of two bf16 / fp16. Which lane holds what is
// mma_layout.h (tested on the CPU).
// What it is not: Hopper wgmma / TMA (wgmma.cuh), or portable below sm_80.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>

#include "emulation_seam.h"  // CPLAB_EMULATE: the instructions emulated on the host (g++)

namespace cplab::cuda::detail {

#ifndef CPLAB_EMULATE  // else the emulation's (emulation_seam.h) of ldsm_x4(_trans), mma_16816, pack2 and cp_async_*
__device__ __forceinline__ std::uint32_t smem_addr(const void* p) {
  return static_cast<std::uint32_t>(__cvta_generic_to_shared(p));
}

__device__ __forceinline__ void ldsm_x4(std::uint32_t (&r)[4], const void* p) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(smem_addr(p)));
}
__device__ __forceinline__ void ldsm_x4_trans(std::uint32_t (&r)[4], const void* p) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(smem_addr(p)));
}

// c += A (16x16) B (16x8); a: 4 registers, b: 2 registers, c: 4 fp32
template <class T>
__device__ __forceinline__ void mma_16816(float (&c)[4], const std::uint32_t (&a)[4], std::uint32_t b0, std::uint32_t b1);
template <>
__device__ __forceinline__ void mma_16816<__nv_bfloat16>(float (&c)[4], const std::uint32_t (&a)[4], std::uint32_t b0,
                                                         std::uint32_t b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
      "{%0, %1, %2, %3};\n"
      : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}
template <>
__device__ __forceinline__ void mma_16816<__half>(float (&c)[4], const std::uint32_t (&a)[4], std::uint32_t b0,
                                                  std::uint32_t b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
      "{%0, %1, %2, %3};\n"
      : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

// two floats as one register of two 16-bit values, `lo` in the low half (the lower column)
template <class T>
__device__ __forceinline__ std::uint32_t pack2(float lo, float hi);
template <>
__device__ __forceinline__ std::uint32_t pack2<__nv_bfloat16>(float lo, float hi) {
  const __nv_bfloat162 v = __floats2bfloat162_rn(lo, hi);  // .x = lo (low 16 bits), .y = hi
  return *reinterpret_cast<const std::uint32_t*>(&v);
}
template <>
__device__ __forceinline__ std::uint32_t pack2<__half>(float lo, float hi) {
  const __half2 v = __floats2half2_rn(lo, hi);
  return *reinterpret_cast<const std::uint32_t*>(&v);
}

#endif  // CPLAB_EMULATE

// The A operand (16 x 16) of a product, from the accumulators of two adjacent 16 x 8 C tiles (columns
// 0..7 and 8..15): register for register the same elements (mma_layout.h, FlashAttention-2's trick
// that keeps P in registers), rounded to T
template <class T>
__device__ __forceinline__ void a_from_c(std::uint32_t (&a)[4], const float (&lo)[4], const float (&hi)[4]) {
  a[0] = pack2<T>(lo[0], lo[1]);
  a[1] = pack2<T>(lo[2], lo[3]);
  a[2] = pack2<T>(hi[0], hi[1]);
  a[3] = pack2<T>(hi[2], hi[3]);
}

// c0 += A B0 and c1 += A B1, B0 and B1 the two n-tiles of one ldmatrix.x4 (b[0..1], b[2..3])
template <class T>
__device__ __forceinline__ void mma_pair(float (&c0)[4], float (&c1)[4], const std::uint32_t (&a)[4], const std::uint32_t (&b)[4]) {
  mma_16816<T>(c0, a, b[0], b[1]);
  mma_16816<T>(c1, a, b[2], b[3]);
}

#ifndef CPLAB_EMULATE
// 16 bytes global -> shared, asynchronously; fills zeros instead when !valid (src not read)
__device__ __forceinline__ void cp_async_16(void* smem, const void* gmem, bool valid) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(smem_addr(smem)), "l"(gmem),
               "r"(valid ? 16 : 0));
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::); }
template <int N>
__device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N));
}
#endif  // CPLAB_EMULATE

// rows [r0, r0 + kRows) of head `head` of x (rows, heads, D) -> smem (kRows, kLd) by cp.async, the block's
// kThreads threads (the block's, blockDim.x == kThreads) sharing the 16-byte chunks; rows >= n are
// zero-filled (never read). Fully unrolled, with no branch: the trip count is a compile-time constant
// and out-of-range rows are cp.async's zero fill (src-size 0), not a test around the copy.
template <int kRows, int D, int kLd, int kThreads, class T>
__device__ __forceinline__ void load_tile_async(T* smem, const T* x, std::int64_t r0, std::int64_t n, std::int64_t heads,
                                                std::int64_t head) {
  constexpr int kChunks = D / 8, kTotal = kRows * kChunks;  // 16-byte chunks per row, per tile
#pragma unroll
  for (int it = 0; it < (kTotal + kThreads - 1) / kThreads; ++it) {
    const int c = static_cast<int>(threadIdx.x) + it * kThreads;
    if (kTotal % kThreads != 0 && c >= kTotal) break;
    const int r = c / kChunks, e = (c % kChunks) * 8;
    const bool ok = r0 + r < n;
    cp_async_16(smem + r * kLd + e, ok ? x + ((r0 + r) * heads + head) * D + e : x, ok);
  }
}

}  // namespace cplab::cuda::detail
