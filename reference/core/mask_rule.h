// mask_rule.h: the one definition of which keys a query sees, for host and device.
//
// What it is, two levels:
//   PositionRule  the run's mask over token POSITIONS (a global position, or the position inside
//                 its sequence when packed): causal, sliding window, chunked. keys(i, len): the
//                 positions query i sees among [0, len), always ONE contiguous run [lo, hi):
//                   none                       [0, len)
//                   causal                     [0, i + 1)                 j <= i
//                   causal, window W           [i - W + 1, i + 1)         i - W < j <= i   (FlashAttention's
//                                                                          window_size = (W-1, 0))
//                   window W, not causal       [i - W + 1, i + W)         |i - j| < W
//                   causal, chunk C            [floor(i/C)*C, i + 1)      j <= i, floor(i/C) == floor(j/C)
//                 Every tile mask of every mode (thd.h token_mask, the ring's and all-gather's tiles,
//                 Ulysses' mask) and the dense oracle come from it.
//   MaskRule      one tile's mask in the tile's LOCAL coordinates (row a, key column b), the plain-
//                 data form of mask.h's Mask (kind, causal offset, and for ranges pointers to
//                 per-row [lo, hi) arrays in whatever memory the caller runs in), with keys(a, sk):
//                 the visible keys of row a, ONE contiguous run [lo, hi) clamped to [0, sk):
//                   none     [0, sk)
//                   causal   [0, a + offset + 1)           key b visible iff b <= a + offset
//                   ranges   [lo[a], hi[a])                packed sequences, windows (mask.h explains)
//                 Mask::keys() in the CPU reference and the CUDA kernels both call it (CPLAB_HD), so
//                 a kernel applies exactly the reference's mask without materialising sq x sk.
// What it is not: the validation of W and C (cp_spec.h: W, C in [1, 2^31 - 1], chunk only with
// causal, not both), the owner of the range arrays (Mask owns them on the host; the CUDA host API
// copies them to the device), or the FLOP count of a tile (mask.h visible_pairs).
#pragma once

#include <cstdint>

#include "core/hd.h"

namespace cplab {

struct KeyRange {
  std::int64_t lo = 0, hi = 0;  // visible keys [lo, hi); empty when lo >= hi
};

enum class MaskKind : int { none = 0, causal = 1, ranges = 2 };

CPLAB_HD constexpr std::int64_t clamp_key(std::int64_t x, std::int64_t sk) { return x < 0 ? 0 : (x > sk ? sk : x); }

struct PositionRule {
  bool causal = false;
  std::int64_t window = 0;  // W >= 1: sliding window (0: none)
  std::int64_t chunk = 0;   // C >= 1: chunked attention, with causal (0: none)

  // no window and no chunk: the plain causal or full mask (the modes' closed-form sections apply)
  CPLAB_HD constexpr bool plain() const { return window <= 0 && chunk <= 0; }
  // the positions query i (0 <= i < len) sees, clamped to [0, len): one run, never empty for i < len
  CPLAB_HD constexpr KeyRange keys(std::int64_t i, std::int64_t len) const {
    std::int64_t lo = 0, hi = causal ? i + 1 : len;
    if (window > 0) {
      lo = i - window + 1;
      if (!causal) hi = i + window;
    }
    if (chunk > 0) lo = i / chunk * chunk;
    return {clamp_key(lo, len), clamp_key(hi, len)};
  }
  // visible (query, key) pairs of a sequence of len tokens, in closed form (no per-row walk):
  // what the dense oracle's FLOPs count
  CPLAB_HD constexpr std::int64_t pairs(std::int64_t len) const {
    if (len <= 0) return 0;
    if (chunk > 0) {  // full chunks of C tokens, then the last partial one, each a causal triangle
      const std::int64_t full = len / chunk, rest = len % chunk;
      return full * (chunk * (chunk + 1) / 2) + rest * (rest + 1) / 2;
    }
    if (window > 0) {
      // causal: row i sees min(i + 1, W) keys; not causal: the same behind and ahead, itself once
      const std::int64_t w = window < len ? window : len;
      const std::int64_t behind = w * (w + 1) / 2 + (len - w) * w;
      return causal ? behind : 2 * behind - len;
    }
    return causal ? len * (len + 1) / 2 : len * len;
  }
};

struct MaskRule {
  MaskKind kind = MaskKind::none;
  std::int64_t offset = 0;           // causal: key b visible to row a iff b <= a + offset
  const std::int64_t* lo = nullptr;  // ranges: [sq] first visible key of each row
  const std::int64_t* hi = nullptr;  // ranges: [sq] one past the last visible key of each row

  CPLAB_HD constexpr KeyRange keys(std::int64_t a, std::int64_t sk) const {
    if (kind == MaskKind::causal) return {0, clamp_key(a + offset + 1, sk)};
    if (kind == MaskKind::ranges) return {clamp_key(lo[a], sk), clamp_key(hi[a], sk)};
    return {0, sk};
  }
};

}  // namespace cplab
