// mask_rule.h: the one rule for which keys a query row of a tile may see, for host and device.
//
// What it is: MaskRule, the plain-data form of mask.h's Mask (kind, causal offset, and for ranges
// pointers to per-row [lo, hi) arrays in whatever memory the caller runs in), with keys(a, sk): the
// visible keys of row a, always ONE contiguous run [lo, hi) clamped to [0, sk):
//   none     [0, sk)
//   causal   [0, a + offset + 1)           key b visible iff b <= a + offset
//   ranges   [lo[a], hi[a])                packed sequences, windows (mask.h explains)
// Mask::keys() in the CPU reference and the CUDA kernels both call it (CPLAB_HD), so a kernel
// applies exactly the reference's mask without materialising an sq x sk matrix.
// What it is not: the owner of the range arrays (Mask owns them on the host; the CUDA host API
// copies them to the device), or the FLOP count (mask.h visible_pairs).
#pragma once

#include <cstdint>

#include "core/hd.h"

namespace cplab {

struct KeyRange {
  std::int64_t lo = 0, hi = 0;  // visible keys [lo, hi); empty when lo >= hi
};

enum class MaskKind : int { none = 0, causal = 1, ranges = 2 };

CPLAB_HD constexpr std::int64_t clamp_key(std::int64_t x, std::int64_t sk) { return x < 0 ? 0 : (x > sk ? sk : x); }

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
