// attention_v1.cu: tier 0 attention kernels: one thread per row, fp32 everywhere, no tensor cores.
//
// What it is: the readable baseline (llm.c's dev/cuda "version 1" spirit) of attention.h:
//   forward   a block of kRows query rows of one head; key tiles of kKeys rows (converted to fp32)
//             staged in shared memory; each thread runs softmax_rules.h's online softmax for its
//             row; a tile no row of the block can see is skipped (__syncthreads_or); no local
//             memory (the accumulator in registers, the Q rows and scores in shared memory)
//   backward  two kernels: dQ (a thread per query row, over key tiles) and dK/dV (a thread per key
//             row of one KV head, over the query tiles of every query head that reads it), so each
//             output row has one writer and no atomics are needed; P and dS from softmax_rules.h
// Head dims up to 128 (the backward's per-thread accumulators live in local memory).
// What it is not: fast (tier 1 is attention_v2_*.cu); its purpose is to be obviously right.
#include "attention_impl.cuh"

namespace cplab::cuda::detail {

namespace {

constexpr int kRows = 64;   // query rows (forward, dQ) or key rows (dK/dV) per block: one per thread
constexpr int kKeys = 32;   // key rows per shared-memory tile (forward, dQ)
constexpr int kQRows = 32;  // query rows per shared-memory tile (dK/dV)
constexpr int kMaxD = 128;

struct Dims {
  std::int64_t sq, sk, h, hk, d, dv;
};
Dims plain(const AttnDims& a) { return Dims{a.sq, a.sk, a.h, a.hk, a.d, a.dv}; }

// stage rows [r0, r0 + n) of head `head` of x (rows, heads, width) as fp32 in smem (n, width)
template <class T>
__device__ void stage(float* smem, const T* x, std::int64_t r0, int n, std::int64_t heads, std::int64_t head,
                      std::int64_t width) {
  for (std::int64_t idx = threadIdx.x; idx < n * width; idx += blockDim.x) {
    const std::int64_t r = idx / width, e = idx % width;
    smem[idx] = to_float(x[((r0 + r) * heads + head) * width + e]);
  }
}

// the forward's shared memory (floats): K and V tiles (kKeys, d) and (kKeys, dv), the block's Q rows
// transposed (d, kRows) and the tile's scores transposed (kKeys, kRows): element e of thread r's row at
// e * kRows + r, so the threads of a warp read consecutive words (no bank conflicts)
inline size_t fwd_smem_bytes(const AttnDims& d) {
  return sizeof(float) * static_cast<size_t>(kKeys * (d.d + d.dv) + kRows * d.d + kKeys * kRows);
}

// q (sq,h,d) k (sk,hk,d) v (sk,hk,dv) -> o (sq,h,dv), lse (h,sq); sinks (h) or null; grid (ceil(sq/kRows), h).
// No local memory: the accumulator is kMaxD registers, every loop over it fully unrolled (elements
// e >= dv predicated off), and what a thread would index at run time (its Q row, the tile's
// scores) lives in shared memory (fwd_smem_bytes).
template <class T>
__global__ void __launch_bounds__(kRows) fwd_kernel(const T* __restrict__ q, const T* __restrict__ k,
                                                    const T* __restrict__ v, Dims D, MaskRule mask, float scale,
                                                    T* __restrict__ o, float* __restrict__ lse,
                                                    const float* __restrict__ sinks) {
  CPLAB_DYNAMIC_SMEM(float, smem);
  float* ks = smem;                       // (kKeys, d)
  float* vs = ks + kKeys * D.d;           // (kKeys, dv)
  float* qs = vs + kKeys * D.dv;          // (d, kRows): this block's Q rows, transposed
  float* ss = qs + kRows * D.d;           // (kKeys, kRows): this tile's scaled logits, transposed
  const int t = static_cast<int>(threadIdx.x);
  const std::int64_t i = blockIdx.y, kh = i / (D.h / D.hk);
  const std::int64_t a = static_cast<std::int64_t>(blockIdx.x) * kRows + t;
  const bool valid = a < D.sq;
  const KeyRange kr = valid ? mask.keys(a, D.sk) : KeyRange{0, 0};
  for (int e = 0; e < D.d; ++e) qs[e * kRows + t] = valid ? to_float(q[(a * D.h + i) * D.d + e]) : 0.f;
  float acc[kMaxD];
#pragma unroll
  for (int e = 0; e < kMaxD; ++e) acc[e] = 0.f;
  OnlineRow<float> row;
  for (std::int64_t t0 = 0; t0 < D.sk; t0 += kKeys) {
    const int n = static_cast<int>(D.sk - t0 < kKeys ? D.sk - t0 : kKeys);
    const bool mine = kr.lo < kr.hi && kr.lo < t0 + n && kr.hi > t0;
    if (!__syncthreads_or(mine)) continue;  // no row of this block sees the tile
    stage(ks, k, t0, n, D.hk, kh, D.d);
    stage(vs, v, t0, n, D.hk, kh, D.dv);
    __syncthreads();
    if (mine) {
      float bmax = neg_inf<float>();
      for (int j = 0; j < n; ++j) {
        const std::int64_t b = t0 + j;
        float s = neg_inf<float>();
        if (b >= kr.lo && b < kr.hi) {
          float dot = 0.f;
          for (int e = 0; e < D.d; ++e) dot += qs[e * kRows + t] * ks[j * D.d + e];
          s = scale * dot;
        }
        ss[j * kRows + t] = s;
        bmax = fmaxf(bmax, s);
      }
      const float alpha = online_rescale(row, bmax);
#pragma unroll
      for (int e = 0; e < kMaxD; ++e) acc[e] *= alpha;
      for (int j = 0; j < n; ++j) {
        const float p = online_weight(row, ss[j * kRows + t]);
        online_add(row, p);
#pragma unroll
        for (int e = 0; e < kMaxD; ++e)
          if (e < D.dv) acc[e] += p * vs[j * D.dv + e];
      }
    }
    __syncthreads();
  }
  if (!valid) return;
  float inv = online_inv_l(row), L = online_lse(row);
  if (sinks) {  // the row's whole key set is done: its head's sink joins the denominator once
    const SinkFold f = fold_sink(L, sinks[i]);
    inv *= f.weight, L = f.lse;
  }
#pragma unroll
  for (int e = 0; e < kMaxD; ++e)
    if (e < D.dv) o[(a * D.h + i) * D.dv + e] = from_float<T>(acc[e] * inv);
  lse[i * D.sq + a] = L;
}

// dq (sq,h,d) += scale dS K; grid (ceil(sq/kRows), h)
template <class T>
__global__ void dq_kernel(const T* __restrict__ q, const T* __restrict__ k, const T* __restrict__ v,
                          const T* __restrict__ dout, const float* __restrict__ lse, const float* __restrict__ delta,
                          Dims D, MaskRule mask, float scale, float* __restrict__ dq) {
  CPLAB_DYNAMIC_SMEM(float, smem);
  float* ks = smem;
  float* vs = smem + kKeys * D.d;
  const std::int64_t i = blockIdx.y, kh = i / (D.h / D.hk);
  const std::int64_t a = static_cast<std::int64_t>(blockIdx.x) * kRows + threadIdx.x;
  const bool valid = a < D.sq;
  const KeyRange kr = valid ? mask.keys(a, D.sk) : KeyRange{0, 0};
  float qr[kMaxD], dor[kMaxD], g[kMaxD];
  for (int e = 0; e < D.d; ++e) qr[e] = valid ? to_float(q[(a * D.h + i) * D.d + e]) : 0.f, g[e] = 0.f;
  for (int e = 0; e < D.dv; ++e) dor[e] = valid ? to_float(dout[(a * D.h + i) * D.dv + e]) : 0.f;
  const float L = valid ? lse[i * D.sq + a] : 0.f, Delta = valid ? delta[i * D.sq + a] : 0.f;
  for (std::int64_t t0 = 0; t0 < D.sk; t0 += kKeys) {
    const int n = static_cast<int>(D.sk - t0 < kKeys ? D.sk - t0 : kKeys);
    const bool mine = kr.lo < kr.hi && kr.lo < t0 + n && kr.hi > t0;
    if (!__syncthreads_or(mine)) continue;
    stage(ks, k, t0, n, D.hk, kh, D.d);
    stage(vs, v, t0, n, D.hk, kh, D.dv);
    __syncthreads();
    if (mine)
      for (int j = 0; j < n; ++j) {
        const std::int64_t b = t0 + j;
        if (b < kr.lo || b >= kr.hi) continue;
        float s = 0.f, dp = 0.f;
        for (int e = 0; e < D.d; ++e) s += qr[e] * ks[j * D.d + e];
        for (int e = 0; e < D.dv; ++e) dp += dor[e] * vs[j * D.dv + e];
        const float ds = bwd_ds(bwd_prob(scale * s, L), dp, Delta);
        for (int e = 0; e < D.d; ++e) g[e] += scale * ds * ks[j * D.d + e];
      }
    __syncthreads();
  }
  if (!valid) return;
  for (int e = 0; e < D.d; ++e) dq[(a * D.h + i) * D.d + e] += g[e];
}

// dk (sk,hk,d) += scale dS^T Q, dv (sk,hk,dv) += P^T dO; grid (ceil(sk/kRows), hk)
template <class T>
__global__ void dkdv_kernel(const T* __restrict__ q, const T* __restrict__ k, const T* __restrict__ v,
                            const T* __restrict__ dout, const float* __restrict__ lse,
                            const float* __restrict__ delta, Dims D, MaskRule mask, float scale,
                            float* __restrict__ dk, float* __restrict__ dv) {
  CPLAB_DYNAMIC_SMEM(float, smem);
  float* qs = smem;                   // (kQRows, d)
  float* dos = qs + kQRows * D.d;     // (kQRows, dv)
  float* ls = dos + kQRows * D.dv;    // (kQRows) LSE
  float* des = ls + kQRows;           // (kQRows) Delta
  std::int64_t* lo = reinterpret_cast<std::int64_t*>(des + kQRows);  // (kQRows) visible keys [lo, hi)
  std::int64_t* hi = lo + kQRows;
  const std::int64_t kh = blockIdx.y, grp = D.h / D.hk;
  const std::int64_t b = static_cast<std::int64_t>(blockIdx.x) * kRows + threadIdx.x;
  const bool valid = b < D.sk;
  float kr_[kMaxD], vr[kMaxD], gk[kMaxD], gv[kMaxD];
  for (int e = 0; e < D.d; ++e) kr_[e] = valid ? to_float(k[(b * D.hk + kh) * D.d + e]) : 0.f, gk[e] = 0.f;
  for (int e = 0; e < D.dv; ++e) vr[e] = valid ? to_float(v[(b * D.hk + kh) * D.dv + e]) : 0.f, gv[e] = 0.f;
  for (std::int64_t i = kh * grp; i < (kh + 1) * grp; ++i)
    for (std::int64_t a0 = 0; a0 < D.sq; a0 += kQRows) {
      const int n = static_cast<int>(D.sq - a0 < kQRows ? D.sq - a0 : kQRows);
      __syncthreads();  // the previous tile is no longer read
      if (threadIdx.x < n) {
        const KeyRange r = mask.keys(a0 + threadIdx.x, D.sk);
        lo[threadIdx.x] = r.lo, hi[threadIdx.x] = r.hi;
        ls[threadIdx.x] = lse[i * D.sq + a0 + threadIdx.x];
        des[threadIdx.x] = delta[i * D.sq + a0 + threadIdx.x];
      }
      __syncthreads();
      bool mine = false;
      for (int r = 0; r < n && valid; ++r) mine = mine || (b >= lo[r] && b < hi[r]);
      if (!__syncthreads_or(mine)) continue;
      stage(qs, q, a0, n, D.h, i, D.d);
      stage(dos, dout, a0, n, D.h, i, D.dv);
      __syncthreads();
      if (mine)
        for (int r = 0; r < n; ++r) {
          if (b < lo[r] || b >= hi[r]) continue;
          float s = 0.f, dp = 0.f;
          for (int e = 0; e < D.d; ++e) s += qs[r * D.d + e] * kr_[e];
          for (int e = 0; e < D.dv; ++e) dp += dos[r * D.dv + e] * vr[e];
          const float p = bwd_prob(scale * s, ls[r]), ds = bwd_ds(p, dp, des[r]);
          for (int e = 0; e < D.dv; ++e) gv[e] += p * dos[r * D.dv + e];
          for (int e = 0; e < D.d; ++e) gk[e] += scale * ds * qs[r * D.d + e];
        }
    }
  if (!valid) return;
  for (int e = 0; e < D.d; ++e) dk[(b * D.hk + kh) * D.d + e] += gk[e];
  for (int e = 0; e < D.dv; ++e) dv[(b * D.hk + kh) * D.dv + e] += gv[e];
}

}  // namespace

#ifndef CPLAB_EMULATE
template <class T>
void v1_forward(const AttnDims& d, const T* q, const T* k, const T* v, const MaskRule& mask, float scale, T* o,
                float* lse, const float* sinks, cudaStream_t s) {
  const size_t smem = fwd_smem_bytes(d);
  allow_smem(fwd_kernel<T>, smem);
  fwd_kernel<T><<<dim3(blocks_for(d.sq, kRows), static_cast<unsigned>(d.h)), kRows, smem, s>>>(q, k, v, plain(d), mask,
                                                                                              scale, o, lse, sinks);
  check_launch("attention v1 forward");
}

template <class T>
void v1_backward(const AttnDims& d, const T* q, const T* k, const T* v, const T* dout, const float* lse,
                 const float* delta, const MaskRule& mask, float scale, float* dq, float* dk, float* dv,
                 cudaStream_t s) {
  const size_t smem_q = sizeof(float) * static_cast<size_t>(kKeys * (d.d + d.dv));
  dq_kernel<T><<<dim3(blocks_for(d.sq, kRows), static_cast<unsigned>(d.h)), kRows, smem_q, s>>>(
      q, k, v, dout, lse, delta, plain(d), mask, scale, dq);
  check_launch("attention v1 backward dq");
  const size_t smem_kv = sizeof(float) * static_cast<size_t>(kQRows * (d.d + d.dv + 2)) + 2 * sizeof(std::int64_t) * kQRows;
  dkdv_kernel<T><<<dim3(blocks_for(d.sk, kRows), static_cast<unsigned>(d.hk)), kRows, smem_kv, s>>>(
      q, k, v, dout, lse, delta, plain(d), mask, scale, dk, dv);
  check_launch("attention v1 backward dk dv");
}

#define CPLAB_V1(T)                                                                                                  \
  template void v1_forward<T>(const AttnDims&, const T*, const T*, const T*, const MaskRule&, float, T*, float*,   \
                              const float*, cudaStream_t);                                                  \
  template void v1_backward<T>(const AttnDims&, const T*, const T*, const T*, const T*, const float*, const float*, \
                               const MaskRule&, float, float*, float*, float*, cudaStream_t);
CPLAB_V1(float)
CPLAB_V1(__half)
CPLAB_V1(__nv_bfloat16)
#undef CPLAB_V1
#endif  // CPLAB_EMULATE

}  // namespace cplab::cuda::detail
