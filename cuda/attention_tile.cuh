// attention_tile.cuh: what the v2 (mma.sync) and v3 (wgmma) forward kernels do alike around their
// products: which key tiles a query block needs, the online softmax of one key tile on a thread's
// accumulator registers, and the final O and LSE of a thread's rows (with the attention sink, if any).
//
// What it is: device functions over the accumulator layout both instructions share (mma_layout.h's
// 16 x 8 C tiles, wgmma_layout.h's frag_d): a thread holds R rows (a template parameter, deduced
// from its arrays: 2 in v3, rows g and g + 8 of its 16-row slice; 4 in v2, whose warps own two m16
// row tiles: rows g, g + 8, g + 16, g + 24 of its 32), row x = 2 m + h being row g + 8 h of row tile
// m. A tile of keys is R / 2 groups of N registers, one group per row tile m (register e: m = e / N);
// within a group register e' = e % N is row h = (e' / 2) % 2, key 8 (e' / 4) + 2 t + e' % 2, with
// t = lane % 4 (for R = 2 that is the one group, unchanged). The kernels keep their registers in
// their own arrays and pass an accessor `at(e)` returning a float& (fully unrolled, so it costs
// nothing). The arithmetic is softmax_rules.h's fast path (FastRow: exp2 on raw logits,
// scale * log2(e) folded into one FMA), the CPU reference's online softmax in float rounding.
// What it is not: the products (attention_v2_fwd.cu, attention_v3_fwd.cu), or the backward.
#pragma once

#include <climits>
#include <cstdint>

#include "core/mask_rule.h"
#include "mma.cuh"  // pack2
#include "core/softmax_rules.h"

