// softmax_rules.h: the scalar rules of exact blockwise softmax attention, shared by the CPU
// reference and the CUDA kernels (CPLAB_HD; T = float or double).
//
// What it is:
//   lse_merge / merge_weight   combining two partials over disjoint key sets (merge.h explains):
//                              L = max + log1p(exp(min - max)), weight of a partial exp(L_i - L)
//   OnlineRow                  FlashAttention-2's per-row state over the key blocks seen so far:
//                              m = running max of the scaled logits, l = sum exp(s - m); the
//                              caller keeps acc = sum exp(s - m) v and rescales it by
//                              online_rescale()'s factor whenever m grows
//   online_lse / online_inv_l  the row's LSE = m + log l and the 1 / l that normalises acc
//   bwd_prob / bwd_ds          the backward's recomputed probability P = exp(s - LSE) and
//                              dS = P (dP - Delta), from the FINAL (merged) LSE
//   FastRow, fast_*            the v2 / v3 kernels' own form of OnlineRow and bwd_prob (FA2's):
//                              raw logits, exp2 with scale * log2(e) folded into one FMA,
//                              ex2.approx on the device, the -inf guard once per row (float only;
//                              the CPU reference never uses it, its numerics are the rules above)
// Every rule is -inf safe: a fully masked row has m = -inf, l = 0, LSE = -inf, O = 0 and backward
// contributions 0 (no exp(-inf - -inf) = NaN anywhere), as the reference's attention_kernel.h.
// What it is not: a kernel or a loop over tiles (attention_kernel.cpp, cuda/attention_*.cu).
#pragma once

#include <math.h>

#include "core/hd.h"

