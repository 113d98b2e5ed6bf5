// test_emu_hopper.cpp: the emulator's Hopper instructions (wgmma_emu.h, tma_emu.h) on tiny
// kernels written here with cuda/wgmma.cuh's own functions, so the model the v3 cases rely on is
// itself checked: a TMA box lands where wgmma_layout.h says, zero-filled beyond the tensor, counted
// in bytes on its mbarrier, not before (Async::late) a wait needs it; try_wait's phase parity;
// wgmma accumulators read as NaN until the wait_group that retires their group, then hold A B;
// the tensor-map encoder refuses what the driver refuses; named barriers hand a buffer between a
// producer and a consumer warpgroup; setmaxnreg.inc waits for the registers another warpgroup's dec
// returns.
// What it is not: a test of the hardware (nothing here has run on a GPU), or of kernel v3
// (test_kernel_emu_v3.cpp and the mutants of mutants.cmake).
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include "emu.h"
#include "tensor_map.h"
#include "wgmma.cuh"
#include "wgmma_layout.h"

using namespace cplab::cuda::detail;
namespace wg = cplab::wgmma;

namespace {

// a 1024-aligned spot in the block's shared memory (the base address is seeded per block)
unsigned char* aligned(unsigned char* raw) { return raw + ((1024 - (smem_addr(raw) & 1023)) & 1023); }

std::uint16_t bf16_bits(float x) {  // exact for the small integers used here
  std::uint32_t u;
  std::memcpy(&u, &x, 4);
  return static_cast<std::uint16_t>(u >> 16);
}

}  // namespace

TEST_CASE("emulator: a TMA box lands swizzled, zero-filled beyond the tensor, counted in bytes, when a wait needs it") {
  // x (rows 10, heads 2, d 64) of 16-bit ids; the box: 16 rows of head 1 from row 0 (rows 10..15 beyond the tensor)
  std::vector<std::uint16_t> x(10 * 2 * 64);
  for (size_t e = 0; e < x.size(); ++e) x[e] = static_cast<std::uint16_t>(e + 1);
  const CUtensorMap map = tma_tile_map(cplab::DType::bf16, x.data(), 10, 2, 64, 16);
  std::vector<std::uint16_t> got(16 * 64);
  bool before = false, parity0 = false, parity1_done = true;
  cplab_emu::async_mode = cplab_emu::Async::late;
  cplab_emu::launch(dim3(1), 32, 4096 + 1024, [&] {
    unsigned char* tile = aligned(cplab_emu::block_smem());
    auto* bar = reinterpret_cast<std::uint64_t*>(tile + 2048);
    if (threadIdx.x == 0) {
      mbar_init(bar, 1);
      mbar_expect_tx(bar, 16 * 64 * 2);
      tma_load_3d(tile, &map, bar, 0, 1, 0);
      before = tile[0] == 0xFF && tile[2047] == 0xFF;  // late: nothing landed yet
      parity1_done = mbar_try_wait(bar, 1);           // phase "-1" (parity 1) counts as completed
    }
    __syncwarp();
    mbar_wait(bar, 0);
    if (threadIdx.x == 0) {
      parity0 = mbar_try_wait(bar, 0);
      for (int r = 0; r < 16; ++r)
        for (int c = 0; c < 64; ++c) std::memcpy(&got[static_cast<size_t>(r * 64 + c)], tile + wg::tile_offset(16, r, c), 2);
    }
  });
  CHECK(before);
  CHECK(parity1_done);
  CHECK(parity0);
  int bad = 0;
  for (int r = 0; r < 16; ++r)
    for (int c = 0; c < 64; ++c) bad += got[static_cast<size_t>(r * 64 + c)] != (r < 10 ? x[static_cast<size_t>((r * 2 + 1) * 64 + c)] : 0);
  CHECK(bad == 0);
}

