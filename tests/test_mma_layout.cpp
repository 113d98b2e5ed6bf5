// test_mma_layout.cpp: the v2 kernels' lane maps (cuda/mma_layout.h) on the CPU, against an
// emulation of ldmatrix.x4 and mma.sync.m16n8k16 written here from the PTX ISA's definitions.
// What it checks: the fragment maps are the PTX ones and cover every element once; and the three
// products the kernels form from shared-memory tiles, Q K^T, P V (with the S accumulator reused as
// P, FlashAttention-2's register trick) and dS K (dS stored transposed), come out right.
// What it is not: a test of the instructions (that needs a GPU: tests/cuda/test_attention.cpp).
#include <doctest/doctest.h>

#include <array>
#include <random>
#include <set>
#include <vector>

#include "../cuda/mma_layout.h"

using namespace cplab::mma;

namespace {

using Tile = std::vector<std::vector<double>>;  // [row][col]
using Regs = std::array<std::array<double, 2>, 4>;  // per lane: 4 registers of 2 halves

Tile random_tile(int rows, int cols, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<int> u(-4, 4);  // small integers: every product exact
  Tile t(static_cast<size_t>(rows), std::vector<double>(static_cast<size_t>(cols)));
  for (auto& r : t)
    for (auto& x : r) x = u(rng);
  return t;
}

// ldmatrix.sync.aligned.m8n8.x4[.trans].b16 (PTX ISA, "Warp-level matrix load instruction"):
// lanes 8j..8j+7 give the addresses of rows 0..7 of matrix j; register j of lane t receives
// row t/4, elements 2(t%4), 2(t%4)+1 of matrix j, or with .trans rows 2(t%4), 2(t%4)+1 of column t/4.
std::array<Regs, 32> ldmatrix_x4(const Tile& tile, int r0, int c0, RC (*addr)(int), bool trans) {
  std::array<Regs, 32> out{};
  for (int j = 0; j < 4; ++j) {
    double m[8][8];
    for (int r = 0; r < 8; ++r) {
      const RC a = addr(8 * j + r);
      for (int c = 0; c < 8; ++c) m[r][c] = tile[static_cast<size_t>(r0 + a.row)][static_cast<size_t>(c0 + a.col + c)];
    }
    for (int t = 0; t < 32; ++t)
      for (int e = 0; e < 2; ++e)
        out[static_cast<size_t>(t)][static_cast<size_t>(j)][static_cast<size_t>(e)] =
            trans ? m[2 * (t % 4) + e][t / 4] : m[t / 4][2 * (t % 4) + e];
  }
  return out;
}

// PTX ISA "Matrix fragments for mma.m16n8k16 with floating point type", transcribed independently
RC ptx_a(int lane, int i) {  // a_i, i in 0..7
  const int g = lane >> 2, t = lane % 4;
  return {(i < 2 || (i >= 4 && i < 6)) ? g : g + 8, i < 4 ? t * 2 + (i & 1) : t * 2 + (i & 1) + 8};
}
RC ptx_b(int lane, int i) {  // b_i, i in 0..3: {row (k), col (n)}
  const int g = lane >> 2, t = lane % 4;
  return {i < 2 ? t * 2 + (i & 1) : t * 2 + (i & 1) + 8, g};
}
RC ptx_c(int lane, int i) {  // c_i, i in 0..3
  const int g = lane >> 2, t = lane % 4;
  return {i < 2 ? g : g + 8, t * 2 + (i & 1)};
}

// mma.m16n8k16: gather A (16x16) and B (16x8) from the lanes by the PTX maps, multiply, scatter C
void mma(std::array<std::array<double, 4>, 32>& c, const std::array<Regs, 32>& a, const std::array<std::array<double, 2>, 2>* b) {
  double A[16][16], B[16][8];
  for (int l = 0; l < 32; ++l) {
    for (int i = 0; i < 8; ++i) {
      const RC p = ptx_a(l, i);
      A[p.row][p.col] = a[static_cast<size_t>(l)][static_cast<size_t>(i / 2)][static_cast<size_t>(i % 2)];
    }
    for (int i = 0; i < 4; ++i) {
      const RC p = ptx_b(l, i);
      B[p.row][p.col] = b[l][static_cast<size_t>(i / 2)][static_cast<size_t>(i % 2)];
    }
  }
  for (int l = 0; l < 32; ++l)
    for (int i = 0; i < 4; ++i) {
      const RC p = ptx_c(l, i);
      double s = 0;
      for (int k = 0; k < 16; ++k) s += A[p.row][k] * B[k][p.col];
      c[static_cast<size_t>(l)][static_cast<size_t>(i)] += s;
    }
}

// B operand of n-tile `which` (0 or 1) out of an x4 load that carries two n-tiles
std::array<std::array<std::array<double, 2>, 2>, 32> b_of(const std::array<Regs, 32>& r, int which) {
  std::array<std::array<std::array<double, 2>, 2>, 32> b{};
  for (size_t l = 0; l < 32; ++l) b[l] = {r[l][static_cast<size_t>(2 * which)], r[l][static_cast<size_t>(2 * which + 1)]};
  return b;
}

}  // namespace

