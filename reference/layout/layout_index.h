// layout_index.h: the ONE definition of how a sequence of S tokens is split over cp ranks.
//
// What it is: constexpr index maps between a global token position g in [0, S) and its
// (rank r, local index l) for the three layouts cplab knows:
//   contiguous  rank r holds tokens [r*S/cp, (r+1)*S/cp)
//   zigzag      2*cp chunks of c = S/(2*cp) tokens; rank r holds chunk r then chunk 2*cp-1-r
//               (Megatron/TE "DualChunkSwap", Llama 3's causal load balance)
//   striped     round-robin: rank r holds tokens r, r+cp, r+2*cp, ... (Brandon et al.)
// These functions are usable from host C++ and from CUDA device code (CPLAB_HD), so the reference,
// the CUDA layout kernels, the visualizer and the tutorials all share them.
//
// What it is not: the validation: check_partition (declared here, host only, defined in layout.cpp)
// checks divisibility and names the rule that was broken. No allocation, no tensors.
#pragma once

#include <cstdint>
#include <vector>

#include "core/hd.h"

namespace cplab {

enum class Layout : int { contiguous = 0, zigzag = 1, striped = 2 };

struct RankLocal {
  std::int64_t rank;
  std::int64_t local;
};

// global position of local token l on rank r (S = seq, P = cp)
CPLAB_HD constexpr std::int64_t layout_global(Layout layout, std::int64_t S, std::int64_t P,
                                              std::int64_t r, std::int64_t l) {
  switch (layout) {
    case Layout::contiguous:
      return r * (S / P) + l;
    case Layout::zigzag: {
      const std::int64_t c = S / (2 * P);  // chunk length
      const std::int64_t chunk = (l < c) ? r : 2 * P - 1 - r;
      return chunk * c + (l % c);
    }
    case Layout::striped:
      return l * P + r;
  }
  return -1;
}

// owner (rank, local index) of global position g; the exact inverse of layout_global
CPLAB_HD constexpr RankLocal layout_owner(Layout layout, std::int64_t S, std::int64_t P,
                                          std::int64_t g) {
  switch (layout) {
    case Layout::contiguous: {
      const std::int64_t n = S / P;
      return RankLocal{g / n, g % n};
    }
    case Layout::zigzag: {
      const std::int64_t c = S / (2 * P);
      const std::int64_t chunk = g / c;
      if (chunk < P) return RankLocal{chunk, g % c};
      return RankLocal{2 * P - 1 - chunk, c + g % c};
    }
    case Layout::striped:
      return RankLocal{g % P, g / P};
  }
  return RankLocal{-1, -1};
}

// ---- packed sequences (THD) --------------------------------------------------------------------
// nseq sequences at offsets cu_padded[0..nseq] of the packed buffer (cu_padded[0] = 0), each padded
// length divisible by the layout's factor. Every sequence is split over the P ranks by `layout` on
// its own; rank r's local tokens are, sequence by sequence, its Lpad_s / P tokens of each (TE's
// thd_get_partitioned_indices for zigzag). One sequence {0, S} is the unpacked case.

// largest k in [0, nseq) with key(k) <= x, for a non-decreasing key (binary search)
template <class Key>
CPLAB_HD constexpr std::int64_t packed_find(std::int64_t nseq, std::int64_t x, Key key) {
  std::int64_t lo = 0, hi = nseq - 1;
  while (lo < hi) {
    const std::int64_t mid = (lo + hi + 1) / 2;
    if (key(mid) <= x) lo = mid;
    else hi = mid - 1;
  }
  return lo;
}

// packed position of rank r's local token l
CPLAB_HD constexpr std::int64_t packed_global(Layout layout, const std::int64_t* cu_padded,
                                              std::int64_t nseq, std::int64_t P, std::int64_t r,
                                              std::int64_t l) {
  const std::int64_t s = packed_find(nseq, l, [&](std::int64_t k) { return cu_padded[k] / P; });
  const std::int64_t len = cu_padded[s + 1] - cu_padded[s];
  return cu_padded[s] + layout_global(layout, len, P, r, l - cu_padded[s] / P);
}

// owner (rank, local index) of packed position g; the exact inverse of packed_global
CPLAB_HD constexpr RankLocal packed_owner(Layout layout, const std::int64_t* cu_padded,
                                          std::int64_t nseq, std::int64_t P, std::int64_t g) {
  const std::int64_t s = packed_find(nseq, g, [&](std::int64_t k) { return cu_padded[k]; });
  const std::int64_t len = cu_padded[s + 1] - cu_padded[s];
  const RankLocal o = layout_owner(layout, len, P, g - cu_padded[s]);
  return RankLocal{o.rank, cu_padded[s] / P + o.local};
}

// every sequence length must be a multiple of this: zigzag cuts it into 2*cp chunks, the others into cp
CPLAB_HD constexpr std::int64_t layout_factor(Layout layout, std::int64_t cp) {
  return layout == Layout::zigzag ? 2 * cp : cp;
}

// Host only. Throws cplab::Error naming the rule: cp >= 1, seq >= 1, seq % (2*cp) == 0 for zigzag,
// seq % cp == 0 for contiguous and striped. Defined in layout.cpp (library cplab_ref).
void check_partition(Layout layout, std::int64_t seq, std::int64_t cp);

// Host only (thd.cpp): cu_seqlens starts at 0, strictly increases and totals <= kMaxPackedTokens.
inline constexpr std::int64_t kMaxPackedTokens = std::int64_t{1} << 40;
void check_cu_seqlens(const std::vector<std::int64_t>& cu);
// Host only (layout.cpp): the rules of a packed partition (Partition's THD constructor): cu_padded
// starts at 0 with at least one sequence, and every padded sequence passes check_partition
// (messages say which sequence).
void check_packed_partition(Layout layout, const std::vector<std::int64_t>& cu_padded, std::int64_t cp);

// position of rank r's local token l in the rank-concatenated order (rank 0's tokens, then rank 1's, ...)
CPLAB_HD constexpr std::int64_t rank_concat_index(std::int64_t S, std::int64_t P, std::int64_t r,
                                                  std::int64_t l) {
  return layout_global(Layout::contiguous, S, P, r, l);  // rank-concatenated = the contiguous layout
}

}  // namespace cplab