TEST_CASE("emulator: wgmma accumulators are NaN until the wait_group that retires their group") {
  // A (64 x 16) and B (N 128 x 16) K-major, 128-byte swizzled as TMA writes them; two groups into two accumulators
  auto a = [](int m, int k) { return static_cast<float>((m * 3 + k) % 7 - 3); };
  auto b = [](int n, int k) { return static_cast<float>((n + 2 * k) % 5 - 2); };
  std::vector<float> out1(128 * 64), out2(128 * 64);
  int nan_before = 0, nan_between = 0, final_between = 0;
  cplab_emu::launch(dim3(1), 128, 1024 + 64 * 128 + 128 * 128, [&] {
    unsigned char* base = aligned(cplab_emu::block_smem());
    const std::uint32_t sa = smem_addr(base), sb = sa + 64 * 128;
    if (threadIdx.x == 0) {
      for (int m = 0; m < 64; ++m)
        for (int k = 0; k < 16; ++k) {
          const std::uint16_t v = bf16_bits(a(m, k));
          std::memcpy(base + wg::tile_offset(64, m, k), &v, 2);
        }
      for (int n = 0; n < 128; ++n)
        for (int k = 0; k < 16; ++k) {
          const std::uint16_t v = bf16_bits(b(n, k));
          std::memcpy(base + 64 * 128 + wg::tile_offset(128, n, k), &v, 2);
        }
    }
    __syncthreads();
    float d1[64], d2[64];
    for (int i = 0; i < 64; ++i) d1[i] = 1.f, d2[i] = 2.f;
    wgmma_fence();
    wgmma_ss<128, __nv_bfloat16>(d1, wg::desc_k_major(sa, 64, 0, 0), wg::desc_k_major(sb, 128, 0, 0));
    wgmma_commit();
    wgmma_fence();
    wgmma_ss<128, __nv_bfloat16>(d2, wg::desc_k_major(sa, 64, 0, 0), wg::desc_k_major(sb, 128, 0, 0));
    wgmma_commit();
    if (std::isnan(d1[0]) && std::isnan(d2[63])) ++nan_before;
    wgmma_wait<1>();  // the first group only
    if (std::isnan(d2[5])) ++nan_between;
    if (!std::isnan(d1[5])) ++final_between;
    wgmma_wait<0>();
    for (int i = 0; i < 64; ++i) out1[threadIdx.x * 64 + static_cast<unsigned>(i)] = d1[i], out2[threadIdx.x * 64 + static_cast<unsigned>(i)] = d2[i];
  });
  CHECK(nan_before == 128);
  CHECK(nan_between == 128);
  CHECK(final_between == 128);
  int bad = 0;
  for (int tid = 0; tid < 128; ++tid)
    for (int i = 0; i < 64; ++i) {
      const wg::RC x = wg::frag_d(tid, i);
      float want = 0;
      for (int k = 0; k < 16; ++k) want += a(x.row, k) * b(x.col, k);
      bad += out1[static_cast<size_t>(tid * 64 + i)] != want + 1.f || out2[static_cast<size_t>(tid * 64 + i)] != want + 2.f;
    }
  CHECK(bad == 0);
}

TEST_CASE("emulator: the tensor-map encoder refuses what cuTensorMapEncodeTiled refuses") {
  alignas(16) static std::uint16_t x[64 * 64];
  CUtensorMap m;
  const cuuint64_t dims[3] = {64, 1, 64}, strides[2] = {128, 128}, odd[2] = {120, 128};
  const cuuint32_t box[3] = {64, 1, 64}, wide[3] = {128, 1, 64}, one[3] = {1, 1, 1};
  const auto enc = [&](void* p, const cuuint64_t* s, const cuuint32_t* b) {
    return cplab_emu::encode_tiled(&m, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 3, p, dims, s, b, one, CU_TENSOR_MAP_INTERLEAVE_NONE,
                                   CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_NONE, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  };
  CHECK(enc(x, strides, box) == CUDA_SUCCESS);
  CHECK(enc(x + 1, strides, box) == CUDA_ERROR_INVALID_VALUE);  // global address not 16-byte aligned
  CHECK(enc(x, odd, box) == CUDA_ERROR_INVALID_VALUE);          // a stride not a multiple of 16
  CHECK(enc(x, strides, wide) == CUDA_ERROR_INVALID_VALUE);     // 256-byte inner box under the 128-byte swizzle
}

TEST_CASE("emulator: named barriers hand a buffer from a producer warpgroup to a consumer warpgroup") {
  // warpgroup 0 writes round r into shared memory, arrives on barrier 1 ("full"); warpgroup 1 syncs
  // on 1, reads, arrives on barrier 2 ("empty"), on which the producer syncs before the next round
  for (unsigned s : {1u, 2u, 3u, 4u}) {
    cplab_emu::seed(s);
    std::vector<int> seen;
    cplab_emu::launch(dim3(1), 256, 64, [&] {
      int* buf = reinterpret_cast<int*>(cplab_emu::block_smem());
      const bool producer = threadIdx.x < 128;
      for (int r = 0; r < 6; ++r) {
        if (producer) {
          if (r > 0) named_barrier_sync(2, 256);
          if (threadIdx.x == 0) buf[0] = 100 + r;
          named_barrier_arrive(1, 256);
        } else {
          named_barrier_sync(1, 256);
          if (threadIdx.x == 128) seen.push_back(buf[0]);
          if (r < 5) named_barrier_arrive(2, 256);  // no round after the last: an arrival left on a barrier aborts
        }
      }
    });
    CHECK(seen == std::vector<int>{100, 101, 102, 103, 104, 105});
  }
}

TEST_CASE("emulator: setmaxnreg.inc waits for the registers a dec returns") {
  // three warpgroups at 168 registers: 0 (producer) gives 128 back (dec to 40), 1 and 2 take 64 more each
  for (unsigned s : {1u, 2u, 3u, 4u}) {
    cplab_emu::seed(s);
    bool dec_done = false;
    int inc_after_dec = 0;
    std::vector<int> counts;
    cplab_emu::regs_per_thread = 168;
    cplab_emu::launch(dim3(1), 384, 64, [&] {
      if (threadIdx.x < 128) {
        setmaxnreg_dec<40>();
        dec_done = true;
      } else {
        setmaxnreg_inc<232>();
        if (threadIdx.x % 128 == 0) inc_after_dec += dec_done;
      }
      __syncthreads();
      if (threadIdx.x == 0)
        for (const auto& g : cplab_emu::wg_regs) counts.push_back(g.cur);
    });
    cplab_emu::regs_per_thread = 0;
    CHECK(inc_after_dec == 2);
    CHECK(counts == std::vector<int>{40, 232, 232});
  }
}