TEST_CASE("mma layout: fragment maps are the PTX ones and cover every element once") {
  std::set<std::pair<int, int>> a, b, c;
  for (int l = 0; l < 32; ++l) {
    for (int r = 0; r < 4; ++r)
      for (int e = 0; e < 2; ++e) {
        const RC x = frag_a(l, r, e), y = ptx_a(l, 2 * r + e);
        CHECK(x.row == y.row);
        CHECK(x.col == y.col);
        a.insert({x.row, x.col});
      }
    for (int r = 0; r < 2; ++r)
      for (int e = 0; e < 2; ++e) {
        const RC x = frag_b(l, r, e), y = ptx_b(l, 2 * r + e);
        CHECK(x.row == y.row);
        CHECK(x.col == y.col);
        b.insert({x.row, x.col});
      }
    for (int i = 0; i < 4; ++i) {
      const RC x = frag_c(l, i), y = ptx_c(l, i);
      CHECK(x.row == y.row);
      CHECK(x.col == y.col);
      c.insert({x.row, x.col});
    }
  }
  CHECK(a.size() == 256);
  CHECK(b.size() == 128);
  CHECK(c.size() == 128);
}

TEST_CASE("mma layout: Q K^T, then P V with S reused as P, then dS K with dS stored transposed") {
  // a warp's 16 query rows x 16 head dims (one k-step), 16 keys (two n-tiles), 16 value dims
  const Tile Q = random_tile(32, 48, 1), K = random_tile(40, 48, 2), V = random_tile(40, 48, 3);
  const int q0 = 16, k0 = 8, d0 = 16, kq = 24, kv = 8;  // offsets into the tiles, as in the kernels
  // S = Q[q0:q0+16, d0:d0+16] K[k0:k0+16, d0:d0+16]^T
  const auto qa = ldmatrix_x4(Q, q0, d0, ldsm_a, false);
  const auto kb = ldmatrix_x4(K, k0, d0, ldsm_b_rows, false);
  std::array<std::array<std::array<double, 4>, 32>, 2> s{};
  for (int nt = 0; nt < 2; ++nt) mma(s[static_cast<size_t>(nt)], qa, b_of(kb, nt).data());
  for (int l = 0; l < 32; ++l)
    for (int nt = 0; nt < 2; ++nt)
      for (int i = 0; i < 4; ++i) {
        const RC p = frag_c(l, i);
        double want = 0;
        for (int e = 0; e < 16; ++e) want += Q[static_cast<size_t>(q0 + p.row)][static_cast<size_t>(d0 + e)] * K[static_cast<size_t>(k0 + nt * 8 + p.col)][static_cast<size_t>(d0 + e)];
        CHECK(s[static_cast<size_t>(nt)][static_cast<size_t>(l)][static_cast<size_t>(i)] == want);
      }
  // P V: the A registers are the S accumulators of n-tiles 0 and 1 (c0 c1 | c2 c3 of each)
  std::array<Regs, 32> pa{};
  for (size_t l = 0; l < 32; ++l) {
    pa[l][0] = {s[0][l][0], s[0][l][1]};
    pa[l][1] = {s[0][l][2], s[0][l][3]};
    pa[l][2] = {s[1][l][0], s[1][l][1]};
    pa[l][3] = {s[1][l][2], s[1][l][3]};
  }
  const auto vb = ldmatrix_x4(V, kq, kv, ldsm_b_trans, true);  // V rows kq.. (keys), dims kv..
  for (int nt = 0; nt < 2; ++nt) {
    std::array<std::array<double, 4>, 32> o{};
    mma(o, pa, b_of(vb, nt).data());
    for (int l = 0; l < 32; ++l)
      for (int i = 0; i < 4; ++i) {
        const RC p = frag_c(l, i);
        double want = 0;
        for (int j = 0; j < 16; ++j) {  // S[row][j] V[kq + j][kv + nt*8 + col]
          const RC sj{p.row, j};
          double sv = 0;
          for (int e = 0; e < 16; ++e) sv += Q[static_cast<size_t>(q0 + sj.row)][static_cast<size_t>(d0 + e)] * K[static_cast<size_t>(k0 + j)][static_cast<size_t>(d0 + e)];
          want += sv * V[static_cast<size_t>(kq + j)][static_cast<size_t>(kv + nt * 8 + p.col)];
        }
        CHECK(o[static_cast<size_t>(l)][static_cast<size_t>(i)] == want);
      }
  }
  // dS K with dS^T in shared memory: T[k][m] = dS[m][k]; A from ldsm_a_trans, B = K rows via .trans
  const Tile dST = random_tile(32, 40, 4);  // [key][query]
  const int ks = 16, ms = 8;
  const auto da = ldmatrix_x4(dST, ks, ms, ldsm_a_trans, true);
  const auto kt = ldmatrix_x4(K, ks, 32, ldsm_b_trans, true);  // K[key][dim], dims 32..47
  for (int nt = 0; nt < 2; ++nt) {
    std::array<std::array<double, 4>, 32> g{};
    mma(g, da, b_of(kt, nt).data());
    for (int l = 0; l < 32; ++l)
      for (int i = 0; i < 4; ++i) {
        const RC p = frag_c(l, i);
        double want = 0;
        for (int j = 0; j < 16; ++j)
          want += dST[static_cast<size_t>(ks + j)][static_cast<size_t>(ms + p.row)] * K[static_cast<size_t>(ks + j)][static_cast<size_t>(32 + nt * 8 + p.col)];
        CHECK(g[static_cast<size_t>(l)][static_cast<size_t>(i)] == want);
      }
  }
}
