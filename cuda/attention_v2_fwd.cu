// attention_v2_fwd.cu: tier 1 forward attention, FlashAttention-2 style, with mma.sync tensor cores.
//
// What it is: FA2's forward tile shapes: one block per (128 query rows, head), 4 warps of 32 rows
// each (two m16 row tiles), key tiles of 64 (Flash_fwd_kernel_traits<128, 128, 64, 4>; d 64 takes
// 128 x 64 too: with 128 x 128 tiles this kernel needs 255 registers and spills 16 bytes at d 64,
// and 836 at d 128). Q (128 rows) and the K/V tiles, double-buffered with cp.async (the next tile
// loads while this one is computed), sit in shared memory with rows padded by 16 bytes (ldmatrix
// rows in different banks); S = Q K^T and O += P V use mma.sync.m16n8k16 (bf16/fp16 in, fp32
// accumulate); P never leaves registers (the S accumulator is repacked as the A operand,
// mma_layout.h). Why 32 rows per warp: each K or V fragment an ldmatrix brings in feeds both row
// tiles (4 MMAs per ldmatrix.x4 instead of 2), so shared-memory loads per MMA fall from 0.5 (64-row
// blocks, 16 rows per warp, Q in registers) to 0.3125 at d 128: per 64-key tile and warp, Q K^T
// takes 2 ldmatrix of Q + 4 of K per k-slice for 16 MMAs, P V 1 ldmatrix of V per 4 MMAs, 80 for
// 256. Q is read from shared memory per k-slice at d 128, as FA2 does: O (128 registers a thread)
// and S (64) leave no room for Q's 64; at d 64 (O 64, S 64) Q's 32 fit and are loaded once, before
// the loops: 0.25 (32 for 128). scripts/sass-report.sh counts the full-tile loop's LDSM + LDS per
// MMA (the LDS: the row state, below): 0.586 -> 0.340 at d 128, 0.609 -> 0.305 at d 64 (before,
// the loop's 8 LDSM of Q ran only on its first tile). What a thread needs once per tile lives in
// shared memory, not registers: its rows' online-softmax state (FastRow m, l) and the rows' key
// ranges (boundary tiles only); the copies' addresses are one offset per thread (RowCopy): 255
// registers at d 128 and 241 at d 64, no spills, no stack (ptxas, sm_90). Each thread holds 4
// rows (g, g + 8, g + 16, g + 24 of its warp's 32: attention_tile.cuh's register convention with
// R = 4) of softmax_rules.h's FastRow (the kernels' exp2 fast path) with a partial l over its own
// columns; row maxima and l are combined across the 4 lanes of a row with shuffles. Masks: key
// tiles no row of the block can see are never loaded; tiles every row sees in full skip the
// per-element test; the others test each element against its row's key range (attention_tile.cuh
// mask_tile), in a loop of their own before the full tiles' loop, so the steady state carries no
// mask code. Attention sinks (sinks != null): folded into each row as it is stored
// (attention_tile.cuh store_rows).
// What it is not: Hopper-native (wgmma + TMA is attention_v3_fwd.cu), or run, timed or tuned on a
// GPU yet (the tile shapes are FA2's, the counts above are instructions, not cycles).
#include "attention_impl.cuh"
#include "attention_tile.cuh"
#include "mma.cuh"
#include "mma_layout.h"

#include <type_traits>

