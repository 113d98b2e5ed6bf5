// wgmma_emu.h: cuda/wgmma.cuh's warpgroup matrix instructions emulated on the host, for the v3
// kernel run by emu.h. cuda/wgmma.cuh takes these in place of its inline PTX when CPLAB_EMULATE is
// defined: same names, same signatures, same namespace.
//
// What it models (PTX ISA, "Asynchronous Warpgroup Level Matrix Multiply-Accumulate"):
//   wgmma.mma_async   wgmma_ss<N, T> (A and B K-major in shared memory: the asm's trans-a 0,
//                     trans-b 0) and wgmma_rs<N, T> (A from registers, B MN-major: trans-b 1),
//                     m64nNk16, fp32 D += A B, scale-d 1. Issued by each of the 4 warps of a
//                     warpgroup (threads 128 w .. 128 w + 127) separately; the k-th instruction of
//                     every thread is one product, which must agree in N, type, kind and
//                     descriptors across the warpgroup (checked). Asynchronous, as the ISA says:
//                     at issue the thread's accumulator registers are saved and POISONED (NaN),
//                     the product is computed when a thread of the warpgroup first waits for it
//                     (reading shared memory and the other threads' A registers then, the latest
//                     moment allowed), and the result lands in a thread's registers only when that
//                     thread's wait_group retires the last pending group that writes them. So a
//                     read of D before its wait sees NaN, a write of another value to D before
//                     the wait aborts (the poison is checked at the wait), a write to A or to the
//                     shared operands before the wait is read, a missing wait leaves NaN.
//   descriptors       start, LBO, SBO (bits 0-13, 16-29, 32-45, >> 4), 128-byte swizzle (mode 1,
//                     bits 62-63: the only mode modelled; base offset must be 0): element (mn, k)
//                     of a 16-bit operand at start + the PTX canonical layouts' offset (K-major
//                     ((8,m),(8,2)):((128 B, SBO),(2 B, 16 B)); MN-major ((8,8,m),(8,k)):((2 B,
//                     16 B, LBO),(128 B, SBO))), then bits 4-6 of the shared address ^= bits 7-9.
//                     The register fragments are cuda/wgmma_layout.h's frag_d / frag_a (checked
//                     against the PTX figures by tests/test_wgmma_layout.cpp).
//   wgmma.fence       required before the first mma_async after each commit_group (stricter than
//                     the ISA, which asks for it only where registers were touched in between:
//                     v3 fences every group); a product issued without one aborts.
//   commit_group      closes the thread's open products into a group; wait_group N retires all
//                     but the newest N groups, blocking the thread until every thread of its
//                     warpgroup has issued their products.
//   fence_operands    nothing (the compiler ordering it gives nvcc has no host counterpart).
//   A thread that returns with products not waited for aborts.
// What it is not: bit-exact (each k16 product is summed in double and added to the fp32
// accumulator with one rounding; the tensor core's order is unspecified), a model of the register
// file (setmaxnreg is checked by sync_emu.h, not modelled here), of .sp / fp8 / tf32 variants,
// scale-d 0, transposed K-major inputs, or of timing.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>
#include <cstring>
#include <deque>
#include <type_traits>
#include <vector>

#include "emu.h"
#include "mma_emu.h"  // element<T>
#include "wgmma_layout.h"

