// attention_v2_fwd.cu: tier 1 forward attention, FlashAttention-2 style, with mma.sync tensor cores.
//
// What it is: one block per (64 query rows, head), 4 warps of 16 rows each. Q is staged once and
// kept in registers as A fragments; K/V tiles of 64 keys are double-buffered in shared memory with
// cp.async (the next tile loads while this one is computed); S = Q K^T and O += P V use
// mma.sync.m16n8k16 (bf16/fp16 in, fp32 accumulate); P never leaves registers (the S accumulator
// is repacked as the A operand, mma_layout.h). Each thread keeps softmax_rules.h's FastRow (the
// kernels' exp2 fast path) for its two rows (g and g + 8 of its warp) with a partial l over its own
// columns; row maxima and l are combined across the 4 lanes of a row with shuffles. Masks: key
// tiles no row of the block can see are never loaded; tiles every row sees in full skip the
// per-element test; the others test each element against its row's key range (attention_tile.cuh
// mask_tile), in a loop of their own before the full tiles' loop, so the steady state carries no
// mask code. Shared-memory rows are padded by 16 bytes so the ldmatrix rows fall in different banks. Attention sinks (sinks != null): folded into each row as
// it is stored (attention_tile.cuh store_rows).
// What it is not: Hopper-native (wgmma + TMA is attention_v3_fwd.cu), or tuned on a
// GPU yet (block sizes are FA2's defaults for these head dims).
#include "attention_impl.cuh"
#include "attention_tile.cuh"
#include "mma.cuh"
#include "mma_layout.h"

#include <type_traits>