namespace cplab::cuda::detail {

namespace {

// FlashAttention-2's forward tile shapes (Flash_fwd_kernel_traits<D, 128, 64, 4>): 128 query rows
// per block, 4 warps of 32 rows each (two m16 row tiles, kRowTiles), 64 keys per tile
constexpr int kBr = 128, kBc = 64, kWarps = 4, kThreads = 32 * kWarps;
constexpr int kRowTiles = 2, kWarpRows = 16 * kRowTiles, kRows = 2 * kRowTiles;  // kRows: rows per thread
static_assert(kWarps * kWarpRows == kBr, "the warps' rows make up the block's");
static_assert(kBr <= kThreads, "block_keys gives each row one thread");

struct Dims {
  std::int64_t sq, sk, h, hk;
};

// Q (kBr rows), then K and V of stage 0 and 1 (kBc rows each), padded rows of kLd elements; then
// the rows' softmax state between tiles (FastRow, [kRows][kThreads]), the rows' key ranges (int2,
// [kBr]) and block_keys' 4 ints: 109,584 bytes at d 128, 60,432 at d 64 (64-row blocks took 87,056
// and 46,096), above the 48 KB default (launch: allow_smem); two blocks fit in an H100 SM's 228 KB
template <int D>
struct Smem {
  static constexpr int kLd = D + 8;  // padded row (elements)
  static constexpr int kQ = kBr * kLd, kTile = kBc * kLd;
  // byte offsets for elements of `elem` bytes (multiples of 16: the tiles' are, FastRow and int2 are 8 bytes)
  CPLAB_HD static constexpr size_t stats(size_t elem) { return elem * static_cast<size_t>(kQ + 4 * kTile); }
  CPLAB_HD static constexpr size_t ranges(size_t elem) { return stats(elem) + sizeof(FastRow) * kRows * kThreads; }
  CPLAB_HD static constexpr size_t red(size_t elem) { return ranges(elem) + sizeof(int2) * kBr; }
  CPLAB_HD static constexpr size_t bytes(size_t elem) { return red(elem) + 4 * sizeof(int); }
};

// One thread's share of the cp.async copies of a tile of rows r0, r0 + 1, ... of one head of x
// (rows, heads, D) into shared memory (rows, kLd): 16-byte chunk t % kChunks of rows t / kChunks +
// it kStep, t = threadIdx.x.
// mma.cuh's load_tile_async recomputes each chunk's 64-bit address from (row, head); here the
// thread's element offset is set up once per head (K and V share it: x, the tensor, is a kernel
// parameter) and a tile adds r0 and kStep rows at a time, which keeps the copies' address
// arithmetic (and its registers) out of the way of the 192 accumulators of d 128. Rows >= n are
// zero-filled (cp.async src-size 0: x itself is passed, and not read).
template <int D, int kLd>
struct RowCopy {
  static constexpr int kChunks = D / 8, kStep = kThreads / kChunks;
  static_assert(kThreads % kChunks == 0, "every thread copies the same chunk column of its rows");
  static_assert(D < kLd, "a row's chunks lie within its padded row (the bound test below)");
  std::int64_t stride;  // heads * D, a row's elements (the same for every thread)
  int off, dst;  // this thread's chunk of its first row (t / kChunks) when r0 = 0 (< 16 rows: fits
                 // an int), and the chunk's offset in the tile, (t / kChunks) kLd + 8 (t % kChunks)
  __device__ RowCopy(std::int64_t heads, std::int64_t head)
      : stride(heads * D), off(0), dst(static_cast<int>(threadIdx.x) / kChunks * kLd + static_cast<int>(threadIdx.x) % kChunks * 8) {
    off = static_cast<int>((threadIdx.x / kChunks * heads + head) * D) + static_cast<int>(threadIdx.x) % kChunks * 8;
  }
  template <int kRows, class T>
  __device__ __forceinline__ void tile(T* smem, const T* x, std::int64_t r0, std::int64_t n) const {
    static_assert(kRows % kStep == 0, "whole steps of rows");
    const T* p = x + r0 * stride + off;
    // rows of x in this tile, as an offset bound: row r's chunk is in range iff its offset
    // r kLd + 8 (t % kChunks) < rows kLd (8 (t % kChunks) < D < kLd), one compare per chunk
    const int end = (n - r0 < kRows ? static_cast<int>(n - r0) : kRows) * kLd;
#pragma unroll
    for (int it = 0; it < kRows / kStep; ++it, p += kStep * stride) {
      const bool ok = dst + it * kStep * kLd < end;
      cp_async_16(smem + dst + it * kStep * kLd, ok ? p : x, ok);
    }
  }
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
  const auto ks = [&](int b) { return qs + Smem<D>::kQ + b * Smem<D>::kTile; };
  const auto vs = [&](int b) { return qs + Smem<D>::kQ + (2 + b) * Smem<D>::kTile; };
  FastRow* st_s = reinterpret_cast<FastRow*>(raw + Smem<D>::stats(sizeof(T))) + threadIdx.x;  // row x at [x * kThreads]
  int2* ranges = reinterpret_cast<int2*>(raw + Smem<D>::ranges(sizeof(T)));
  int* red = reinterpret_cast<int*>(raw + Smem<D>::red(sizeof(T)));
  constexpr int kLd = Smem<D>::kLd;

  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = mma::group_id(lane), tg = mma::thread_in_group(lane);
  const std::int64_t q0 = static_cast<std::int64_t>(blockIdx.x) * kBr, i = blockIdx.y, kh = i / (P.h / P.hk);
  const BlockKeys bk = block_keys(mask, q0, kBr, P.sq, P.sk, kBc, red);
  // key tiles as int (block_keys' key indices are int already): fewer registers than int64 in the loops
  const int t_begin = static_cast<int>(bk.t_begin), t_end = static_cast<int>(bk.t_end);

