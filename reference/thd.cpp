// thd.cpp: packing, padding, per-token facts and token masks for packed sequences (see thd.h).
#include "thd.h"

#include <algorithm>
#include <cctype>
#include <sstream>
#include <stdexcept>

#include "error.h"

namespace cplab {

Packing Packing::unpadded(std::vector<index_t> cu) {
  Packing p{cu, cu};
  return p;
}

Packing Packing::padded(std::vector<index_t> cu, index_t factor) {
  require(factor >= 1, "padding factor " + std::to_string(factor) + " must be >= 1");
  Packing p{cu, {0}};
  for (size_t s = 0; s + 1 < cu.size(); ++s) {
    const index_t len = cu[s + 1] - cu[s];
    p.cu_seqlens_padded.push_back(p.cu_seqlens_padded.back() + (len + factor - 1) / factor * factor);
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
  for (size_t i = 1; i < cu.size(); ++i)
    require(cu[i] > cu[i - 1], "cu_seqlens must strictly increase (sequence " + std::to_string(i - 1) +
                                   " would have length " + std::to_string(cu[i] - cu[i - 1]) + ")");
  require(cu.back() <= kMaxPackedTokens, "cu_seqlens total " + std::to_string(cu.back()) + " is more than 2^40 tokens");
}

std::vector<index_t> parse_cu_seqlens(const std::string& text) {
  const std::vector<index_t> cu = parse_int_list(text, "cu_seqlens");
  check_cu_seqlens(cu);
  return cu;
}

void check_packed_lengths(const std::vector<index_t>& cu, Layout layout, index_t cp) {
  require(cp >= 1, "cp " + std::to_string(cp) + " must be >= 1");
  const index_t f = layout_factor(layout, cp);
  const std::string rule = layout_rule(layout, cp);
  for (size_t s = 0; s + 1 < cu.size(); ++s) {
    const index_t len = cu[s + 1] - cu[s];
    require(len % f == 0, "sequence " + std::to_string(s) + " has length " + std::to_string(len) +
                              ", not a multiple of " + rule + " (" + to_string(layout) +
                              " splits every sequence into " + (layout == Layout::zigzag ? "2*cp" : "cp") +
                              " equal chunks); pass --pad to pad each sequence to a multiple of " +
                              std::to_string(f));
  }
}

Mask token_mask(const Packing& p, const std::vector<index_t>& q, const std::vector<index_t>& k, bool causal) {
  if (!std::is_sorted(k.begin(), k.end())) throw std::logic_error("token_mask: keys must be sorted by position");
  std::vector<std::int64_t> lo(q.size()), hi(q.size());
  for (size_t a = 0; a < q.size(); ++a) {
    const index_t s = p.seq_of(q[a]), start = p.cu_seqlens_padded[static_cast<size_t>(s)];
    const index_t pos = q[a] - start, len = p.length(s);
    if (pos >= len) {  // padding query: sees nothing
      lo[a] = hi[a] = 0;
      continue;
    }
    const index_t end = start + (causal ? pos + 1 : len);  // visible keys: packed positions [start, end)
    lo[a] = std::lower_bound(k.begin(), k.end(), start) - k.begin();
    hi[a] = std::lower_bound(k.begin(), k.end(), end) - k.begin();
  }
  return Mask::ranges(std::move(lo), std::move(hi));
}

std::vector<index_t> rope_positions(const Partition& part, const Packing& p, index_t rank) {
  std::vector<index_t> pos = part.indices(rank);
  for (index_t& g : pos) g = p.pos_of(g);
  return pos;
}

}  // namespace cplab
