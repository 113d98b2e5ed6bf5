// wgmma_layout.h: where the v3 (Hopper) forward kernel puts and finds every element: the shared
// memory layout TMA writes with 128-byte swizzling, the wgmma shared-memory matrix descriptors
// that read it back, and which thread of a warpgroup holds which element of a wgmma fragment.
//
// What it is: plain index maps and the descriptor encoding, written from the PTX ISA
// ("Asynchronous Warpgroup Level Matrix Shared Memory Layout", "Matrix Descriptor Format",
// "Register Fragments") and the CUDA programming guide's TMA swizzle description:
//   tiles       a tile of `rows` rows x D columns of 16-bit elements is stored as D / 64 panels
//               of [rows][64] (128 bytes a row), each filled by one TMA box with 128-byte
//               swizzling: inside every 1024-byte group of 8 rows, the 16-byte chunk c of row r
//               lands at chunk c ^ (r % 8). Panels and tiles start 1024-byte aligned.
//   K-major     Q and K (the A and B of S = Q K^T; both store the K dimension, the head dim,
//               contiguously): rows 128 bytes apart, groups of 8 rows SBO = 1024 bytes apart,
//               LBO unused; the k-th 16-column slice starts 32 k bytes into its panel.
//   MN-major    V (the B of O += P V, with the key dimension as K and the head dim as N stored
//               contiguously; imm-trans-b = 1): 64 N-columns per 128-byte row, the next 64
//               N-columns (the next panel) LBO = rows * 128 bytes on, groups of 8 keys SBO = 1024
//               bytes apart; the k-th slice of 16 keys starts 2048 k bytes in.
//   fragments   m64nNk16, thread tid of the warpgroup (warp w = tid / 32): accumulator register
//               i holds row 16 w + g + 8 [(i / 2) odd], column 8 (i / 4) + 2 t + (i & 1), and the
//               A operand from registers is mma.sync's m16n8k16 A fragment (mma_layout.h) on rows
//               16 w .. 16 w + 15: so S's registers 8k .. 8k + 7 ARE, pairwise packed, the A
//               operand of keys 16k .. 16k + 15 (FlashAttention-3 keeps P in registers this way).
// Plain C++ (CPLAB_HD): tests/test_wgmma_layout.cpp checks on the CPU, with its own emulation of
// TMA's swizzled writes and of wgmma's descriptor reads written from the same documents, that these
// maps multiply Q K^T and P V correctly.
// What it is not: the instructions (wgmma.cuh), or a layout algebra (CuTe's GMMA atoms do that).
#pragma once

#include <cstdint>

#include "core/hd.h"
#include "mma_layout.h"

namespace cplab::wgmma {

using mma::RC;

constexpr int kPanelCols = 64;     // 16-bit elements per 128-byte swizzled row
constexpr std::uint32_t kRowBytes = 128;
constexpr std::uint32_t kAtomBytes = 1024;  // 8 rows: one swizzle pattern, the SBO of every operand

// 128-byte swizzle of a byte offset from a 1024-aligned base: bits 4..6 ^= bits 7..9
CPLAB_HD constexpr std::uint32_t swizzle128(std::uint32_t off) { return off ^ ((off >> 3) & 0x70u); }

// byte offset of panel p (columns [64 p, 64 p + 64)) of a [rows][D] tile: where its TMA box lands
CPLAB_HD constexpr std::uint32_t panel_offset(int rows, int p) {
  return static_cast<std::uint32_t>(p) * static_cast<std::uint32_t>(rows) * kRowBytes;
}

// byte offset of element (r, c) of a [rows][D] tile stored as swizzled panels (see above)
CPLAB_HD constexpr std::uint32_t tile_offset(int rows, int r, int c) {
  return panel_offset(rows, c / kPanelCols) + swizzle128(static_cast<std::uint32_t>(r) * kRowBytes + static_cast<std::uint32_t>(c % kPanelCols) * 2u);
}

// the 64-bit wgmma matrix descriptor: start address, LBO and SBO in bytes (encoded >> 4, 14 bits
// each, of an address below 256 KB), base offset 0, swizzle mode 1 (128 bytes)
CPLAB_HD constexpr std::uint64_t desc_encode(std::uint32_t start, std::uint32_t lbo, std::uint32_t sbo) {
  const auto enc = [](std::uint32_t x) { return static_cast<std::uint64_t>((x & 0x3FFFFu) >> 4); };
  return enc(start) | (enc(lbo) << 16) | (enc(sbo) << 32) | (std::uint64_t{1} << 62);
}

// K-major operand: rows [row0, row0 + 64 or N) and columns [16 k, 16 k + 16) of the tile at shared
// address `tile` (rows x D, row0 a multiple of 8)
CPLAB_HD constexpr std::uint64_t desc_k_major(std::uint32_t tile, int rows, int row0, int k) {
  const std::uint32_t start = tile + panel_offset(rows, 16 * k / kPanelCols) + static_cast<std::uint32_t>(row0) * kRowBytes + static_cast<std::uint32_t>((16 * k) % kPanelCols) * 2u;
  return desc_encode(start, 16u, kAtomBytes);
}

// MN-major operand (imm-trans-b = 1): K rows [16 k, 16 k + 16) of the tile at `tile` (rows x D),
// all D columns as N
CPLAB_HD constexpr std::uint64_t desc_mn_major(std::uint32_t tile, int rows, int k) {
  return desc_encode(tile + static_cast<std::uint32_t>(16 * k) * kRowBytes, panel_offset(rows, 1), kAtomBytes);
}

// accumulator register i (0 .. N/2 - 1) of thread tid (0..127) of an m64nNk16 product
CPLAB_HD constexpr RC frag_d(int tid, int i) {
  const int warp = tid / 32, lane = tid % 32;
  return {16 * warp + mma::group_id(lane) + 8 * ((i >> 1) & 1), 8 * (i >> 2) + 2 * mma::thread_in_group(lane) + (i & 1)};
}

// element e (0..1) of A register r (0..3) of thread tid: {row 0..63, k 0..15}
CPLAB_HD constexpr RC frag_a(int tid, int r, int e) {
  const RC x = mma::frag_a(tid % 32, r, e);
  return {16 * (tid / 32) + x.row, x.col};
}

// which accumulator registers of S make A register r of key slice k: (8 k + 2 r, 8 k + 2 r + 1),
// low half first
CPLAB_HD constexpr int p_from_s(int k, int r) { return 8 * k + 2 * r; }

}  // namespace cplab::wgmma
