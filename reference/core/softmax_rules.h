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

}  // namespace cplab
