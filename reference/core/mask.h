// mask.h: the attention masks the reference and the CP schedules use, and their exact FLOP counts.
//
// What it is: Mask, a description (never a materialised S x S matrix) of which keys each query of a
// tile may see, in the tile's own local coordinates (query row a in [0, sq), key column b in [0, sk)):
//   none                 every key is visible
//   causal(offset)       key b is visible to query a iff b <= a + offset
//                          offset 0       top-left causal: the dense causal mask, and the zigzag
//                                         "diagonal" tile (local order = global order)
//                          offset -1      strictly lower: striped layout, KV from a later rank
//                          offset sk-sq   bottom-right causal (all-gather KV, Llama 3)
//   ranges               query a sees keys [lo[a], hi[a]): packed sequences (thd.h token_mask:
//                        same sequence, real tokens, the run's PositionRule), bottom-right windows
//                        of all-gather, sliding windows and chunks (--window, --chunk)
// In every kind a row's visible keys are ONE contiguous run, which is what lets the kernel skip
// whole blocks. Plus visible_pairs(), the number of (query, key) pairs a mask leaves, from which
// every FLOP count in cplab is derived (flops.h).
// The rule itself (which keys row a sees) is mask_rule.h's MaskRule, shared with the CUDA kernels;
// which positions a query sees (causal, window, chunk) is mask_rule.h's PositionRule, and
// sequence_mask() / thd.h token_mask() turn it into a Mask.
// What it is not: arbitrary boolean masks (windows with holes, ...), or a matrix.
#pragma once

#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/mask_rule.h"

namespace cplab {

struct Mask {
  using Kind = MaskKind;
  Kind kind = Kind::none;
  std::int64_t offset = 0;  // causal only: key b visible to query a iff b <= a + offset
  // ranges only: query a sees keys [lo[a], hi[a]) (packed sequences: same sequence, real, causal)
  std::shared_ptr<const std::vector<std::int64_t>> lo, hi;

  static Mask none() { return Mask{Kind::none, 0, nullptr, nullptr}; }
  static Mask causal(std::int64_t offset = 0) { return Mask{Kind::causal, offset, nullptr, nullptr}; }
  static Mask ranges(std::vector<std::int64_t> lo_, std::vector<std::int64_t> hi_) {
    return Mask{Kind::ranges, 0, std::make_shared<const std::vector<std::int64_t>>(std::move(lo_)),
                std::make_shared<const std::vector<std::int64_t>>(std::move(hi_))};
  }

  // the plain-data rule (mask_rule.h) over this mask's host arrays
  MaskRule rule() const { return MaskRule{kind, offset, lo ? lo->data() : nullptr, hi ? hi->data() : nullptr}; }
  // the visible keys of query row a in a tile with sk keys: always one contiguous run
  KeyRange keys(std::int64_t a, std::int64_t sk) const { return rule().keys(a, sk); }
  std::int64_t visible_keys(std::int64_t a, std::int64_t sk) const {
    const KeyRange r = keys(a, sk);
    return std::max<std::int64_t>(0, r.hi - r.lo);
  }
};

// number of visible (query, key) pairs of an sq x sk tile under mask m (closed form for causal)
inline std::int64_t visible_pairs(const Mask& m, std::int64_t sq, std::int64_t sk) {
  if (sq <= 0 || sk <= 0) return 0;
  if (m.kind == Mask::Kind::none) return sq * sk;
  if (m.kind == Mask::Kind::ranges) {
    std::int64_t pairs = 0;
    for (std::int64_t a = 0; a < sq; ++a) pairs += m.visible_keys(a, sk);
    return pairs;
  }
  // rows a with 0 < a + offset + 1 < sk contribute a + offset + 1; rows past that contribute sk
  const std::int64_t o = m.offset;
  const std::int64_t a_first = std::clamp<std::int64_t>(-o, 0, sq);          // first row seeing >= 1 key
  const std::int64_t a_full = std::clamp<std::int64_t>(sk - 1 - o, 0, sq);  // first row seeing all sk
  std::int64_t pairs = 0;
  if (a_first < a_full) {  // rows a_first .. a_full-1 see a+o+1 keys: an arithmetic series
    const std::int64_t lo = a_first + o + 1, hi = a_full - 1 + o + 1;
    pairs += (lo + hi) * (a_full - a_first) / 2;
  }
  pairs += (sq - std::max(a_full, a_first)) * sk;
  return pairs;
}

// The same mask in its simplest kind: a ranges mask that is "all keys" becomes none, one that is a
// causal prefix with a constant offset becomes causal(offset). Traces then read "causal(4)", not
// "ranges", wherever that is what a tile is.
inline Mask simplify(const Mask& m, std::int64_t sq, std::int64_t sk) {
  if (m.kind != Mask::Kind::ranges || sq == 0) return m;
  bool all = true, prefix = true;
  for (std::int64_t a = 0; a < sq; ++a) {
    const KeyRange r = m.keys(a, sk);
    all = all && r.lo == 0 && r.hi == sk;
    prefix = prefix && r.lo == 0;
  }
  if (all) return Mask::none();
  if (!prefix) return m;
  for (std::int64_t a = 0; a < sq; ++a) {  // the first row that sees some but not all keys fixes offset
    const std::int64_t hi = m.keys(a, sk).hi;
    if (hi <= 0 || hi >= sk) continue;
    const Mask c = Mask::causal(hi - 1 - a);
    for (std::int64_t b = 0; b < sq; ++b)
      if (c.keys(b, sk).hi != m.keys(b, sk).hi) return m;
    return c;
  }
  return m;
}

// The mask of one whole sequence of len tokens under a position rule (the dense oracle's): the
// closed-form causal / none when the rule is plain, else every row's run of rule.keys
inline Mask sequence_mask(const PositionRule& rule, std::int64_t len) {
  if (rule.plain()) return rule.causal ? Mask::causal() : Mask::none();
  std::vector<std::int64_t> lo(static_cast<size_t>(len)), hi(static_cast<size_t>(len));
  for (std::int64_t a = 0; a < len; ++a) {
    const KeyRange r = rule.keys(a, len);
    lo[static_cast<size_t>(a)] = r.lo, hi[static_cast<size_t>(a)] = r.hi;
  }
  return Mask::ranges(std::move(lo), std::move(hi));
}

inline std::string to_string(const Mask& m) {
  if (m.kind == Mask::Kind::none) return "none";
  if (m.kind == Mask::Kind::ranges) return "ranges";
  return m.offset == 0 ? "causal" : "causal(" + std::to_string(m.offset) + ")";
}

}  // namespace cplab
