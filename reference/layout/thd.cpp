// thd.cpp: packing, padding, per-token facts and token masks for packed sequences (see thd.h).
#include "layout/thd.h"

#include <algorithm>
#include <cctype>
#include <sstream>
#include <stdexcept>

#include "core/error.h"

namespace cplab {

Packing Packing::unpadded(std::vector<index_t> cu) {
  Packing p{cu, cu};
  return p;
}

Packing Packing::padded(std::vector<index_t> cu, index_t factor) {
  // the factor is 2*cp or cp with cp <= kMaxRanks; cu is check_cu_seqlens'd (entries in [0, 2^40]),
  // so a padded length is below 2^41 and only the running total needs a check
  require(factor >= 1 && factor <= 2 * kMaxRanks, "padding factor " + std::to_string(factor) + " must be in [1, " +
                                                      std::to_string(2 * kMaxRanks) +
                                                      "] (2*cp with cp <= " + std::to_string(kMaxRanks) + ")");
  check_cu_seqlens(cu);
  Packing p{cu, {0}};
  for (size_t s = 0; s + 1 < cu.size(); ++s) {
    const index_t len = cu[s + 1] - cu[s];
    p.cu_seqlens_padded.push_back(p.cu_seqlens_padded.back() + (len + factor - 1) / factor * factor);
    if (p.cu_seqlens_padded.back() > kMaxPackedTokens)
      throw Error("cu_seqlens padded to multiples of " + std::to_string(factor) + " total more than 2^40 tokens (" +
                  std::to_string(p.cu_seqlens_padded.back()) + " after sequence " + std::to_string(s) + ")");
  }
  return p;
}

index_t Packing::seq_of(index_t g) const {
  return packed_find(num_seqs(), g, [&](index_t k) { return cu_seqlens_padded[static_cast<size_t>(k)]; });
}
index_t Packing::pos_of(index_t g) const { return g - cu_seqlens_padded[static_cast<size_t>(seq_of(g))]; }
bool Packing::real(index_t g) const { return pos_of(g) < length(seq_of(g)); }

std::vector<index_t> Packing::real_tokens() const {
  std::vector<index_t> out;
  for (index_t s = 0; s < num_seqs(); ++s)
    for (index_t t = 0; t < length(s); ++t) out.push_back(cu_seqlens_padded[static_cast<size_t>(s)] + t);
  return out;
}

std::vector<index_t> parse_int_list(const std::string& text, const std::string& what) {
  require(!text.empty(), what + " is empty");
  std::vector<index_t> out;
  size_t start = 0;
  while (true) {  // every comma-separated item must be a whole integer: no blanks, no trailing comma
    const size_t end = text.find(',', start);
    const std::string item = text.substr(start, end == std::string::npos ? std::string::npos : end - start);
    size_t used = 0;
    long long v = 0;
    const bool starts_ok = !item.empty() && (std::isdigit(static_cast<unsigned char>(item[0])) || item[0] == '-');
    try {
      if (starts_ok) v = std::stoll(item, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    require(starts_ok && used == item.size(), what + " entry '" + item + "' is not an integer");
    out.push_back(v);
    if (end == std::string::npos) break;
    start = end + 1;
  }
  return out;
}

void check_cu_seqlens(const std::vector<index_t>& cu) {
  std::string text;
  for (size_t i = 0; i < cu.size() && i < 8; ++i) text += (i ? "," : "") + std::to_string(cu[i]);
  require(cu.size() >= 2, "cu_seqlens '" + text + "' needs at least two entries (0 and the total)");
  require(cu[0] == 0, "cu_seqlens must start at 0, got " + std::to_string(cu[0]));
  // cu[i - 1] >= 0 by induction, so cu[i] - cu[i - 1] can only overflow for a negative cu[i]
  for (size_t i = 1; i < cu.size(); ++i)
    if (!(cu[i] > cu[i - 1]))
      throw Error("cu_seqlens must strictly increase (sequence " + std::to_string(i - 1) +
                  (cu[i] >= 0 ? " would have length " + std::to_string(cu[i] - cu[i - 1])
                              : " would end at " + std::to_string(cu[i])) +
                  ")");
  require(cu.back() <= kMaxPackedTokens, "cu_seqlens total " + std::to_string(cu.back()) + " is more than 2^40 tokens");
}

std::vector<index_t> parse_cu_seqlens(const std::string& text) {
  const std::vector<index_t> cu = parse_int_list(text, "cu_seqlens");
  check_cu_seqlens(cu);
  return cu;
}

void check_packed_lengths(const std::vector<index_t>& cu, Layout layout, index_t cp) {
  check_cp_size(cp);
  const index_t f = layout_factor(layout, cp);
  const std::string rule = layout_rule(layout, cp);
  for (size_t s = 0; s + 1 < cu.size(); ++s) {
    const index_t len = cu[s + 1] - cu[s];
    if (len % f != 0)
      throw Error("sequence " + std::to_string(s) + " has length " + std::to_string(len) + ", not a multiple of " +
                  rule + " (" + to_string(layout) + " splits every sequence into " +
                  (layout == Layout::zigzag ? "2*cp" : "cp") +
                  " equal chunks); pass --pad to pad each sequence to a multiple of " + std::to_string(f));
  }
}

namespace {

// lower_bound(k.begin() + from, k.end(), x) when every k[j < from] is below x, in O(log distance)
size_t gallop(const std::vector<index_t>& k, size_t from, index_t x) {
  if (from >= k.size() || k[from] >= x) return from;
  size_t lo = from + 1, step = 1;  // k[< lo] < x
  while (lo + step <= k.size() && k[lo + step - 1] < x) lo += step, step *= 2;
  const size_t hi = std::min(lo + step, k.size());
  return static_cast<size_t>(std::lower_bound(k.begin() + static_cast<std::ptrdiff_t>(lo),
                                              k.begin() + static_cast<std::ptrdiff_t>(hi), x) - k.begin());
}

}  // namespace

Mask token_mask(const Packing& p, const std::vector<index_t>& q, const std::vector<index_t>& k, const PositionRule& rule) {
  if (!std::is_sorted(k.begin(), k.end())) throw std::logic_error("token_mask: keys must be sorted by position");
  // Queries in position order (every caller's case) are swept: the sequence and the first and last
  // visible key only move forward, since rule.keys' lo and hi never decrease with the position
  // (O(|q| + |k|)); otherwise each query searches on its own.
  const bool sweep = std::is_sorted(q.begin(), q.end());
  std::vector<std::int64_t> lo(q.size()), hi(q.size());
  index_t s = -1, start = 0, len = 0;
  size_t seq_lo = 0, at_lo = 0, at_hi = 0;  // the real keys of sequence s begin at k[seq_lo]
  for (size_t a = 0; a < q.size(); ++a) {
    index_t t = sweep ? std::max<index_t>(s, 0) : p.seq_of(q[a]);
    if (sweep)
      while (t + 1 < p.num_seqs() && p.cu_seqlens_padded[static_cast<size_t>(t + 1)] <= q[a]) ++t;
    if (t != s || !sweep) {  // a new sequence (or an unsorted query): search from its first key
      if (!sweep) seq_lo = 0;
      s = t, start = p.cu_seqlens_padded[static_cast<size_t>(s)], len = p.length(s);
      seq_lo = gallop(k, seq_lo, start);
      at_lo = at_hi = seq_lo;
    }
    if (q[a] - start >= len) {  // padding query: sees nothing
      lo[a] = hi[a] = 0;
      continue;
    }
    // the rule's positions inside the sequence (real keys only: [0, len)), as indices into k
    const KeyRange r = rule.keys(q[a] - start, len);
    at_lo = gallop(k, at_lo, start + r.lo);
    at_hi = gallop(k, std::max(at_lo, at_hi), start + r.hi);
    lo[a] = static_cast<std::int64_t>(at_lo);
    hi[a] = static_cast<std::int64_t>(at_hi);
  }
  return Mask::ranges(std::move(lo), std::move(hi));
}

std::vector<index_t> rope_positions(const Partition& part, const Packing& p, index_t rank) {
  std::vector<index_t> pos = part.indices(rank);
  for (index_t& g : pos) g = p.pos_of(g);
  return pos;
}

}  // namespace cplab
