// wgmma.cuh: the Hopper (sm_90a) instructions of the v3 forward kernel, as small device functions.
//
// What it is: wgmma.mma_async m64nNk16 with fp32 accumulators for bf16 and fp16 (A from a shared
// memory descriptor or from registers, B from a descriptor), its fence / commit / wait, the
// operand fence that keeps the compiler from moving accumulator reads across an asynchronous
// product, mbarrier init / arrive / expect-tx / wait (the wait gives up with a trap after 10 s, so a load
// that never lands is a kernel error, not a hang), and the TMA tile load cp.async.bulk.tensor.3d;
// for warp-specialised kernels (FlashAttention-3's producer warpgroup and ping-pong, as kernel v3)
// named barriers (bar.sync / bar.arrive) and setmaxnreg.inc / .dec. Which descriptor
// and register hold what is wgmma_layout.h (tested on the CPU). Under CPLAB_EMULATE (g++,
// tests/cuda/emu) every instruction here is the host emulation's (emulation_seam.h: wgmma_emu.h,
// tma_emu.h, sync_emu.h) and only mbar_wait's loop is this file's.
// What it is not: usable below sm_90a (its one caller emits them only under
// __CUDA_ARCH_FEAT_SM90_ALL), or a pipeline (attention_v3_fwd.cu builds one from these).
#pragma once

#include <cuda.h>  // CUtensorMap (a type only: nothing here calls the driver)
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>

#include "mma.cuh"  // smem_addr

namespace cplab::cuda::detail {

#ifndef CPLAB_EMULATE  // else the emulation's wgmma_*, fence_operands, mbar_*, global_ns, tma_load_3d, named_barrier_*, setmaxnreg_*
__device__ __forceinline__ void wgmma_fence() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
__device__ __forceinline__ void wgmma_commit() { asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory"); }
template <int N>
__device__ __forceinline__ void wgmma_wait() {
  asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(N) : "memory");
}
// after wgmma_wait (and before a product that reads them): the registers are in their final state
// here, so the compiler may not hoist reads above the wait or sink writes below the issue
template <int M>
__device__ __forceinline__ void fence_operands(float (&d)[M]) {
  for (int i = 0; i < M; ++i) asm volatile("" : "+f"(d[i])::"memory");
}
// the same for A operands in registers, which the product reads asynchronously until the wait
template <int K>
__device__ __forceinline__ void fence_operands(std::uint32_t (&a)[K][4]) {
  for (int k = 0; k < K; ++k)
    for (int r = 0; r < 4; ++r) asm volatile("" : "+r"(a[k][r])::"memory");
}

// D (64 x N, fp32, wgmma_layout.h's frag_d) += A B, both K-major in shared memory (S = Q K^T)
template <int N, class T>
__device__ __forceinline__ void wgmma_ss(float (&d)[N / 2], std::uint64_t a, std::uint64_t b);
// D += A B, A (64 x 16) from registers (frag_a), B MN-major in shared memory (O += P V)
template <int N, class T>
__device__ __forceinline__ void wgmma_rs(float (&d)[N / 2], const std::uint32_t (&a)[4], std::uint64_t b);

// operand lists of 32 and 64 fp32 accumulators
#define CPLAB_WG_REGS32 "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}"
#define CPLAB_WG_REGS64 "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}"
#define CPLAB_WG_OUT32 \
    "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), \
    "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), \
    "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), \
    "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
#define CPLAB_WG_OUT64 CPLAB_WG_OUT32, \
    "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), \
    "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), \
    "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), \
    "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])

// scale-d 1 (accumulate), scale-a 1, scale-b 1, then trans-a 0 and trans-b 0 (SS: both K-major)
// or trans-b 1 (RS: B MN-major). TAIL names the operands after the accumulators.
#define CPLAB_WGMMA_SS(N, M, REGS, OUT, TAIL, T, TY)                                             \
  template <>                                                                                   \
  __device__ __forceinline__ void wgmma_ss<N, T>(float (&d)[M], std::uint64_t a, std::uint64_t b) { \
    asm volatile("wgmma.mma_async.sync.aligned.m64n" #N "k16.f32." TY "." TY " " REGS TAIL      \
                 ", 1, 1, 1, 0, 0;\n"                                                           \
                 : OUT                                                                          \
                 : "l"(a), "l"(b));                                                             \
  }
#define CPLAB_WGMMA_RS(N, M, REGS, OUT, TAIL, T, TY)                                             \
  template <>                                                                                   \
  __device__ __forceinline__ void wgmma_rs<N, T>(float (&d)[M], const std::uint32_t (&a)[4],      \
                                                 std::uint64_t b) {                              \
    asm volatile("wgmma.mma_async.sync.aligned.m64n" #N "k16.f32." TY "." TY " " REGS TAIL      \
                 ", 1, 1, 1, 1;\n"                                                              \
                 : OUT                                                                          \
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b));                         \
  }
