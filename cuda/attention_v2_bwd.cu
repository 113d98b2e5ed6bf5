// attention_v2_bwd.cu: tier 1 backward attention (dQ, dK, dV), FlashAttention-2 style, mma.sync.
//
// What it is: one block per (64 key rows, KV head), 4 warps; warp w owns keys 16w..16w+15 of the
// block and keeps their dK and dV in fp32 registers for the whole kernel, over every query tile
// (64 rows) of every query head that reads this KV head (GQA: the group's heads in turn), so dK and
// dV have one writer and need no atomics. Per query tile, with Q, dO staged by cp.async, in two
// halves of 32 queries (so only 16 x 32 of S^T and dP^T are live beside dK and dV: no spills at d 128):
//   S^T  = K Q^T                      (A: K rows, B: Q rows)           16 keys x 64 queries
//   P^T  = exp(scale S^T - LSE)       fast_bwd_prob (softmax_rules.h: one FFMA, one ex2); masked pairs 0
//   dV  += P^T dO                     (A: P^T from registers, B: dO rows, .trans)
//   dP^T = V dO^T                     (A: V rows, B: dO rows)
//   dS^T = P^T (dP^T - Delta)         bwd_ds
//   dK  += dS^T Q                     (A: dS^T from registers, B: Q rows, .trans); x scale at the end
//   dQ  += scale dS K                 dS^T goes through shared memory (A via ldmatrix.trans), each
//                                     warp then owns 16 query rows, added to global fp32 dQ with
//                                     atomicAdd (blocks of other key tiles add to the same rows),
//                                     in two halves of D / 2 columns (half the accumulators live)
// Query tiles in which no row sees any of the block's keys are skipped; tiles in which every row
// sees all of them skip the per-element mask test (MaskRule::keys otherwise).
// Q and dO of the next query tile load (cp.async) during this tile's dQ product, into the same
// buffers (no longer read then): the load overlaps the dQ product and its atomics.
// What it is not: tuned on a GPU yet (FA2-like sizes; the next tile's S^T still waits for its
// load), or deterministic
// (the dQ atomics add in any order).
#include "attention_impl.cuh"
#include "mma.cuh"
#include "mma_layout.h"