  // this thread's rows x = 2 m + h: row g + 8 h of the warp's row tile m, the x-th of the warp's
  // 32 at 16 m + 8 h + g. Registers: at d 128 the accumulators take 192 (O 128, S 64) of 255, so what
  // is needed once per tile lives in shared memory instead: each row's key range (int2, written
  // here by the row's thread, read by boundary tiles only) and the rows' online-softmax state
  // (FastRow m and l, read and written by softmax_tile's caller once per tile; its own thread's).
  const auto row_in_block = [&](int x) { return warp * kWarpRows + 16 * (x / 2) + 8 * (x % 2) + g; };
  if (threadIdx.x < kBr) {
    const std::int64_t a = q0 + threadIdx.x;
    const KeyRange r = a < P.sq ? mask.keys(a, P.sk) : KeyRange{0, 0};
    ranges[threadIdx.x] = int2{static_cast<int>(r.lo), static_cast<int>(r.hi)};  // as block_keys: keys < 2^31
  }
  for (int x = 0; x < kRows; ++x) st_s[x * kThreads] = FastRow{};

  const float c = scale * kLog2e;  // softmax_rules.h fast path: 2^(x c - m c) on raw logits x
  float acc[kRowTiles][D / 8][4];  // O: row tile m, 8-column tile nt (mma_layout.h frag_c)
  for (auto& am : acc)
    for (auto& a : am)
      for (float& x : a) x = 0.f;

  // Tiles in the order: the boundary tiles (some row sees only part: masked per element, mask_tile),
  // then the tiles every row sees in full ([f_begin, f_end): no per-element test), each kind in its
  // own loop so the steady-state loop holds no mask code. Online softmax is order-free (to rounding).
  const std::int64_t hi_full = bk.hi_min < P.sk ? bk.hi_min : P.sk;
  int f_begin = static_cast<int>((bk.lo_max + kBc - 1) / kBc), f_end = static_cast<int>(hi_full / kBc);
  if (f_begin < t_begin) f_begin = t_begin;
  if (f_end > t_end) f_end = t_end;
  if (f_end < f_begin) f_end = f_begin = t_end;  // no full tile: every tile is a boundary tile
  const int count = t_end - t_begin, n_lead = f_begin - t_begin, n_masked = count - (f_end - f_begin);
  // the n-th tile of that order: [t_begin, f_begin), [f_end, t_end), then [f_begin, f_end)
  const auto tile_at = [&](int n) {
    return n < n_lead ? t_begin + n : n < n_masked ? f_end + (n - n_lead) : f_begin + (n - n_masked);
  };

