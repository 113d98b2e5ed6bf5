// mma_emu.h: cuda/mma.cuh's inline-PTX instructions emulated on the host, for the kernels run by
// emu.h. cuda/mma.cuh includes it in place of its PTX when CPLAB_EMULATE is defined: same names,
// same signatures, same namespace; mma.cuh's plain C++ (a_from_c, mma_pair, load_tile_async)
// is used as is.
//
// What it is: written from the PTX ISA's fragment tables, independently of cuda/mma_layout.h (which
// tests/test_mma_layout.cpp checks separately):
//   ldmatrix.m8n8.x4(.trans)  lanes 8j..8j+7 give the row addresses of matrix j (16-byte aligned,
//                             checked); lane l receives row l/4, columns 2(l%4), 2(l%4)+1 of each
//                             matrix (.trans: rows 2(l%4), 2(l%4)+1 of column l/4)
//   mma.m16n8k16.row.col      A 16x16, B 16x8 from the warp's 32 lanes, C += A B for the lane's
//                             4 accumulators
//   cp.async 16 bytes         alignment checked; zero-filled when !valid (source not read);
//                             performed either at cp_async_wait<N> for every group but the newest
//                             N (CpAsync::deferred, the latest moment the PTX ISA allows) or at once
//                             (CpAsync::immediate, the earliest), set per launch by the test
// What it is not: bit-exact. The products of mma are summed in double and added to the fp32
// accumulator with one rounding, where the tensor core's internal order and precision of the fp32
// sum are unspecified; the test's tolerances cover both. Nor a model of bank conflicts or timing.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <type_traits>
#include <vector>

#include "emu.h"
#include "emu_kernels.h"  // CpAsync

namespace cplab_emu {

inline CpAsync cp_async_mode = CpAsync::deferred;

inline void perform(const Copy& c) {
  if (c.valid) std::memcpy(c.dst, c.src, 16);
  else std::memset(c.dst, 0, 16);
}
inline void misaligned(const char* what) {
  std::fprintf(stderr, "cplab_emu: %s: address not 16-byte aligned\n", what);
  std::abort();
}

template <class T>
float element(std::uint32_t reg, int half) {
  const auto bits = static_cast<std::uint16_t>(half ? reg >> 16 : reg & 0xFFFFu);
  T x;
  std::memcpy(static_cast<void*>(&x), &bits, sizeof bits);
  return static_cast<float>(x);
}

inline void ldmatrix(std::uint32_t (&r)[4], const void* p, bool trans) {
  if (reinterpret_cast<std::uintptr_t>(p) % 16 != 0) misaligned("ldmatrix");
  const int w = warp(), l = lane();
  const void** rows = &block->ptr[static_cast<size_t>(w * kWarp)];
  rows[l] = p;
  warp_sync();
  for (int j = 0; j < 4; ++j) {
    std::uint16_t e[2];
    for (int k = 0; k < 2; ++k) {
      const int row = trans ? 2 * (l % 4) + k : l / 4, col = trans ? l / 4 : 2 * (l % 4) + k;
      std::memcpy(&e[k], static_cast<const unsigned char*>(rows[8 * j + row]) + 2 * col, 2);
    }
    r[j] = std::uint32_t{e[0]} | (std::uint32_t{e[1]} << 16);
  }
  warp_sync();
}

}  // namespace cplab_emu

namespace cplab::cuda::detail {

inline void ldsm_x4(std::uint32_t (&r)[4], const void* p) { cplab_emu::ldmatrix(r, p, false); }
inline void ldsm_x4_trans(std::uint32_t (&r)[4], const void* p) { cplab_emu::ldmatrix(r, p, true); }

// c += A (16x16) B (16x8). Fragments (PTX ISA, mma.m16n8k16 for .f16 / .bf16), g = lane / 4, t = lane % 4:
//   A: a[0] = (g, 2t..2t+1), a[1] = (g+8, 2t..), a[2] = (g, 8+2t..), a[3] = (g+8, 8+2t..)
//   B: b0 = rows 2t..2t+1 of column g, b1 = rows 8+2t..8+2t+1
//   C: c[0..1] = (g, 2t..2t+1), c[2..3] = (g+8, 2t..2t+1)
// so A(row, k) sits in lane (row%8)*4 + (k%8)/2, register (row>=8) + 2(k>=8), half k%2, and
// B(k, col) in lane col*4 + (k%8)/2, register k>=8, half k%2.
template <class T>
inline void mma_16816(float (&c)[4], const std::uint32_t (&a)[4], std::uint32_t b0, std::uint32_t b1) {
  using namespace cplab_emu;
  static_assert(std::is_same_v<T, __half> || std::is_same_v<T, __nv_bfloat16>);
  const int w = warp(), l = lane();
  std::uint32_t* regs = &block->reg[static_cast<size_t>(w * kWarp * 6)];
  for (int i = 0; i < 4; ++i) regs[l * 6 + i] = a[i];
  regs[l * 6 + 4] = b0;
  regs[l * 6 + 5] = b1;
  warp_sync();
  const auto A = [&](int row, int k) {
    return element<T>(regs[((row % 8) * 4 + (k % 8) / 2) * 6 + (row >= 8) + 2 * (k >= 8)], k % 2);
  };
  const auto B = [&](int k, int col) { return element<T>(regs[(col * 4 + (k % 8) / 2) * 6 + 4 + (k >= 8)], k % 2); };
  const int g = l / 4, t = l % 4;
  for (int i = 0; i < 4; ++i) {
    const int row = i < 2 ? g : g + 8, col = 2 * t + i % 2;
    double s = 0;
    for (int k = 0; k < 16; ++k) s += static_cast<double>(A(row, k)) * static_cast<double>(B(k, col));
    c[i] = static_cast<float>(static_cast<double>(c[i]) + s);
  }
  warp_sync();
}

// two floats rounded to nearest even as T (__floats2half2_rn / __floats2bfloat162_rn), lo in the low half
template <class T>
inline std::uint32_t pack2(float lo, float hi) {
  const T x[2] = {T(lo), T(hi)};
  std::uint32_t r;
  std::memcpy(&r, static_cast<const void*>(x), sizeof r);
  return r;
}

inline void cp_async_16(void* smem, const void* gmem, bool valid) {
  using namespace cplab_emu;
  if (reinterpret_cast<std::uintptr_t>(smem) % 16 != 0 || (valid && reinterpret_cast<std::uintptr_t>(gmem) % 16 != 0))
    misaligned("cp.async");
  const Copy c{smem, gmem, valid};
  if (cp_async_mode == CpAsync::immediate) perform(c);
  else me().open.push_back(c);
}
inline void cp_async_commit() {
  cplab_emu::Fiber& f = cplab_emu::me();
  f.groups.push_back(std::move(f.open));
  f.open.clear();
}
template <int N>
inline void cp_async_wait() {
  cplab_emu::Fiber& f = cplab_emu::me();
  while (static_cast<int>(f.groups.size()) > N) {
    for (const cplab_emu::Copy& c : f.groups.front()) cplab_emu::perform(c);
    f.groups.pop_front();
  }
}

}  // namespace cplab::cuda::detail