#define CPLAB_WGMMA_ALL(T, TY)                                                                     \
  CPLAB_WGMMA_SS(128, 64, CPLAB_WG_REGS64, CPLAB_WG_OUT64, ", %64, %65", T, TY)                   \
  CPLAB_WGMMA_RS(64, 32, CPLAB_WG_REGS32, CPLAB_WG_OUT32, ", {%32, %33, %34, %35}, %36", T, TY)   \
  CPLAB_WGMMA_RS(128, 64, CPLAB_WG_REGS64, CPLAB_WG_OUT64, ", {%64, %65, %66, %67}, %68", T, TY)
CPLAB_WGMMA_ALL(__nv_bfloat16, "bf16")
CPLAB_WGMMA_ALL(__half, "f16")
#undef CPLAB_WGMMA_ALL
#undef CPLAB_WGMMA_RS
#undef CPLAB_WGMMA_SS
#undef CPLAB_WG_OUT64
#undef CPLAB_WG_OUT32
#undef CPLAB_WG_REGS64
#undef CPLAB_WG_REGS32

// ---- mbarrier (a transaction barrier in shared memory) and TMA ----
__device__ __forceinline__ void mbar_init(std::uint64_t* bar, unsigned count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(smem_addr(bar)), "r"(count) : "memory");
}
// make the initialised barriers visible to the async proxy (TMA) before any thread uses them
__device__ __forceinline__ void mbar_init_fence() {
  asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
}
// one arrival that also announces `bytes` more bytes the phase must receive before it completes
__device__ __forceinline__ void mbar_expect_tx(std::uint64_t* bar, std::uint32_t bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(smem_addr(bar)), "r"(bytes) : "memory");
}
// one plain arrival (no bytes announced): a consumer releasing a stage to the loader
__device__ __forceinline__ void mbar_arrive(std::uint64_t* bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(smem_addr(bar)) : "memory");
}
__device__ __forceinline__ std::uint64_t global_ns() {
  std::uint64_t t;
  asm volatile("mov.u64 %0, %%globaltimer;\n" : "=l"(t));
  return t;
}
// whether the phase with parity `parity` has completed (the hardware may wait a while first)
__device__ __forceinline__ bool mbar_try_wait(std::uint64_t* bar, std::uint32_t parity) {
  std::uint32_t done;
  asm volatile(
      "{\n .reg .pred p;\n mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n selp.u32 %0, 1, 0, p;\n}\n"
      : "=r"(done)
      : "r"(smem_addr(bar)), "r"(parity)
      : "memory");
  return done != 0;
}
// TMA: the box at coordinates (c0, c1, c2) of `map` (innermost first) into shared memory at dst;
// completion is counted, in bytes, on `bar`
__device__ __forceinline__ void tma_load_3d(void* dst, const CUtensorMap* map, std::uint64_t* bar, int c0, int c1, int c2) {
  asm volatile(
      "cp.async.bulk.tensor.3d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3, %4}], [%5];\n" ::"r"(
          smem_addr(dst)),
      "l"(reinterpret_cast<std::uint64_t>(map)), "r"(c0), "r"(c1), "r"(c2), "r"(smem_addr(bar))
      : "memory");
}

// ---- warp specialisation: named barriers and register reallocation (PTX ISA "bar", "setmaxnreg")
// barrier `id` (1..15; 0 is __syncthreads') for `threads` threads, a multiple of 32, whole warps:
// sync waits until `threads` have arrived, arrive only counts this warp in
__device__ __forceinline__ void named_barrier_sync(int id, int threads) {
  asm volatile("bar.sync %0, %1;\n" ::"r"(id), "r"(threads) : "memory");
}
__device__ __forceinline__ void named_barrier_arrive(int id, int threads) {
  asm volatile("bar.arrive %0, %1;\n" ::"r"(id), "r"(threads) : "memory");
}
// this warpgroup's per-thread register limit raised (inc) or lowered (dec) to N (24..256, a
// multiple of 8); every warp of the warpgroup executes it; inc waits for registers another
// warpgroup's dec returned to the block's pool
template <int N>
__device__ __forceinline__ void setmaxnreg_inc() {
  asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(N));
}
template <int N>
__device__ __forceinline__ void setmaxnreg_dec() {
  asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(N));
}
#endif  // CPLAB_EMULATE

// wait until the phase with parity `parity` has completed; trap (a launch error the host reports)
// if it has not after 10 s
__device__ __forceinline__ void mbar_wait(std::uint64_t* bar, std::uint32_t parity) {
  std::uint64_t t0 = 0;
  for (;;) {
    if (mbar_try_wait(bar, parity)) return;
    if (t0 == 0) t0 = global_ns();
    else if (global_ns() - t0 > 10'000'000'000ull) __trap();
  }
}

}  // namespace cplab::cuda::detail