  // Q's A fragments: at d 64 they fit in registers beside O (64) and S (64): loaded once, before the
  // loops; at d 128 (O 128, S 64) they are read from shared memory per k-slice, as FA2 does
  constexpr bool kQRegs = D == 64;
  std::uint32_t qf[kQRegs ? D / 16 : 1][kRowTiles][4];
  const mma::RC ra = mma::ldsm_a(lane);
  const auto load_q = [&](std::uint32_t (&qa)[kRowTiles][4], int kk) {
    for (int m = 0; m < kRowTiles; ++m) ldsm_x4(qa[m], qs + (warp * kWarpRows + 16 * m + ra.row) * kLd + kk * 16 + ra.col);
  };
  const RowCopy<D, kLd> kv_copy(P.hk, kh);  // K and V alike
  if (count > 0) {
    RowCopy<D, kLd>(P.h, i).template tile<kBr>(qs, q, q0, P.sq);
    cp_async_commit();  // Q: a group of its own, waited for first at d 64
    kv_copy.template tile<kBc>(ks(0), k, static_cast<std::int64_t>(tile_at(0)) * kBc, P.sk);
    kv_copy.template tile<kBc>(vs(0), v, static_cast<std::int64_t>(tile_at(0)) * kBc, P.sk);
    cp_async_commit();
    if constexpr (kQRegs) {
      cp_async_wait<1>();
      __syncthreads();
      for (int kk = 0; kk < D / 16; ++kk) load_q(qf[kk], kk);
    }
  }
  // one tile: tile j, in buffer buf (the n-th of the order in buffer n % 2), the next one (tile
  // j_next, unless last) loading into the other meanwhile
  const auto step = [&](int j, int buf, bool last, int j_next, auto masked) {
    if (!last) {
      const std::int64_t next = static_cast<std::int64_t>(j_next) * kBc;
      kv_copy.template tile<kBc>(ks(buf ^ 1), k, next, P.sk);
      kv_copy.template tile<kBc>(vs(buf ^ 1), v, next, P.sk);
      cp_async_commit();
      cp_async_wait<1>();
    } else {
      cp_async_wait<0>();
    }
    __syncthreads();
    // S = Q K^T for this warp's 32 rows x 64 keys (raw logits). Q stays in shared memory (FA2: at
    // d 128 its 64 registers would not fit beside acc and S); each k-slice's two A fragments are
    // loaded once and each K fragment (one ldmatrix.x4: two n-tiles) feeds both row tiles.
    float s[kRowTiles][kBc / 8][4];
    for (auto& sm : s)
      for (auto& a : sm)
        for (float& x : a) x = 0.f;
#pragma unroll
    for (int kk = 0; kk < D / 16; ++kk) {
      [[maybe_unused]] std::uint32_t q_smem[kRowTiles][4];  // d 128 only
      if constexpr (!kQRegs) load_q(q_smem, kk);
      const auto& qa = [&]() -> const std::uint32_t(&)[kRowTiles][4] {
        if constexpr (kQRegs) return qf[kk];
        else return q_smem;
      }();
#pragma unroll
      for (int np = 0; np < kBc / 16; ++np) {
        std::uint32_t b[4];
        const mma::RC a = mma::ldsm_b_rows(lane);
        ldsm_x4(b, ks(buf) + (np * 16 + a.row) * kLd + kk * 16 + a.col);
        for (int m = 0; m < kRowTiles; ++m) mma_pair<T>(s[m][2 * np], s[m][2 * np + 1], qa[m], b);
      }
    }
    // mask (boundary tiles only), online softmax (attention_tile.cuh: row tile m's registers are
    // the m-th group of kBc / 2)
    const auto at = [&](int e) -> float& { return s[e / (kBc / 2)][(e % (kBc / 2)) >> 2][e & 3]; };
    if constexpr (decltype(masked)::value) {  // the rows' key ranges (shared memory, written before the loop's first barrier)
      KeyRange kr[kRows];
#pragma unroll
      for (int x = 0; x < kRows; ++x) {
        const int2 r = ranges[row_in_block(x)];
        kr[x] = KeyRange{r.x, r.y};
      }
      mask_tile<kBc / 2>(at, kr, static_cast<std::int64_t>(j) * kBc, tg);
    }
    FastRow st[kRows];
    for (int x = 0; x < kRows; ++x) st[x] = st_s[x * kThreads];
    float alpha[kRows];
    softmax_tile<kBc / 2>(at, st, c, alpha);
    for (int x = 0; x < kRows; ++x) st_s[x * kThreads] = st[x];
    for (int m = 0; m < kRowTiles; ++m)
      for (auto& a : acc[m]) a[0] *= alpha[2 * m], a[1] *= alpha[2 * m], a[2] *= alpha[2 * m + 1], a[3] *= alpha[2 * m + 1];
    // O += P V: P from the S registers, V via ldmatrix.trans, each V fragment feeding both row tiles
#pragma unroll
    for (int kk = 0; kk < kBc / 16; ++kk) {
      std::uint32_t pa[kRowTiles][4];
      for (int m = 0; m < kRowTiles; ++m) a_from_c<T>(pa[m], s[m][2 * kk], s[m][2 * kk + 1]);
#pragma unroll
      for (int dp = 0; dp < D / 16; ++dp) {
        std::uint32_t b[4];
        const mma::RC a = mma::ldsm_b_trans(lane);
        ldsm_x4_trans(b, vs(buf) + (kk * 16 + a.row) * kLd + dp * 16 + a.col);
        for (int m = 0; m < kRowTiles; ++m) mma_pair<T>(acc[m][2 * dp], acc[m][2 * dp + 1], pa[m], b);
      }
    }
    __syncthreads();  // this buffer is refilled two tiles on
  };
  for (int n = 0; n < n_masked; ++n) step(tile_at(n), n & 1, n + 1 == count, tile_at(n + 1), std::true_type{});
  // the full tiles, by tile index (fewer live registers than through tile_at): the n-th of the order
  // is tile f_begin + n - n_masked
  for (int j = f_begin, shift = n_masked - f_begin; j < f_end; ++j)
    step(j, (j + shift) & 1, j + 1 == f_end, j + 1, std::false_type{});
  FastRow st[kRows];
  std::int64_t row[kRows];
  for (int x = 0; x < kRows; ++x) st[x] = st_s[x * kThreads], row[x] = q0 + row_in_block(x);
  store_rows<D>(st, scale, row, P.sq, P.h, i, tg,
                [&](int e) -> float& { return acc[e / (D / 2)][(e % (D / 2)) >> 2][e & 3]; }, o, lse, sinks);
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