namespace cplab::cuda::detail {

namespace {

constexpr int kBr = 64, kBc = 64, kWarps = 4, kThreads = 32 * kWarps;
constexpr int kLdS = kBc + 8;  // padded row of the dS^T tile

struct Dims {
  std::int64_t sq, sk, h, hk;
};

template <int D>
struct Smem {
  static constexpr int kLd = D + 8;
  static constexpr int kTile = kBr * kLd;
  // K, V, Q, dO tiles, dS^T (kBc x kLdS), then LSE, Delta (kBr floats each), lo, hi (kBr int64 each)
  static constexpr size_t bytes(size_t elem) {
    return elem * static_cast<size_t>(4 * kTile + kBc * kLdS) + 2 * kBr * sizeof(float) + 2 * kBr * sizeof(std::int64_t);
  }
};

template <int D, class T>
__global__ void __launch_bounds__(kThreads) bwd_kernel(const T* __restrict__ q, const T* __restrict__ k,
                                                       const T* __restrict__ v, const T* __restrict__ dout,
                                                       const float* __restrict__ lse, const float* __restrict__ delta,
                                                       Dims P, MaskRule mask, float scale, float* __restrict__ dq,
                                                       float* __restrict__ dk, float* __restrict__ dv) {
  CPLAB_DYNAMIC_SMEM_ALIGN16(unsigned char, raw);
  constexpr int kLd = Smem<D>::kLd;
  T* ks = reinterpret_cast<T*>(raw);
  T* vs = ks + Smem<D>::kTile;
  T* qs = vs + Smem<D>::kTile;
  T* dos = qs + Smem<D>::kTile;
  T* dst = dos + Smem<D>::kTile;  // dS^T: (kBc keys, kLdS)
  float* ls = reinterpret_cast<float*>(dst + kBc * kLdS);
  float* des = ls + kBr;  // ls: the rows' fast_lse_offset (LSE log2(e)), des: their Delta
  std::int64_t* los = reinterpret_cast<std::int64_t*>(des + kBr);
  std::int64_t* his = los + kBr;

  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = mma::group_id(lane), tg = mma::thread_in_group(lane);
  const std::int64_t kb0 = static_cast<std::int64_t>(blockIdx.x) * kBc, kh = blockIdx.y, grp = P.h / P.hk;
  const std::int64_t key[2] = {kb0 + warp * 16 + g, kb0 + warp * 16 + g + 8};  // this thread's rows of S^T
  const float c = scale * kLog2e;  // softmax_rules.h fast path: P = 2^(x c - LSE log2(e)) on raw logits x

  load_tile_async<kBr, D, Smem<D>::kLd, kThreads>(ks, k, kb0, P.sk, P.hk, kh);
  load_tile_async<kBr, D, Smem<D>::kLd, kThreads>(vs, v, kb0, P.sk, P.hk, kh);
  cp_async_commit();

  float gk[D / 8][4], gv[D / 8][4];
  for (int nt = 0; nt < D / 8; ++nt)
    for (int e = 0; e < 4; ++e) gk[nt][e] = 0.f, gv[nt][e] = 0.f;

  // the query tile (head pf_i, rows from pf_a0) whose Q and dO are in flight into qs / dos, loaded
  // during the previous tile's dQ product (-1: none)
  std::int64_t pf_i = -1, pf_a0 = -1;
  for (std::int64_t i = kh * grp; i < (kh + 1) * grp; ++i)
    for (std::int64_t a0 = 0; a0 < P.sq; a0 += kBr) {
      __syncthreads();  // the previous tile's shared memory is no longer read
      bool any = false, all = true;
      if (threadIdx.x < kBr) {
        const std::int64_t a = a0 + threadIdx.x;
        const KeyRange r = a < P.sq ? mask.keys(a, P.sk) : KeyRange{0, 0};
        los[threadIdx.x] = r.lo, his[threadIdx.x] = r.hi;
        ls[threadIdx.x] = fast_lse_offset(a < P.sq ? lse[i * P.sq + a] : 0.f);  // LSE log2(e), +inf for an empty row
        des[threadIdx.x] = a < P.sq ? delta[i * P.sq + a] : 0.f;
        any = r.lo < r.hi && r.lo < kb0 + kBc && r.hi > kb0;
        all = a < P.sq && r.lo <= kb0 && r.hi >= kb0 + kBc && kb0 + kBc <= P.sk;
      }
      if (!__syncthreads_or(any)) continue;
      const bool full = __syncthreads_and(all);
      if (pf_i != i || pf_a0 != a0) {  // not prefetched (the first tile, or the prefetch was of a skipped tile)
        cp_async_wait<0>();  // a stale prefetch lands before its buffers are refilled (same chunks per thread)
        load_tile_async<kBr, D, Smem<D>::kLd, kThreads>(qs, q, a0, P.sq, P.h, i);
        load_tile_async<kBr, D, Smem<D>::kLd, kThreads>(dos, dout, a0, P.sq, P.h, i);
        cp_async_commit();
      }
      cp_async_wait<0>();
      __syncthreads();

      // Per half of the query tile (kQh = 32 queries: half the S^T / dP^T registers live beside dK
      // and dV, so d 128 fits in registers without spills):
      constexpr int kQh = kBr / 2;
      for (int qh = 0; qh < 2; ++qh) {
        // S^T = K Q^T and dP^T = V dO^T: 16 keys x 32 queries per warp
        float s[kQh / 8][4], dp[kQh / 8][4];
        for (int nt = 0; nt < kQh / 8; ++nt)
          for (int e = 0; e < 4; ++e) s[nt][e] = 0.f, dp[nt][e] = 0.f;
        for (int kk = 0; kk < D / 16; ++kk) {
          std::uint32_t ka[4], va[4];
          const mma::RC a = mma::ldsm_a(lane);
          ldsm_x4(ka, ks + (warp * 16 + a.row) * kLd + kk * 16 + a.col);
          ldsm_x4(va, vs + (warp * 16 + a.row) * kLd + kk * 16 + a.col);
          for (int np = 0; np < kQh / 16; ++np) {
            std::uint32_t b[4];
            const mma::RC r = mma::ldsm_b_rows(lane);
            ldsm_x4(b, qs + (qh * kQh + np * 16 + r.row) * kLd + kk * 16 + r.col);
            mma_pair<T>(s[2 * np], s[2 * np + 1], ka, b);
            ldsm_x4(b, dos + (qh * kQh + np * 16 + r.row) * kLd + kk * 16 + r.col);
            mma_pair<T>(dp[2 * np], dp[2 * np + 1], va, b);
          }
        }
        // P^T and dS^T, element (key[e >> 1], query a0 + ql), ql = kQh qh + 8 nt + 2 tg + (e & 1)
        for (int nt = 0; nt < kQh / 8; ++nt)
          for (int e = 0; e < 4; ++e) {
            const int ql = qh * kQh + nt * 8 + 2 * tg + (e & 1);
            const std::int64_t kk = key[e >> 1];
            const bool vis = full || (kk >= los[ql] && kk < his[ql]);
            const float p = vis ? fast_bwd_prob(s[nt][e], c, ls[ql]) : 0.f;
            s[nt][e] = p;
            dp[nt][e] = bwd_ds(p, dp[nt][e], des[ql]);
          }
        // dV += P^T dO and dK += dS^T Q (k = queries: A from registers, B = dO / Q rows via .trans)
        for (int kq = 0; kq < kQh / 16; ++kq) {
          std::uint32_t pa[4], da[4];
          a_from_c<T>(pa, s[2 * kq], s[2 * kq + 1]);
          a_from_c<T>(da, dp[2 * kq], dp[2 * kq + 1]);
          for (int dpair = 0; dpair < D / 16; ++dpair) {
            std::uint32_t b[4];
            const mma::RC r = mma::ldsm_b_trans(lane);
            ldsm_x4_trans(b, dos + (qh * kQh + kq * 16 + r.row) * kLd + dpair * 16 + r.col);
            mma_pair<T>(gv[2 * dpair], gv[2 * dpair + 1], pa, b);
            ldsm_x4_trans(b, qs + (qh * kQh + kq * 16 + r.row) * kLd + dpair * 16 + r.col);
            mma_pair<T>(gk[2 * dpair], gk[2 * dpair + 1], da, b);
          }
        }
        // dS^T to shared memory: row = key (local), col = query (local)
        for (int nt = 0; nt < kQh / 8; ++nt)
          for (int x = 0; x < 2; ++x) {
            const int kr = warp * 16 + g + 8 * x, qc = qh * kQh + nt * 8 + 2 * tg;
            *reinterpret_cast<std::uint32_t*>(dst + kr * kLdS + qc) = pack2<T>(dp[nt][2 * x], dp[nt][2 * x + 1]);
          }
      }
      __syncthreads();
      // Q and dO are no longer read in this tile (dQ reads dS^T and K): the next query tile's load
      // overlaps the dQ product and its atomics (wasted if that tile turns out to be skipped)
      pf_i = a0 + kBr < P.sq ? i : i + 1;
      pf_a0 = a0 + kBr < P.sq ? a0 + kBr : 0;
      if (pf_i < (kh + 1) * grp) {
        load_tile_async<kBr, D, Smem<D>::kLd, kThreads>(qs, q, pf_a0, P.sq, P.h, pf_i);
        load_tile_async<kBr, D, Smem<D>::kLd, kThreads>(dos, dout, pf_a0, P.sq, P.h, pf_i);
        cp_async_commit();
      } else {
        pf_i = pf_a0 = -1;
      }
      // dQ (this warp: query rows 16 warp .. + 15) = dS K over the block's 64 keys, in two halves
      // of D columns (kHalf fp32 accumulators per thread instead of D / 2: fewer live registers
      // beside dK and dV, which stay live all kernel)
      constexpr int kHalf = D / 16;  // accumulator tiles per half (D / 2 columns)
      for (int half = 0; half < 2; ++half) {
        float gq[kHalf][4];
        for (int nt = 0; nt < kHalf; ++nt)
          for (int e = 0; e < 4; ++e) gq[nt][e] = 0.f;
        for (int kk = 0; kk < kBc / 16; ++kk) {
          std::uint32_t a[4];
          const mma::RC at = mma::ldsm_a_trans(lane);
          ldsm_x4_trans(a, dst + (kk * 16 + at.row) * kLdS + warp * 16 + at.col);
          for (int dpair = 0; dpair < kHalf / 2; ++dpair) {
            std::uint32_t b[4];
            const mma::RC r = mma::ldsm_b_trans(lane);
            ldsm_x4_trans(b, ks + (kk * 16 + r.row) * kLd + half * (D / 2) + dpair * 16 + r.col);
            mma_pair<T>(gq[2 * dpair], gq[2 * dpair + 1], a, b);
          }
        }
        for (int x = 0; x < 2; ++x) {
          const std::int64_t a = a0 + warp * 16 + g + 8 * x;
          if (a >= P.sq) continue;
          float* out = dq + (a * P.h + i) * D + half * (D / 2);
          for (int nt = 0; nt < kHalf; ++nt) {
            atomicAdd(out + nt * 8 + 2 * tg, scale * gq[nt][2 * x]);
            atomicAdd(out + nt * 8 + 2 * tg + 1, scale * gq[nt][2 * x + 1]);
          }
        }
      }
    }
  cp_async_wait<0>();  // K/V (every query tile skipped) or a prefetch of a skipped last tile may be in flight
  for (int x = 0; x < 2; ++x) {
    if (key[x] >= P.sk) continue;
    float* ok_ = dk + (key[x] * P.hk + kh) * D;
    float* ov = dv + (key[x] * P.hk + kh) * D;
    for (int nt = 0; nt < D / 8; ++nt)
      for (int e = 0; e < 2; ++e) {
        ok_[nt * 8 + 2 * tg + e] += scale * gk[nt][2 * x + e];
        ov[nt * 8 + 2 * tg + e] += gv[nt][2 * x + e];
      }
  }
}

#ifndef CPLAB_EMULATE
template <int D, class T>
void launch(const AttnDims& d, const T* q, const T* k, const T* v, const T* dout, const float* lse, const float* delta,
            const MaskRule& mask, float scale, float* dq, float* dk, float* dv, cudaStream_t s) {
  const size_t smem = Smem<D>::bytes(sizeof(T));
  allow_smem(bwd_kernel<D, T>, smem);
  bwd_kernel<D, T><<<dim3(blocks_for(d.sk, kBc), static_cast<unsigned>(d.hk)), kThreads, smem, s>>>(
      q, k, v, dout, lse, delta, Dims{d.sq, d.sk, d.h, d.hk}, mask, scale, dq, dk, dv);
  check_launch("attention v2 backward");
}
#endif  // CPLAB_EMULATE

}  // namespace

#ifndef CPLAB_EMULATE
template <class T>
void v2_backward(const AttnDims& d, const T* q, const T* k, const T* v, const T* dout, const float* lse,
                 const float* delta, const MaskRule& mask, float scale, float* dq, float* dk, float* dv,
                 cudaStream_t s) {
  if (d.d == 64) launch<64, T>(d, q, k, v, dout, lse, delta, mask, scale, dq, dk, dv, s);
  else launch<128, T>(d, q, k, v, dout, lse, delta, mask, scale, dq, dk, dv, s);
}

#define CPLAB_V2B(T)                                                                                                 \
  template void v2_backward<T>(const AttnDims&, const T*, const T*, const T*, const T*, const float*, const float*, \
                               const MaskRule&, float, float*, float*, float*, cudaStream_t);
CPLAB_V2B(__half)
CPLAB_V2B(__nv_bfloat16)
#undef CPLAB_V2B
#endif  // CPLAB_EMULATE

}  // namespace cplab::cuda::detail
