// layout.h: validated token layouts (contiguous, zigzag, striped) and sharding of tensors by them.
//
// What it is: Partition = (layout, seq, cp) checked against the layout's divisibility rule, with the
// global <-> (rank, local) maps of layout_index.h (the one definition), index lists, compact
// "span" descriptions of token sets for traces, and shard / unshard of (s, h, d) tensors and
// (h, s) per-token rows (LSE). This is what the "data loader" does before CP attention starts.
// What it is not: THD / packed sequences (they have their own per-sequence layout later), or
// anything that moves data between ranks (sim/comm.h).
#pragma once

#include <string>
#include <vector>

#include "layout/layout_index.h"
#include "core/tensor.h"

namespace cplab {

// The most ranks cplab takes: the CPU reference simulates every one (a ring computes P*P tiles).
inline constexpr index_t kMaxRanks = 256;
// THE cp-size rule, 1 <= P <= kMaxRanks (cplab::Error naming it): CpSpec (modes/cp_spec.h) and
// every layout function that takes a cp (Partition, check_partition, check_packed_lengths) apply it
void check_cp_size(index_t P);

Layout parse_layout(const std::string& s);  // "contiguous" | "zigzag" | "striped", else throws
std::string to_string(Layout l);
// "2*cp = 16" (zigzag) or "cp = 8": the multiple every sequence length must be, for messages
std::string layout_rule(Layout l, index_t cp);

// A set of global token positions {begin + k * stride : 0 <= k < count}.
struct Span {
  index_t begin = 0, count = 0, stride = 1;
  bool operator==(const Span&) const = default;
};
// Compress a list of positions into maximal arithmetic runs, in order.
std::vector<Span> to_spans(const std::vector<index_t>& positions);
// how many positions the spans hold
index_t span_count(const std::vector<Span>& spans);
// the positions the spans hold, in order (the inverse of to_spans)
std::vector<index_t> positions(const std::vector<Span>& spans);
// "0..7 24..31" (runs of stride 1) or "1..29 step 4": how tutorials and messages print them
std::string to_string(const std::vector<Span>& spans);

class Partition {
 public:
  // One sequence of seq tokens. Throws cplab::Error naming the rule: cp >= 1, seq >= 1,
  // seq % (2*cp) == 0 for zigzag, seq % cp == 0 for contiguous and striped.
  Partition(Layout layout, index_t seq, index_t cp);
  // Packed sequences at offsets cu_padded (thd.h): every sequence split by the layout on its own;
  // the same rules per sequence ("sequence 1: seq 24 is not a multiple of 2*cp = 16 ...").
  Partition(Layout layout, std::vector<index_t> cu_padded, index_t cp);

  Layout layout() const { return layout_; }
  index_t seq() const { return cu_.back(); }  // total tokens (padded)
  index_t cp() const { return cp_; }
  index_t local_len() const { return seq() / cp_; }
  index_t num_seqs() const { return static_cast<index_t>(cu_.size()) - 1; }
  const std::vector<index_t>& cu_padded() const { return cu_; }
  index_t global(index_t rank, index_t local) const {
    return packed_global(layout_, cu_.data(), num_seqs(), cp_, rank, local);
  }
  RankLocal owner(index_t g) const { return packed_owner(layout_, cu_.data(), num_seqs(), cp_, g); }
  // global positions of rank r's local tokens [l0, l0 + count), in local order
  std::vector<index_t> indices(index_t rank, index_t l0 = 0, index_t count = -1) const;
  std::vector<Span> spans(index_t rank, index_t l0 = 0, index_t count = -1) const {
    return to_spans(indices(rank, l0, count));
  }

 private:
  Layout layout_;
  std::vector<index_t> cu_;
  index_t cp_;
};

// global (s, h, d) -> cp local (s/cp, h, d) tensors, and back
template <class T>
std::vector<Tensor3<T>> shard(const Partition& p, const Tensor3<T>& x);
template <class T>
Tensor3<T> unshard(const Partition& p, const std::vector<Tensor3<T>>& xs);
// the same for (h, s) per-token rows such as LSE
template <class T>
std::vector<Rows<T>> shard_rows(const Partition& p, const Rows<T>& x);
template <class T>
Rows<T> unshard_rows(const Partition& p, const std::vector<Rows<T>>& xs);

}  // namespace cplab
