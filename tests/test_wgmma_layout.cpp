// test_wgmma_layout.cpp: the v3 kernel's shared-memory layout, wgmma descriptors and fragment maps
// (cuda/wgmma_layout.h) on the CPU, against an emulation of TMA's 128-byte-swizzled box writes and
// of wgmma.mma_async's operand reads written here from the PTX ISA and the CUDA programming guide.
// What it checks: the descriptors the kernel builds for Q, K (K-major) and V (MN-major) address
// exactly the elements TMA put there, for d = 64 and 128 and key tiles of 64 and 128; that the
// accumulator map covers a 64 x N tile once; and that the two products the kernel forms, S = Q K^T
// for each of two warpgroups and O = P V with P taken from S's registers, come out right.
// What it is not: a test of the instructions or of TMA itself (that needs an sm_90 GPU:
// tests/cuda/test_attention.cpp runs kernel v3 there).
#include <doctest/doctest.h>

#include <cstdint>
#include <limits>
#include <random>
#include <set>
#include <utility>
#include <vector>

#include "../cuda/wgmma_layout.h"

using namespace cplab::wgmma;

namespace {

using Mat = std::vector<std::vector<double>>;  // [row][col]

Mat random_mat(int rows, int cols, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<int> u(-4, 4);  // small integers: every sum exact in double
  Mat m(static_cast<size_t>(rows), std::vector<double>(static_cast<size_t>(cols)));
  for (auto& r : m)
    for (auto& x : r) x = u(rng);
  return m;
}

// Shared memory as 16-bit slots holding doubles; NaN marks a slot nothing wrote.
struct Smem {
  std::vector<double> slot;
  explicit Smem(std::uint32_t bytes) : slot(bytes / 2, std::numeric_limits<double>::quiet_NaN()) {}
  double& at(std::uint32_t byte) { return slot.at(byte / 2); }
};

// TMA, cp.async.bulk.tensor with CU_TENSOR_MAP_SWIZZLE_128B and a box of 64 columns x `rows` rows
// (programming guide, "TMA swizzle"): row r of the box fills bytes [128 r, 128 r + 128) of the
// destination, with its 16-byte chunk j stored at chunk j XOR (r mod 8). One box per 64 columns.
void tma_tile(Smem& s, std::uint32_t dst, const Mat& g, int rows, int d) {
  for (int p = 0; p < d / 64; ++p) {
    const std::uint32_t box = dst + static_cast<std::uint32_t>(p * rows * 128);
    for (int r = 0; r < rows; ++r)
      for (int c = 0; c < 64; ++c) {
        const int byte = 2 * c, chunk = (byte / 16) ^ (r % 8);
        s.at(box + static_cast<std::uint32_t>(r * 128 + chunk * 16 + byte % 16)) = g[static_cast<size_t>(r)][static_cast<size_t>(64 * p + c)];
      }
  }
}

// A wgmma matrix descriptor, decoded (PTX ISA "Matrix Descriptor Format").
struct Desc {
  std::uint32_t start, lbo, sbo;
  int base_offset, mode;
};
Desc decode(std::uint64_t x) {
  return {static_cast<std::uint32_t>(x & 0x3FFF) << 4, static_cast<std::uint32_t>((x >> 16) & 0x3FFF) << 4,
          static_cast<std::uint32_t>((x >> 32) & 0x3FFF) << 4, static_cast<int>((x >> 49) & 7), static_cast<int>(x >> 62)};
}

// Element (mn, k) of an operand, 16-bit type (T = 8), 128-byte swizzle, from the PTX canonical
// layouts: K-major ((8,m),(T,2k)):((8T,SBO),(1,T)), MN-major ((T,8,m),(8,k)):((1,T,LBO),(8T,SBO)),
// in elements (LBO, SBO given in bytes), then Swizzle<3,4,3> on the byte address.
double operand(Smem& s, const Desc& d, bool mn_major, int mn, int k) {
  REQUIRE(d.mode == 1);         // 128-byte swizzle
  REQUIRE(d.base_offset == 0);  // patterns 1024-aligned
  const std::uint32_t off = mn_major ? static_cast<std::uint32_t>(2 * (mn % 64)) + static_cast<std::uint32_t>(mn / 64) * d.lbo +
                                           static_cast<std::uint32_t>(128 * (k % 8)) + static_cast<std::uint32_t>(k / 8) * d.sbo
                                     : static_cast<std::uint32_t>(128 * (mn % 8)) + static_cast<std::uint32_t>(mn / 8) * d.sbo +
                                           static_cast<std::uint32_t>(2 * k);
  const std::uint32_t a = d.start + off;
  const double v = s.at(a ^ (((a >> 7) & 7u) << 4));
  REQUIRE(v == v);  // a slot TMA wrote
  return v;
}

// PTX figures "WGMMA .m64nNk16 register fragment layout" for D and for A, transcribed here.
std::pair<int, int> ptx_d(int tid, int i) {
  const int w = tid / 32, l = tid % 32;
  return {16 * w + l / 4 + ((i % 4) >= 2 ? 8 : 0), 8 * (i / 4) + 2 * (l % 4) + i % 2};
}
std::pair<int, int> ptx_a(int tid, int i) {  // a_i, i in 0..7: {row, k}
  const int w = tid / 32, l = tid % 32;
  return {16 * w + l / 4 + ((i % 4) >= 2 ? 8 : 0), 2 * (l % 4) + i % 2 + (i >= 4 ? 8 : 0)};
}

using Regs = std::vector<std::vector<double>>;  // [tid][register]

// wgmma.mma_async.m64nNk16, D += A B; A (64 x 16) from a K-major descriptor or from a[tid][0..7]
// (a_i as the PTX numbers them), B (16 x N) from a descriptor, K-major or (trans_b) MN-major
void wgmma(Regs& acc, int n, Smem& s, const std::uint64_t* desc_a, const Regs* a, std::uint64_t desc_b, bool trans_b) {
  Mat A(64, std::vector<double>(16)), B(16, std::vector<double>(static_cast<size_t>(n)));
  if (desc_a) {
    const Desc d = decode(*desc_a);
    for (int m = 0; m < 64; ++m)
      for (int k = 0; k < 16; ++k) A[static_cast<size_t>(m)][static_cast<size_t>(k)] = operand(s, d, false, m, k);
  } else {
    for (int tid = 0; tid < 128; ++tid)
      for (int i = 0; i < 8; ++i) {
        const auto [m, k] = ptx_a(tid, i);
        A[static_cast<size_t>(m)][static_cast<size_t>(k)] = (*a)[static_cast<size_t>(tid)][static_cast<size_t>(i)];
      }
  }
  const Desc db = decode(desc_b);
  for (int k = 0; k < 16; ++k)
    for (int c = 0; c < n; ++c) B[static_cast<size_t>(k)][static_cast<size_t>(c)] = operand(s, db, trans_b, c, k);
  for (int tid = 0; tid < 128; ++tid)
    for (int i = 0; i < n / 2; ++i) {
      const auto [m, c] = ptx_d(tid, i);
      for (int k = 0; k < 16; ++k)
        acc[static_cast<size_t>(tid)][static_cast<size_t>(i)] += A[static_cast<size_t>(m)][static_cast<size_t>(k)] * B[static_cast<size_t>(k)][static_cast<size_t>(c)];
    }
}

// The v3 forward's two products for one tile: Q (128 x d: two warpgroups of 64 rows), K and V
// (bc x d), laid out as the kernel lays them out, multiplied with the kernel's descriptors.
void check_products(int d, int bc) {
  const Mat Q = random_mat(128, d, 1), K = random_mat(bc, d, 2), V = random_mat(bc, d, 3);
  const std::uint32_t q_at = 0, k_at = static_cast<std::uint32_t>(128 * d * 2), v_at = k_at + static_cast<std::uint32_t>(bc * d * 2);
  Smem s(v_at + static_cast<std::uint32_t>(bc * d * 2));
  tma_tile(s, q_at, Q, 128, d);
  tma_tile(s, k_at, K, bc, d);
  tma_tile(s, v_at, V, bc, d);
  for (int r = 0; r < bc; ++r)  // the kernel's own map of a tile agrees with TMA's
    for (int c = 0; c < d; ++c) REQUIRE(s.at(k_at + tile_offset(bc, r, c)) == K[static_cast<size_t>(r)][static_cast<size_t>(c)]);

  for (int wg = 0; wg < 2; ++wg) {
    Regs S(128, std::vector<double>(static_cast<size_t>(bc / 2), 0.0));
    for (int k = 0; k < d / 16; ++k) {
      const std::uint64_t da = desc_k_major(q_at, 128, 64 * wg, k);
      wgmma(S, bc, s, &da, nullptr, desc_k_major(k_at, bc, 0, k), false);
    }
    int bad = 0;
    for (int tid = 0; tid < 128; ++tid)
      for (int i = 0; i < bc / 2; ++i) {
        const RC x = frag_d(tid, i);
        double want = 0;
        for (int e = 0; e < d; ++e) want += Q[static_cast<size_t>(64 * wg + x.row)][static_cast<size_t>(e)] * K[static_cast<size_t>(x.col)][static_cast<size_t>(e)];
        bad += S[static_cast<size_t>(tid)][static_cast<size_t>(i)] != want;
      }
    CHECK_MESSAGE(bad == 0, "S = Q K^T: d = ", d, ", bc = ", bc, ", warpgroup ", wg);

    // O = P V with P = S (no softmax: the layout is what is tested), P from S's registers
    Regs O(128, std::vector<double>(static_cast<size_t>(d / 2), 0.0));
    for (int k = 0; k < bc / 16; ++k) {
      Regs a(128, std::vector<double>(8));
      for (int tid = 0; tid < 128; ++tid)
        for (int r = 0; r < 4; ++r)
          for (int e = 0; e < 2; ++e)
            a[static_cast<size_t>(tid)][static_cast<size_t>(2 * r + e)] = S[static_cast<size_t>(tid)][static_cast<size_t>(p_from_s(k, r) + e)];
      wgmma(O, d, s, nullptr, &a, desc_mn_major(v_at, bc, k), true);
    }
    bad = 0;
    for (int tid = 0; tid < 128; ++tid)
      for (int i = 0; i < d / 2; ++i) {
        const RC x = frag_d(tid, i);
        double want = 0;
        for (int c = 0; c < bc; ++c) {
          double sv = 0;
          for (int e = 0; e < d; ++e) sv += Q[static_cast<size_t>(64 * wg + x.row)][static_cast<size_t>(e)] * K[static_cast<size_t>(c)][static_cast<size_t>(e)];
          want += sv * V[static_cast<size_t>(c)][static_cast<size_t>(x.col)];
        }
        bad += O[static_cast<size_t>(tid)][static_cast<size_t>(i)] != want;
      }
    CHECK_MESSAGE(bad == 0, "O = P V: d = ", d, ", bc = ", bc, ", warpgroup ", wg);
  }
}

}  // namespace