namespace cplab::cuda::detail {

namespace {

constexpr int kBr = 64, kBc = 64, kWarps = 4, kThreads = 32 * kWarps;

struct Dims {
  std::int64_t sq, sk, h, hk;
};

template <int D>
struct Smem {
  static constexpr int kLd = D + 8;  // padded row (elements)
  static constexpr int kTile = kBc * kLd;
  static constexpr size_t bytes(size_t elem) { return elem * static_cast<size_t>(kTile) * 5 + 4 * sizeof(int); }
};

template <int D, class T>
__global__ void __launch_bounds__(kThreads) fwd_kernel(const T* __restrict__ q, const T* __restrict__ k,
                                                       const T* __restrict__ v, Dims P, MaskRule mask, float scale,
                                                       T* __restrict__ o, float* __restrict__ lse,
                                                       const float* __restrict__ sinks) {
  CPLAB_DYNAMIC_SMEM_ALIGN16(unsigned char, raw);
  T* qs = reinterpret_cast<T*>(raw);
  // stage b's K and V tiles (arithmetic, not a pointer array: indexed by a runtime stage, an array
  // would live in local memory)
  const auto ks = [&](int b) { return qs + (1 + b) * Smem<D>::kTile; };
  const auto vs = [&](int b) { return qs + (3 + b) * Smem<D>::kTile; };
  int* red = reinterpret_cast<int*>(qs + 5 * Smem<D>::kTile);
  constexpr int kLd = Smem<D>::kLd;

  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = mma::group_id(lane), tg = mma::thread_in_group(lane);
  const std::int64_t q0 = static_cast<std::int64_t>(blockIdx.x) * kBr, i = blockIdx.y, kh = i / (P.h / P.hk);
  const BlockKeys bk = block_keys(mask, q0, kBr, P.sq, P.sk, kBc, red);
  const std::int64_t t_begin = bk.t_begin, t_end = bk.t_end;

  // this thread's two rows and their key ranges
  const std::int64_t row[2] = {q0 + warp * 16 + g, q0 + warp * 16 + g + 8};
  KeyRange kr[2];
  for (int x = 0; x < 2; ++x) kr[x] = row[x] < P.sq ? mask.keys(row[x], P.sk) : KeyRange{0, 0};

  FastRow st[2];
  const float c = scale * kLog2e;  // softmax_rules.h fast path: 2^(x c - m c) on raw logits x
  float acc[D / 8][4];
  for (auto& a : acc)
    for (float& x : a) x = 0.f;
  std::uint32_t qf[D / 16][4];

  // Tiles in the order: the boundary tiles (some row sees only part: masked per element, mask_tile),
  // then the tiles every row sees in full ([f_begin, f_end): no per-element test), each kind in its
  // own loop so the steady-state loop holds no mask code. Online softmax is order-free (to rounding).
  const std::int64_t hi_full = bk.hi_min < P.sk ? bk.hi_min : P.sk;
  std::int64_t f_begin = (bk.lo_max + kBc - 1) / kBc, f_end = hi_full / kBc;
  if (f_begin < t_begin) f_begin = t_begin;
  if (f_end > t_end) f_end = t_end;
  if (f_end < f_begin) f_end = f_begin = t_end;  // no full tile: every tile is a boundary tile
  const std::int64_t count = t_end - t_begin, n_lead = f_begin - t_begin, n_masked = count - (f_end - f_begin);
  // the n-th tile of that order: [t_begin, f_begin), [f_end, t_end), then [f_begin, f_end)
  const auto tile_at = [&](std::int64_t n) {
    return n < n_lead ? t_begin + n : n < n_masked ? f_end + (n - n_lead) : f_begin + (n - n_masked);
  };

  if (count > 0) {
    load_tile_async<kBc, D, Smem<D>::kLd, kThreads>(qs, q, q0, P.sq, P.h, i);
    load_tile_async<kBc, D, Smem<D>::kLd, kThreads>(ks(0), k, tile_at(0) * kBc, P.sk, P.hk, kh);
    load_tile_async<kBc, D, Smem<D>::kLd, kThreads>(vs(0), v, tile_at(0) * kBc, P.sk, P.hk, kh);
    cp_async_commit();
  }
  // one tile: the n-th of the order, in buffer n % 2 (the next one loads into the other meanwhile)
  const auto step = [&](std::int64_t n, auto masked) {
    const int buf = static_cast<int>(n & 1);
    if (n + 1 < count) {
      const std::int64_t next = tile_at(n + 1) * kBc;
      load_tile_async<kBc, D, Smem<D>::kLd, kThreads>(ks(buf ^ 1), k, next, P.sk, P.hk, kh);
      load_tile_async<kBc, D, Smem<D>::kLd, kThreads>(vs(buf ^ 1), v, next, P.sk, P.hk, kh);
      cp_async_commit();
      cp_async_wait<1>();
    } else {
      cp_async_wait<0>();
    }
    __syncthreads();
    if (n == 0)
      for (int kk = 0; kk < D / 16; ++kk) {
        const mma::RC a = mma::ldsm_a(lane);
        ldsm_x4(qf[kk], qs + (warp * 16 + a.row) * kLd + kk * 16 + a.col);
      }
    // S = Q K^T for this warp's 16 rows x 64 keys (raw logits)
    float s[kBc / 8][4];
    for (auto& a : s)
      for (float& x : a) x = 0.f;
    for (int kk = 0; kk < D / 16; ++kk)
      for (int np = 0; np < kBc / 16; ++np) {
        std::uint32_t b[4];
        const mma::RC a = mma::ldsm_b_rows(lane);
        ldsm_x4(b, ks(buf) + (np * 16 + a.row) * kLd + kk * 16 + a.col);
        mma_pair<T>(s[2 * np], s[2 * np + 1], qf[kk], b);
      }
    // mask (boundary tiles only), online softmax (attention_tile.cuh)
    const auto at = [&](int e) -> float& { return s[e >> 2][e & 3]; };
    if constexpr (decltype(masked)::value) mask_tile<kBc / 2>(at, kr, tile_at(n) * kBc, tg);
    float alpha[2];
    softmax_tile<kBc / 2>(at, st, c, alpha);
    for (auto& a : acc) a[0] *= alpha[0], a[1] *= alpha[0], a[2] *= alpha[1], a[3] *= alpha[1];
    // O += P V: P from the S registers, V via ldmatrix.trans
    for (int kk = 0; kk < kBc / 16; ++kk) {
      std::uint32_t pa[4];
      a_from_c<T>(pa, s[2 * kk], s[2 * kk + 1]);
      for (int dp = 0; dp < D / 16; ++dp) {
        std::uint32_t b[4];
        const mma::RC a = mma::ldsm_b_trans(lane);
        ldsm_x4_trans(b, vs(buf) + (kk * 16 + a.row) * kLd + dp * 16 + a.col);
        mma_pair<T>(acc[2 * dp], acc[2 * dp + 1], pa, b);
      }
    }
    __syncthreads();  // this buffer is refilled two tiles on
  };
  std::int64_t n = 0;
  for (; n < n_masked; ++n) step(n, std::true_type{});
  for (; n < count; ++n) step(n, std::false_type{});
  store_rows<D>(st, scale, row, P.sq, P.h, i, tg, [&](int e) -> float& { return acc[e >> 2][e & 3]; }, o, lse, sinks);
}

#ifndef CPLAB_EMULATE
template <int D, class T>
void launch(const AttnDims& d, const T* q, const T* k, const T* v, const MaskRule& mask, float scale, T* o, float* lse,
            const float* sinks, cudaStream_t s) {
  const size_t smem = Smem<D>::bytes(sizeof(T));
  allow_smem(fwd_kernel<D, T>, smem);
  fwd_kernel<D, T><<<dim3(blocks_for(d.sq, kBr), static_cast<unsigned>(d.h)), kThreads, smem, s>>>(
      q, k, v, Dims{d.sq, d.sk, d.h, d.hk}, mask, scale, o, lse, sinks);
  check_launch("attention v2 forward");
}
#endif  // CPLAB_EMULATE

}  // namespace

#ifndef CPLAB_EMULATE
template <class T>
void v2_forward(const AttnDims& d, const T* q, const T* k, const T* v, const MaskRule& mask, float scale, T* o,
                float* lse, const float* sinks, cudaStream_t s) {
  if (d.d == 64) launch<64, T>(d, q, k, v, mask, scale, o, lse, sinks, s);
  else launch<128, T>(d, q, k, v, mask, scale, o, lse, sinks, s);
}

template void v2_forward<__half>(const AttnDims&, const __half*, const __half*, const __half*, const MaskRule&, float,
                                 __half*, float*, const float*, cudaStream_t);
template void v2_forward<__nv_bfloat16>(const AttnDims&, const __nv_bfloat16*, const __nv_bfloat16*,
                                        const __nv_bfloat16*, const MaskRule&, float, __nv_bfloat16*, float*,
                                        const float*, cudaStream_t);
#endif  // CPLAB_EMULATE

}  // namespace cplab::cuda::detail
