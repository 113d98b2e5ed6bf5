// infer_common.h: what the inference variants (and their planner) share: one tile's mask, its
// trace event, and the padded flat buffers of the ring messages.
//
// What it is: infer_tile_mask (token_mask over the spec's kv_packing: a query at KV row g sees the
// keys of its own request at the positions the run's PositionRule gives for position P_b + t),
// infer_tile_event (cp_common.h's tile event over KV-space rows), infer_attend (one tile computed
// into a partial (O, LSE); skipped when it sees no key), and pad_rows / take_rows (a tensor's rows
// flattened and zero-padded to a fixed row count, as the paper pads every ring message to the
// largest shard, and back).
// What it is not: an algorithm (infer_pass_kv.cpp, infer_pass_q.cpp, infer_decode_ag.cpp).
#pragma once

#include <string>
#include <vector>

#include "core/mask.h"
#include "core/tensor.h"
#include "infer/infer_spec.h"
#include "sim/trace.h"

namespace cplab {

struct InferTile {
  Mask mask;
  bool skipped = true;  // no visible (query, key) pair
};
// queries at KV rows q (any order) against keys at KV rows k (ascending)
InferTile infer_tile_mask(const InferSpec& s, const std::vector<index_t>& q, const std::vector<index_t>& k);
Event infer_tile_event(const InferSpec& s, int step, int rank, int peer, const std::string& section,
                       const InferTile& t, const std::vector<index_t>& q, const std::vector<index_t>& k, double dur_us);

// o (q.n, h, dv) and lse (h, q.n) of q (n, h, d) against k (m, hk, d), v (m, hk, dv) under t.mask;
// a skipped tile leaves o = 0 and lse = -inf (the empty partial, merge.h)
template <class T>
void infer_attend(const InferSpec& s, const InferTile& t, const Tensor3<T>& q, const Tensor3<T>& k,
                  const Tensor3<T>& v, Tensor3<T>& o, Rows<T>& lse);

// x's rows flattened, then zeros up to `rows` rows (rows >= x.n)
template <class T>
std::vector<T> pad_rows(const Tensor3<T>& x, index_t rows);
// the first n rows of (rows, h, d) at element offset off of buf
template <class T>
Tensor3<T> take_rows(const std::vector<T>& buf, size_t off, index_t n, index_t h, index_t d);

// a rank's partial (O, LSE) rows as one flat buffer [O (n, h, dv) | LSE (h, n)], and back
template <class T>
std::vector<T> flat_partial(const Tensor3<T>& o, const Rows<T>& lse);
template <class T>
void unflat_partial(const std::vector<T>& buf, size_t off, Tensor3<T>& o, Rows<T>& lse);

// The closing step of pass-Q and decode-ag: got[j] holds, from every source rank in order, the
// partial [O (n_j, h, dv) | LSE (h, n_j)] of owner j's n_j new tokens; each owner merges them in
// source-rank order (merge.h; an empty partial weighs exactly 0) and applies the sinks (empty: none)
template <class T>
void merge_at_owners(const InferSpec& s, const std::vector<std::vector<T>>& got, const std::vector<T>& sinks,
                     std::vector<Tensor3<T>>& o, std::vector<Rows<T>>& lse);

}  // namespace cplab