namespace cplab::cuda::detail {

// The keys a block of query rows [q0, q0 + rows) sees: the union of the rows' ranges (as whole
// tiles of `tile` keys: [t_begin, t_end)) and the range every row sees ([lo_max, hi_min)).
struct BlockKeys {
  std::int64_t lo_max, hi_min, t_begin, t_end;
  // whether every row sees all keys of tile [t0, t0 + tile) (no per-element test needed)
  __device__ bool full(std::int64_t t0, int tile, std::int64_t sk) const { return lo_max <= t0 && hi_min >= t0 + tile && t0 + tile <= sk; }
};

// every thread of the block calls it (two __syncthreads); red: 4 ints of shared memory
__device__ inline BlockKeys block_keys(const MaskRule& mask, std::int64_t q0, int rows, std::int64_t sq, std::int64_t sk,
                                       int tile, int* red) {
  if (threadIdx.x == 0) red[0] = INT_MAX, red[1] = 0, red[2] = 0, red[3] = INT_MAX;  // lo_min, hi_max, lo_max, hi_min
  __syncthreads();
  if (static_cast<int>(threadIdx.x) < rows && q0 + threadIdx.x < sq) {
    const KeyRange r = mask.keys(q0 + threadIdx.x, sk);
    atomicMax(&red[2], static_cast<int>(r.lo));
    atomicMin(&red[3], static_cast<int>(r.hi));
    if (r.lo < r.hi) atomicMin(&red[0], static_cast<int>(r.lo)), atomicMax(&red[1], static_cast<int>(r.hi));
  }
  __syncthreads();
  const std::int64_t lo_min = red[0], hi_max = red[1];
  const bool any = lo_min < hi_max;
  return {red[2], red[3], any ? lo_min / tile : 0, any ? (hi_max + tile - 1) / tile : 0};
}

// x summed (or maxed) over the 4 lanes that hold one row
__device__ __forceinline__ float quad_max(float x) {
  x = fmaxf(x, __shfl_xor_sync(0xffffffffu, x, 1));
  return fmaxf(x, __shfl_xor_sync(0xffffffffu, x, 2));
}
__device__ __forceinline__ float quad_sum(float x) {
  x += __shfl_xor_sync(0xffffffffu, x, 1);
  return x + __shfl_xor_sync(0xffffffffu, x, 2);
}

// Masks one tile of 2N keys starting at t0 (a tile some row sees only in part; tiles every row sees
// in full skip this): at(e) := -inf for a key outside its row's range kr[x]. R rows per thread (R / 2
// groups of N registers, see above). The key offsets within the tile are compile-time constants, so
// a test is two integer compares and one select.
template <int N, int R, class At>
__device__ __forceinline__ void mask_tile(At&& at, const KeyRange (&kr)[R], std::int64_t t0, int tg) {
  static_assert(R % 2 == 0, "a thread holds rows g and g + 8 of each of its m16 row tiles");
  const std::int64_t base = t0 + 2 * tg;
  int lo[R], hi[R];  // the rows' ranges relative to this thread's first key, clamped to [-1, 2N + 1]
#pragma unroll
  for (int x = 0; x < R; ++x) {
    const std::int64_t l = kr[x].lo - base, h = kr[x].hi - base;
    lo[x] = static_cast<int>(l < -1 ? -1 : l > 2 * N + 1 ? 2 * N + 1 : l);
    hi[x] = static_cast<int>(h < -1 ? -1 : h > 2 * N + 1 ? 2 * N + 1 : h);
  }
#pragma unroll
  for (int e = 0; e < R / 2 * N; ++e) {
    const int r = e % N, x = 2 * (e / N) + ((r >> 1) & 1), key = 8 * (r >> 2) + (r & 1);
    if (key < lo[x] || key >= hi[x]) at(e) = neg_inf<float>();
  }
}

// The online softmax of one tile of 2N keys (R / 2 groups of N accumulator registers per thread:
// its R rows x N / 2 keys, a quad of 4 threads covering a row), softmax_rules.h's fast path: at(e)
// holds the raw logits Q K^T on entry (-inf where masked: mask_tile) and the probabilities P on
// return; st and alpha are per row x (alpha: the factor the caller applies to its O accumulator rows
// before adding P V); c = scale * log2(e). Per score: one FMNMX (the row max), one FFMA and one
// MUFU.EX2 (p), one FADD (l); per row one MUFU.EX2 (alpha); no branch.
template <int N, int R, class At>
__device__ __forceinline__ void softmax_tile(At&& at, FastRow (&st)[R], float c, float (&alpha)[R]) {
  const auto row_of = [](int e) { return 2 * (e / N) + (((e % N) >> 1) & 1); };
  float bmax[R];
  for (float& b : bmax) b = neg_inf<float>();
#pragma unroll
  for (int e = 0; e < R / 2 * N; ++e) bmax[row_of(e)] = fmaxf(bmax[row_of(e)], at(e));
  float mc[R];
#pragma unroll
  for (int x = 0; x < R; ++x) alpha[x] = fast_rescale(st[x], quad_max(bmax[x]), c, mc[x]);
#pragma unroll
  for (int e = 0; e < R / 2 * N; ++e) {
    const int x = row_of(e);
    const float p = fast_weight(at(e), c, mc[x]);
    st[x].l += p;
    at(e) = p;
  }
}

// After the last tile: O = acc / l (D columns per row; acc(e) in the same register convention:
// R / 2 groups of D / 2, register 4 nt + 2 h + j of group m is row x = 2 m + h, column 8 nt + 2 t + j)
// stored as T and the LSE, for the thread's rows row[x] < sq of query head i; o (sq, h, D), lse (h, sq).
// sinks: null, or (h) logits: head i's sink folded into each row (attention_impl.cuh fold_sink,
// reference/core/sinks.h), which is right because the kernel has seen the row's every key.
template <int D, class T, int R, class Acc>
__device__ __forceinline__ void store_rows(FastRow (&st)[R], float scale, const std::int64_t (&row)[R], std::int64_t sq,
                                           std::int64_t h, std::int64_t i, int tg, Acc&& acc, T* o, float* lse,
                                           const float* sinks) {
#pragma unroll
  for (int x = 0; x < R; ++x) st[x].l = quad_sum(st[x].l);
#pragma unroll
  for (int x = 0; x < R; ++x) {
    if (row[x] >= sq) continue;
    float inv = fast_inv_l(st[x]), L = fast_lse(st[x], scale);
    if (sinks) {
      const SinkFold f = fold_sink(L, sinks[i]);
      inv *= f.weight, L = f.lse;
    }
    T* out = o + (row[x] * h + i) * D;
    const int e0 = (x / 2) * (D / 2) + 2 * (x % 2);  // row x's first register in acc
    for (int nt = 0; nt < D / 8; ++nt)
      *reinterpret_cast<std::uint32_t*>(out + nt * 8 + 2 * tg) = pack2<T>(acc(e0 + 4 * nt) * inv, acc(e0 + 4 * nt + 1) * inv);
    if (tg == 0) lse[i * sq + row[x]] = L;
  }
}

}  // namespace cplab::cuda::detail