namespace cplab_emu {

constexpr int kWarpgroup = 128;
constexpr std::uint32_t kPoison = 0x7FC0DEADu;  // a quiet NaN: an accumulator in flight

// one product of a warpgroup, as issued by its 128 threads
struct WgOp {
  int n = 0;        // N
  bool rs = false;  // A from registers (B MN-major) or both from shared memory (both K-major)
  bool bf16 = false;
  std::uint64_t da = 0, db = 0;  // descriptors (da unused when rs)
  float* d[kWarpgroup]{};
  const std::uint32_t* a[kWarpgroup]{};
  int issued = 0;
  bool computed = false;
};
// a thread's accumulator array while products that write it are pending
struct WgAccum {
  float* regs;
  int n;
  std::vector<float> value;  // the true values (the registers hold NaN)
  int pending;               // this thread's products on it not yet retired
};
struct WgThread {
  int issued = 0;  // products issued: the next is the warpgroup's op number `issued`
  bool fenced = false;
  std::vector<int> open;
  std::deque<std::vector<int>> groups;
  std::vector<WgAccum> accum;
};

inline std::vector<std::deque<WgOp>> wg_ops;  // [warpgroup]: every product of the block, in order
inline std::vector<WgThread> wg_threads;      // [thread]

inline void wgmma_block_start() {
  wg_ops.assign((blockDim.x + kWarpgroup - 1) / kWarpgroup, {});
  wg_threads.assign(blockDim.x, {});
}
inline void wgmma_fiber_exit() {
  const WgThread& t = wg_threads[threadIdx.x];
  if (!t.open.empty() || !t.groups.empty() || !t.accum.empty())
    fail("returns with wgmma products not waited for (a wgmma.wait_group missing)");
}
inline const bool wgmma_hooked = [] {
  hooks().block_start.push_back(wgmma_block_start);
  hooks().fiber_exit.push_back(wgmma_fiber_exit);
  return true;
}();

inline WgAccum& accum_of(WgThread& t, const float* regs) {
  for (WgAccum& a : t.accum)
    if (a.regs == regs) return a;
  fail("wgmma: accumulator not in flight (emulator error)");
}

// element (mn, k) of a 16-bit operand described by `desc` (see the header comment)
inline std::uint16_t operand(std::uint64_t desc, bool mn_major, int mn, int k) {
  const std::uint32_t start = static_cast<std::uint32_t>(desc & 0x3FFF) << 4, lbo = static_cast<std::uint32_t>((desc >> 16) & 0x3FFF) << 4,
                      sbo = static_cast<std::uint32_t>((desc >> 32) & 0x3FFF) << 4;
  if ((desc >> 62) != 1) fail("wgmma descriptor: only the 128-byte swizzle (mode 1) is modelled");
  if (((desc >> 49) & 7) != 0) fail("wgmma descriptor: a base offset other than 0 is not modelled");
  const auto u = [](int x) { return static_cast<std::uint32_t>(x); };
  const std::uint32_t off = mn_major ? 2 * u(mn % 64) + u(mn / 64) * lbo + 128 * u(k % 8) + u(k / 8) * sbo
                                     : 128 * u(mn % 8) + u(mn / 8) * sbo + 2 * u(k);
  const std::uint32_t a = start + off, swz = hw_swizzle128(a);
  std::uint16_t x;
  std::memcpy(&x, smem_pointer(swz, 2), 2);
  return x;
}

template <class T>
inline float as_float(std::uint16_t bits) {
  return element<T>(bits, 0);
}

// computes product `op` of warpgroup w (every thread has issued it) into the saved accumulators
template <class T>
inline void wgmma_compute(int w, WgOp& op) {
  float A[64][16], B[16][256];
  if (op.rs) {
    for (int tid = 0; tid < kWarpgroup; ++tid)
      for (int r = 0; r < 4; ++r)
        for (int e = 0; e < 2; ++e) {
          const cplab::wgmma::RC x = cplab::wgmma::frag_a(tid, r, e);
          A[x.row][x.col] = element<T>(op.a[tid][r], e);
        }
  } else {
    for (int m = 0; m < 64; ++m)
      for (int k = 0; k < 16; ++k) A[m][k] = as_float<T>(operand(op.da, false, m, k));
  }
  for (int k = 0; k < 16; ++k)
    for (int c = 0; c < op.n; ++c) B[k][c] = as_float<T>(operand(op.db, op.rs, c, k));
  for (int tid = 0; tid < kWarpgroup; ++tid) {
    WgAccum& acc = accum_of(wg_threads[static_cast<size_t>(w * kWarpgroup + tid)], op.d[tid]);
    for (int i = 0; i < op.n / 2; ++i) {
      const cplab::wgmma::RC x = cplab::wgmma::frag_d(tid, i);
      double s = 0;
      for (int k = 0; k < 16; ++k) s += static_cast<double>(A[x.row][k]) * static_cast<double>(B[k][x.col]);
      acc.value[static_cast<size_t>(i)] = static_cast<float>(static_cast<double>(acc.value[static_cast<size_t>(i)]) + s);
    }
  }
  op.computed = true;
}

inline bool all_issued(const void* op) { return static_cast<const WgOp*>(op)->issued == kWarpgroup; }

template <class T>
inline void wgmma_issue(int n, bool rs, float* d, const std::uint32_t* a, std::uint64_t da, std::uint64_t db) {
  static_assert(std::is_same_v<T, __half> || std::is_same_v<T, __nv_bfloat16>);
  yield();
  WgThread& t = wg_threads[threadIdx.x];
  if (!t.fenced) fail("wgmma.mma_async without a wgmma.fence since the last commit_group");
  const int w = static_cast<int>(threadIdx.x) / kWarpgroup, tid = static_cast<int>(threadIdx.x) % kWarpgroup;
  std::deque<WgOp>& ops = wg_ops[static_cast<size_t>(w)];
  const int k = t.issued++;
  const bool bf16 = std::is_same_v<T, __nv_bfloat16>;
  if (static_cast<int>(ops.size()) == k) {
    WgOp op;
    op.n = n, op.rs = rs, op.bf16 = bf16, op.da = rs ? 0 : da, op.db = db;
    ops.push_back(op);
  }
  WgOp& op = ops[static_cast<size_t>(k)];
  if (op.n != n || op.rs != rs || op.bf16 != bf16 || op.db != db || (!rs && op.da != da))
    fail("wgmma.mma_async: the threads of a warpgroup issued different products (shape, type or descriptors)");
  op.d[tid] = d, op.a[tid] = a;
  ++op.issued;
  WgAccum* acc = nullptr;
  for (WgAccum& x : t.accum)
    if (x.regs == d) acc = &x;
  if (acc == nullptr) {
    t.accum.push_back({d, n / 2, std::vector<float>(d, d + n / 2), 0});
    acc = &t.accum.back();
    for (int i = 0; i < n / 2; ++i) std::memcpy(&d[i], &kPoison, 4);  // until its wait
  }
  ++acc->pending;
  t.open.push_back(k);
}

inline void wgmma_retire(int groups_left) {
  yield();
  WgThread& t = wg_threads[threadIdx.x];
  const int w = static_cast<int>(threadIdx.x) / kWarpgroup;
  std::deque<WgOp>& ops = wg_ops[static_cast<size_t>(w)];
  while (static_cast<int>(t.groups.size()) > groups_left) {
    for (const int k : t.groups.front()) {
      block_until(all_issued, &ops[static_cast<size_t>(k)]);
      for (int j = 0; j <= k; ++j)  // products complete in issue order
        if (!ops[static_cast<size_t>(j)].computed) {
          if (ops[static_cast<size_t>(j)].bf16) wgmma_compute<__nv_bfloat16>(w, ops[static_cast<size_t>(j)]);
          else wgmma_compute<__half>(w, ops[static_cast<size_t>(j)]);
        }
      WgAccum& acc = accum_of(t, ops[static_cast<size_t>(k)].d[threadIdx.x % kWarpgroup]);
      if (--acc.pending == 0) {
        for (int i = 0; i < acc.n; ++i)
          if (std::memcmp(&acc.regs[i], &kPoison, 4) != 0)
            fail("an accumulator register was written while a wgmma product on it was in flight (before its wait_group)");
        std::memcpy(acc.regs, acc.value.data(), acc.value.size() * sizeof(float));
        t.accum.erase(t.accum.begin() + (&acc - t.accum.data()));
      }
    }
    t.groups.pop_front();
  }
}

}  // namespace cplab_emu

namespace cplab::cuda::detail {

inline std::uint32_t smem_addr(const void* p) { return cplab_emu::smem_address(p); }

inline void wgmma_fence() {
  cplab_emu::yield();
  cplab_emu::wg_threads[threadIdx.x].fenced = true;
}
inline void wgmma_commit() {
  cplab_emu::yield();
  cplab_emu::WgThread& t = cplab_emu::wg_threads[threadIdx.x];
  t.groups.push_back(std::move(t.open));
  t.open.clear();
  t.fenced = false;
}
template <int N>
inline void wgmma_wait() {
  cplab_emu::wgmma_retire(N);
}
template <int M>
inline void fence_operands(float (&)[M]) {}
template <int K>
inline void fence_operands(std::uint32_t (&)[K][4]) {}

template <int N, class T>
inline void wgmma_ss(float (&d)[N / 2], std::uint64_t a, std::uint64_t b) {
  cplab_emu::wgmma_issue<T>(N, false, d, nullptr, a, b);
}
template <int N, class T>
inline void wgmma_rs(float (&d)[N / 2], const std::uint32_t (&a)[4], std::uint64_t b) {
  cplab_emu::wgmma_issue<T>(N, true, d, a, 0, b);
}

}  // namespace cplab::cuda::detail