TEST_CASE("wgmma layout: the accumulator and A maps are the PTX figures and cover a tile once") {
  for (int n : {64, 128}) {
    std::set<std::pair<int, int>> seen;
    for (int tid = 0; tid < 128; ++tid)
      for (int i = 0; i < n / 2; ++i) {
        const RC x = frag_d(tid, i);
        CHECK(std::make_pair(x.row, x.col) == ptx_d(tid, i));
        seen.insert({x.row, x.col});
      }
    CHECK(seen.size() == static_cast<size_t>(64 * n));
  }
  for (int tid = 0; tid < 128; ++tid)
    for (int r = 0; r < 4; ++r)
      for (int e = 0; e < 2; ++e) {
        const RC x = frag_a(tid, r, e);
        CHECK(std::make_pair(x.row, x.col) == ptx_a(tid, 2 * r + e));
      }
}

TEST_CASE("wgmma layout: descriptors encode what the PTX ISA's example says") {
  // 14-bit fields of (x & 0x3FFFF) >> 4; mode 1 (128-byte swizzle) in bits 62-63
  const Desc d = decode(desc_encode(0x1a40, 16, 1024));
  CHECK(d.start == 0x1a40);
  CHECK(d.lbo == 16);
  CHECK(d.sbo == 1024);
  CHECK(d.mode == 1);
  CHECK(d.base_offset == 0);
  CHECK(desc_encode(0, 0, 0) == (std::uint64_t{1} << 62));
  CHECK(swizzle128(7 * 128 + 16) == 7 * 128 + 16 * (1 ^ 7));
}

TEST_CASE("wgmma layout: S = Q K^T and O = P V from the kernel's descriptors and registers") {
  for (int d : {64, 128})
    for (int bc : {64, 128}) check_products(d, bc);
}
