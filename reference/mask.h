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
// plus visible_pairs(), the number of (query, key) pairs a mask leaves, from which every FLOP count
// in cplab is derived (flops.h).
// What it is not: per-sequence (THD) masks; those arrive with sequence packing.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>

namespace cplab {

struct Mask {
  enum class Kind { none, causal };
  Kind kind = Kind::none;
  std::int64_t offset = 0;  // causal only: key b visible to query a iff b <= a + offset

  static Mask none() { return Mask{Kind::none, 0}; }
  static Mask causal(std::int64_t offset = 0) { return Mask{Kind::causal, offset}; }

  // number of visible keys of query row a (keys 0 .. n-1 are the visible ones: every mask here is
  // a prefix mask), for a tile with sk keys
  std::int64_t visible_keys(std::int64_t a, std::int64_t sk) const {
    if (kind == Kind::none) return sk;
    return std::clamp<std::int64_t>(a + offset + 1, 0, sk);
  }
  bool operator==(const Mask&) const = default;
};

// number of visible (query, key) pairs of an sq x sk tile under mask m, in closed form
inline std::int64_t visible_pairs(const Mask& m, std::int64_t sq, std::int64_t sk) {
  if (sq <= 0 || sk <= 0) return 0;
  if (m.kind == Mask::Kind::none) return sq * sk;
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

inline std::string to_string(const Mask& m) {
  if (m.kind == Mask::Kind::none) return "none";
  return m.offset == 0 ? "causal" : "causal(" + std::to_string(m.offset) + ")";
}

}  // namespace cplab
