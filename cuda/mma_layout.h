// mma_layout.h: which matrix element each lane of a warp holds or addresses, for the mma.sync
// m16n8k16 (bf16/fp16 in, fp32 accumulate) and ldmatrix.m8n8.x4 instructions the v2 kernels use.
//
// What it is: plain index maps, written from the PTX ISA's fragment figures (groupID = lane / 4,
// threadID_in_group = lane % 4):
//   C/D (16 x 8, fp32)  c[i]: row g + 8 [i >= 2], col 2 t + (i & 1)
//   A (16 x 16, row)    registers r0..r3 hold element pairs (a0 a1) (a2 a3) (a4 a5) (a6 a7):
//                       row g + 8 [r odd], cols 2 t + {0, 1} + 8 [r >= 2]
//   B (16 x 8, col)     registers r0, r1 hold (b0 b1) (b2 b3): k rows 2 t + {0, 1} + 8 r, col g
// and, for ldmatrix.x4 (lanes 8j..8j+7 give the row addresses of 8x8 matrix j, which lands in
// register j), the row and column each lane must address so that the four registers ARE the
// fragment wanted:
//   ldsm_a        A from a row-major [m][k] tile                (no .trans)
//   ldsm_b_rows   B for two n-tiles from an [n][k] tile (K rows for Q K^T)   (no .trans)
//   ldsm_b_trans  B for two n-tiles from a [k][n] tile (V rows for P V)      (.trans)
//   ldsm_a_trans  A from a [k][m] tile (dS^T rows for dS K)                  (.trans)
// Plain C++ (CPLAB_HD): tests/test_mma_layout.cpp checks on the CPU, with an emulation of the two
// instructions written from the PTX definitions, that these maps multiply matrices correctly, and
// that the FA2 trick (an S accumulator reused as the A operand of P V) holds.
// What it is not: the instructions (mma.cuh), or a general layout algebra (CuTe does that).
#pragma once

#include "core/hd.h"

namespace cplab::mma {

struct RC {
  int row, col;
};

CPLAB_HD constexpr int group_id(int lane) { return lane / 4; }
CPLAB_HD constexpr int thread_in_group(int lane) { return lane % 4; }

// accumulator element i in 0..3 of a 16x8 C/D fragment
CPLAB_HD constexpr RC frag_c(int lane, int i) { return {group_id(lane) + 8 * (i >= 2 ? 1 : 0), 2 * thread_in_group(lane) + (i & 1)}; }
// element e in 0..1 of A register r in 0..3 (16x16)
CPLAB_HD constexpr RC frag_a(int lane, int r, int e) {
  return {group_id(lane) + 8 * (r & 1), 2 * thread_in_group(lane) + e + 8 * (r >= 2 ? 1 : 0)};
}
// element e in 0..1 of B register r in 0..1 (16x8): {k row, n col}
CPLAB_HD constexpr RC frag_b(int lane, int r, int e) { return {2 * thread_in_group(lane) + e + 8 * r, group_id(lane)}; }

// ldmatrix.x4 address of `lane`, as {row, col} of the tile in shared memory
CPLAB_HD constexpr RC ldsm_a(int lane) { return {lane % 16, (lane / 16) * 8}; }
CPLAB_HD constexpr RC ldsm_b_rows(int lane) { return {lane % 8 + (lane / 16) * 8, ((lane / 8) % 2) * 8}; }
CPLAB_HD constexpr RC ldsm_b_trans(int lane) { return {lane % 8 + ((lane / 8) % 2) * 8, (lane / 16) * 8}; }
CPLAB_HD constexpr RC ldsm_a_trans(int lane) { return {lane % 8 + (lane / 16) * 8, ((lane / 8) % 2) * 8}; }

}  // namespace cplab::mma
