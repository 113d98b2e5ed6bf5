// infer_partials.h: the pieces the inference check's hypotheses are built from (faults_infer.cpp):
// attention of the new tokens over a chosen subset of the KV rows, at chosen query positions, and
// the merges of such partials.
//
// What it is: infer_partial(spec, q, k, v, keys, qpos): for every new token (query row i of
// request b) the softmax attention over the KV rows in `keys` (sorted, KV space) of its own request
// that the run's PositionRule (mask_rule.h: causal, window, chunk) lets a query at position qpos[i]
// see, each key at its own position inside the request (cache 0..P_b-1, new tokens P_b..). The
// visible keys of a row are one run of positions, so every request is one dense_forward
// (core/dense_attention.h) under a Mask::ranges built from that rule: no new attention code. A row
// that sees no key is O = 0, LSE = -inf. No sinks here: sinks_applied adds them once per row
// (core/sinks.h apply_sinks), as the variants do on the final result.
// With keys = every KV row and qpos = infer_query_positions(spec, 0, false) it is the oracle's
// attention (infer_run.h infer_dense_reference, sinks aside); the faults change one piece:
//   positions   infer_query_positions(spec, delta, from_zero): P_b + t + delta, or t + delta
//   key subsets the KV rows of rank r (spec.kv_rows), its cache rows (spec.cache_rows), ...
//   merges      merge_partials (the exact LSE merge, merge.h), sum_partials (O summed or averaged
//               without the LSE weights)
// What it is not: a CP variant (reference/infer/) or a fault by itself (faults_infer.cpp names them).
#pragma once

#include <vector>

#include "core/dense_attention.h"
#include "infer/infer_spec.h"

namespace cplab {

// the position of every new token (T entries, query order): P_b + t + delta, or t + delta when
// from_zero (the offset of the cache forgotten)
std::vector<index_t> infer_query_positions(const InferSpec& s, index_t delta, bool from_zero);

// O (T, h, dv) and LSE (h, T) of every new token over the KV rows `keys` (sorted) at positions qpos
AttnOut<double> infer_partial(const InferSpec& s, const Tensor3<double>& q /*(T,h,d)*/,
                              const Tensor3<double>& k /*(P+T,hk,d)*/, const Tensor3<double>& v /*(P+T,hk,dv)*/,
                              const std::vector<index_t>& keys, const std::vector<index_t>& qpos);

// the exact merge (merge.h merge_streaming) of partials over disjoint key sets
AttnOut<double> merge_partials(const std::vector<AttnOut<double>>& parts);
// O = sum of the partials' O (mean: divided by their count), no LSE weights; LSE: empty
Tensor3<double> sum_partials(const std::vector<AttnOut<double>>& parts, bool mean);
// x with the sinks (h logits; none: x unchanged) applied once per row (core/sinks.h)
AttnOut<double> sinks_applied(AttnOut<double> x, const std::vector<double>& sinks);

// every KV row of the spec (0 .. KV-1), and those of the new tokens only / the cache only
std::vector<index_t> all_kv_rows(const InferSpec& s);
std::vector<index_t> cache_kv_rows(const InferSpec& s);

}  // namespace cplab
