// thd.h: packed variable-length sequences ("THD": tokens of several sequences back to back).
//
// What it is: Packing = cu_seqlens (cumulative real lengths) + cu_seqlens_padded (cumulative padded
// lengths = each sequence's offset in the packed buffer, padding at the end of each sequence), the
// helper that pads every sequence to a multiple of a factor (TE's pad_thd_sequences_for_cp with
// factor 2*cp), per-token facts (sequence, position in it = the RoPE position, real or padding),
// and token_mask: the mask between any list of query tokens and any list of key tokens (sorted by
// packed position): same sequence, real key, and the run's PositionRule (mask_rule.h: causal,
// window, chunk) over positions inside the sequence. That mask is block-diagonal across sequences
// and gives padding queries no key at all (O = 0, LSE = -inf, no gradient). Packing::single(S)
// makes it the mask of any tile of one unpacked sequence.
// What it is not: the split over ranks (layout.h Partition with cu_seqlens_padded does that, the
// same for packed and unpacked), or any attention.
#pragma once

#include <string>
#include <vector>

#include "layout/layout.h"
#include "core/mask.h"

namespace cplab {

struct Packing {
  std::vector<index_t> cu_seqlens;         // B+1 entries, cu[0] = 0: real lengths
  std::vector<index_t> cu_seqlens_padded;  // B+1 entries: offsets in the packed buffer

  // one sequence of S tokens, no padding: the unpacked case
  static Packing single(index_t S) { return Packing{{0, S}, {0, S}}; }
  // sequences used as they are (padded == real); the layout checks divisibility
  static Packing unpadded(std::vector<index_t> cu);
  // every sequence padded at its end to a multiple of factor; cplab::Error unless cu passes
  // check_cu_seqlens, 1 <= factor <= 2 * kMaxRanks (2*cp) and the padded total is <= 2^40 tokens
  static Packing padded(std::vector<index_t> cu, index_t factor);

  index_t num_seqs() const { return static_cast<index_t>(cu_seqlens.size()) - 1; }
  index_t total() const { return cu_seqlens_padded.back(); }
  index_t length(index_t s) const { return cu_seqlens[s + 1] - cu_seqlens[s]; }
  bool has_padding() const { return cu_seqlens != cu_seqlens_padded; }

  index_t seq_of(index_t g) const;        // sequence of packed position g
  index_t pos_of(index_t g) const;        // position of g within its sequence (its RoPE position)
  bool real(index_t g) const;             // false on padding
  std::vector<index_t> real_tokens() const;  // packed positions of all real tokens, in order
};

// "4,2" -> {4, 2}; throws cplab::Error naming `what` on an entry that is not an integer
std::vector<index_t> parse_int_list(const std::string& text, const std::string& what);
// the largest packed batch cplab accepts (keeps every padding computation far from overflow)
// kMaxPackedTokens and check_cu_seqlens: layout_index.h (shared with cuda/)
// "0,12,36,42" -> {0, 12, 36, 42}; throws cplab::Error unless it starts at 0 and strictly increases
std::vector<index_t> parse_cu_seqlens(const std::string& text);

// The rule a packed batch must meet for a layout over cp ranks, checked on the REAL lengths:
// every length a multiple of 2*cp (zigzag) or cp (contiguous, striped). Throws cplab::Error naming
// the sequence, the rule and the --pad fix.
void check_packed_lengths(const std::vector<index_t>& cu, Layout layout, index_t cp);

// Mask between query tokens q and key tokens k (packed positions; k sorted ascending): query g sees
// the real keys of its own sequence at the positions rule.keys(its position, real length) gives
// (mask_rule.h); padding queries see none.
Mask token_mask(const Packing& p, const std::vector<index_t>& q, const std::vector<index_t>& k, const PositionRule& rule);
// the plain rule: causal or full
inline Mask token_mask(const Packing& p, const std::vector<index_t>& q, const std::vector<index_t>& k, bool causal) {
  return token_mask(p, q, k, PositionRule{causal});
}

// RoPE position (position within its sequence) of each of rank r's local tokens
std::vector<index_t> rope_positions(const Partition& part, const Packing& p, index_t rank);

}  // namespace cplab