namespace cplab {

CPLAB_HD inline float hd_exp(float x) { return expf(x); }
CPLAB_HD inline double hd_exp(double x) { return exp(x); }
CPLAB_HD inline float hd_log(float x) { return logf(x); }
CPLAB_HD inline double hd_log(double x) { return log(x); }
CPLAB_HD inline float hd_log1p(float x) { return log1pf(x); }
CPLAB_HD inline double hd_log1p(double x) { return log1p(x); }

template <class T>
CPLAB_HD constexpr T neg_inf() {
  return -static_cast<T>(INFINITY);
}

// log(exp(a) + exp(b)), -inf safe: merge(-inf, x) = x, merge(-inf, -inf) = -inf
template <class T>
CPLAB_HD T lse_merge(T a, T b) {
  if (a == neg_inf<T>()) return b;
  if (b == neg_inf<T>()) return a;
  const T mx = a > b ? a : b, mn = a > b ? b : a;
  return mx + hd_log1p(hd_exp(mn - mx));
}

// exp(l_part - l_total), with an empty partial (l_part = -inf) weighted exactly 0
template <class T>
CPLAB_HD T merge_weight(T l_part, T l_total) {
  return l_part == neg_inf<T>() ? T(0) : hd_exp(l_part - l_total);
}

template <class T>
struct OnlineRow {
  T m = neg_inf<T>();  // running max of the scaled logits seen so far (-inf: none visible yet)
  T l = 0;             // sum over those logits s of exp(s - m)
};

// A new block of logits whose max is block_max (-inf if all masked) arrives: m grows to cover it.
// Returns the factor by which l (done here) and the caller's acc must be multiplied.
template <class T>
CPLAB_HD T online_rescale(OnlineRow<T>& r, T block_max) {
  const T m_new = r.m > block_max ? r.m : block_max;
  if (m_new == neg_inf<T>()) return T(1);                     // still nothing visible: l = acc = 0
  const T alpha = r.m == neg_inf<T>() ? T(0) : hd_exp(r.m - m_new);  // old sums were empty when m = -inf
  r.m = m_new;
  r.l *= alpha;
  return alpha;
}

// weight of one logit s (-inf = masked) under the row's current max; the caller adds it to l
// (online_add) and p * v to acc
template <class T>
CPLAB_HD T online_weight(const OnlineRow<T>& r, T s) {
  return s == neg_inf<T>() ? T(0) : hd_exp(s - r.m);
}
template <class T>
CPLAB_HD void online_add(OnlineRow<T>& r, T p) {
  r.l += p;
}

// LSE of the row (natural log): m + log l, -inf for a fully masked row
template <class T>
CPLAB_HD T online_lse(const OnlineRow<T>& r) {
  return r.l > T(0) ? r.m + hd_log(r.l) : neg_inf<T>();
}
// 1 / l, the factor that turns acc into O; 0 for a fully masked row (O = 0)
template <class T>
CPLAB_HD T online_inv_l(const OnlineRow<T>& r) {
  return r.l > T(0) ? T(1) / r.l : T(0);
}

// backward: P = exp(s - LSE) from the row's final LSE; a masked logit or an empty row gives 0
template <class T>
CPLAB_HD T bwd_prob(T s, T lse) {
  return (s == neg_inf<T>() || lse == neg_inf<T>()) ? T(0) : hd_exp(s - lse);
}
// backward: dS = P (dP - Delta), Delta = rowsum(dO * O) of the final O
template <class T>
CPLAB_HD T bwd_ds(T p, T dp, T delta) {
  return p * (dp - delta);
}

// ---- the kernels' fast path (v2 / v3 forward; float) ---------------------------------------------
// The same online softmax in base 2 on RAW logits x = q.k (unscaled), as FlashAttention-2 does:
// with c = scale * log2(e) (scale > 0, attention.cu checks it) a row keeps m = max raw logit and
// l = sum 2^(x c - m c) = sum exp(scale x - scale m), so each score costs one FMA and one
// exponential: p = 2^fma(x, c, -mc). The -inf guard is once per row, in mc (fast_offset): while a
// row has seen no key, mc = 0, and a masked logit x = -inf gives fma(-inf, c, -mc) = -inf, 2^-inf = 0
// with no branch. The LSE (natural log) is m scale + log l, as online_lse's m + log l.
// fast_exp2 is ex2.approx.ftz.f32 on the device (one MUFU.EX2; the PTX ISA bounds its error, far
// below bf16 / fp16 rounding) and exp2f on the host, where the kernels' source runs under the CPU
// emulator (tests/cuda/emu). Numerics differ from the rules above in float rounding only (c and mc
// are rounded once), which is why the CPU reference (double and float) keeps those.
constexpr float kLog2e = 1.4426950408889634f;

CPLAB_HD inline float fast_exp2(float x) {
#if defined(__CUDA_ARCH__)
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
#else
  return exp2f(x);
#endif
}

struct FastRow {
  float m = neg_inf<float>();  // running max of the RAW logits seen so far (-inf: none visible yet)
  float l = 0;                 // sum over them of 2^(x c - m c)
};

// the row's offset m c, or 0 while it has seen no key (then every logit is -inf: 2^-inf = 0)
CPLAB_HD inline float fast_offset(float m, float c) { return m == neg_inf<float>() ? 0.f : m * c; }

// a block whose max raw logit is block_max (-inf if all masked) arrives: m grows to cover it.
// Returns the factor for l (applied here) and the caller's acc; mc: the new offset for fast_weight.
// Old m = -inf gives alpha = 2^(-inf - mc) = 0 (the old sums were empty), so no branch is needed.
CPLAB_HD inline float fast_rescale(FastRow& r, float block_max, float c, float& mc) {
  const float m_new = fmaxf(r.m, block_max);
  mc = fast_offset(m_new, c);
  const float alpha = fast_exp2(r.m * c - mc);
  r.m = m_new;
  r.l *= alpha;
  return alpha;
}

// weight of one raw logit x (-inf = masked: 0) under the row's offset mc; the caller adds it to l
CPLAB_HD inline float fast_weight(float x, float c, float mc) { return fast_exp2(fmaf(x, c, -mc)); }

// LSE of the row (natural log): m scale + log l, -inf for a fully masked row
CPLAB_HD inline float fast_lse(const FastRow& r, float scale) { return r.l > 0.f ? r.m * scale + hd_log(r.l) : neg_inf<float>(); }
// 1 / l; 0 for a fully masked row (O = 0)
CPLAB_HD inline float fast_inv_l(const FastRow& r) { return r.l > 0.f ? 1.f / r.l : 0.f; }

// the backward's P = exp(scale x - LSE) = 2^fma(x, c, -lc) on a RAW logit x, from the row's
// fast_lse_offset lc: LSE log2(e), or +inf for a row that sees no key (LSE = -inf), so that P = 0
// there with no per-element test (as bwd_prob; a masked pair is the caller's to zero)
CPLAB_HD inline float fast_lse_offset(float lse) { return lse == neg_inf<float>() ? static_cast<float>(INFINITY) : lse * kLog2e; }
CPLAB_HD inline float fast_bwd_prob(float x, float c, float lc) { return fast_exp2(fmaf(x, c, -lc)); }

}  // namespace cplab
