// flops.h: how cplab counts attention work (the FlashAttention convention, made mask-exact).
//
// What it is: FLOPs of one attention tile from its number of visible (query, key) pairs
// (mask.h visible_pairs), for h query heads, QK head dim d and V head dim dv:
//   forward   2 GEMMs  (S = Q K^T, O = P V)                     2 * pairs * h * (d + dv)
//   backward  5 GEMMs  (S again, dV = P^T dO, dP = dO V^T,
//                       dQ = dS K, dK = dS^T Q)                  2 * pairs * h * (3d + 2dv)
// With d == dv these are 4*pairs*h*d and 2.5x that, FlashAttention's rule; for a full square causal
// mask pairs = s(s+1)/2, i.e. "half" plus the diagonal. Softmax exponentials are not counted.
// GQA does not change FLOPs (h is the number of query heads).
// What it is not: a count of what a kernel executes (a blocked kernel also computes the masked half
// of its diagonal blocks); these are the useful FLOPs, the ones that decide load balance.
#pragma once

#include <cstdint>

namespace cplab {

// N: std::int64_t for counts, double for estimates of sizes whose counts would overflow
template <class N>
constexpr N fwd_flops(N pairs, N h, N d, N dv) {
  return 2 * pairs * h * (d + dv);
}
template <class N>
constexpr N bwd_flops(N pairs, N h, N d, N dv) {
  return 2 * pairs * h * (3 * d + 2 * dv);
}

}  // namespace cplab
