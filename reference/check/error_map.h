// error_map.h: where a claimed output differs from the reference, and by how much is too much.
//
// What it is:
//   tolerances    the error each output may have, by the dtype it was saved in (the file's, or
//                 the least precise of its shards): float64 1e-10 (cplab's double runs, observed
//                 ~1e-15); float32 O, LSE 1e-5 and dQ, dK, dV 1e-4; float16 O 4e-3, LSE 1e-4,
//                 gradients 1e-2; bfloat16 O 2e-2, LSE 1e-4, gradients 5e-2 (docs/numerics.md and
//                 cuda/README.md's GPU tolerances); an LSE saved in a half type gets that type's O
//                 tolerance. CheckLevel: one set of tolerances, the outputs' own dtypes first, then
//                 looser "what if it was computed or merged in float32 / bfloat16" levels.
//   Chunks        the layout's chunks of each rank: zigzag 2 (global chunks r and 2P-1-r),
//                 contiguous and striped 1; packed sequences: a rank's chunk gathers its part of
//                 every sequence. chunk_of[g] = the chunk (0 or 1) of token g on its rank.
//   ErrorMap      per output x rank x chunk x head: max |x - ref| over the cell's tokens and dims,
//                 divided by max |ref| over the whole output (rel_error.h's metric, cut into cells:
//                 the largest cell is the output's error). LSE is compared on real tokens only
//                 (padding has no LSE); the same non-finite value on both sides (-inf and -inf) is
//                 equal, a finite claimed value where the reference is not +inf. A claimed NaN or
//                 infinity where the reference differs is evidence, not an error: it is counted in
//                 the map's non-finite cells (NaN, +inf, -inf per cell) and the error covers the
//                 finite values (issue 38); nonfinite_lines says where they are.
//   cell_diff     that metric's numerator over any token set, for the hypotheses (hypotheses.h);
//                 claimed_diff the same for a claimed output against a prediction (its non-finite
//                 values left out, or matched by a prediction of the same non-finite value)
// What it is not: the reference (run/experiment.h dense_reference) or the diagnosis (hypotheses.h).
#pragma once

#include <array>
#include <cmath>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "check/check_inputs.h"

namespace cplab {

struct CheckLevel {
  std::string name;  // "the outputs' dtypes", "float32", "float16", "bfloat16", or "--tolerance"
  std::array<double, kCheckTensors> tol{};
};

// an error as the reports print it: "1.2e-03" ("-" for NaN, "inf")
std::string sci_text(double x);
// the tolerance of output t saved as dtype
double dtype_tolerance(CheckTensor t, NpyDtype dtype);
// the levels a check tries, tightest first: the outputs' own tolerances (every one = tolerance when
// given), then float32's and bfloat16's where looser (a tensor keeps its own tolerance where that is
// looser still)
std::vector<CheckLevel> check_levels(const std::array<ClaimedTensor, kCheckTensors>& out, std::optional<double> tolerance);

struct Chunks {
  index_t per_rank = 1;
  std::vector<int> chunk_of;    // [S]: the chunk of token g on its rank
  std::vector<index_t> rank_of;  // [S]: the rank holding token g (spec.partition())
  // label of rank r's chunk c: "chunk 3" (zigzag: the global chunk number), "all" otherwise
  std::string label(index_t r, index_t c, index_t P) const;
};
Chunks layout_chunks(const CpSpec& spec);

// one element x against y: |x - y| when both are finite, 0 when both are the same non-finite value
// (NaN and NaN, or the same infinity), +inf otherwise; claimed: x is a claimed output, and a
// non-finite x where y is finite is no error but evidence apart (returns NaN: the caller skips it)
inline double elem_diff(double x, double y, bool claimed) {
  if (std::isfinite(x) && std::isfinite(y)) return std::abs(x - y);
  if ((std::isnan(x) && std::isnan(y)) || x == y) return 0;
  return claimed && !std::isfinite(x) && std::isfinite(y) ? std::numeric_limits<double>::quiet_NaN() : INFINITY;
}

// x against y over tokens: the largest elem_diff, and the claimed NaN / inf met (seen: non-finite
// where the reference, ref, is finite, as the error map counts them) and those y predicts (matched:
// the same non-finite value there)
struct TokenDiff {
  double max = 0;
  index_t seen = 0, matched = 0;
};
// x (n, h, d) at tokens (all when null) against y: y's token a is x's token tokens[a] when compact
// (y holds the tokens in the list's order), else the same token; real_only: skip padding tokens;
// ref (x's shape): the reference, to count seen and matched (null: not counted)
TokenDiff token_diff(const Tensor3<double>& x, const Tensor3<double>& y, const std::vector<index_t>* tokens, bool compact,
                     const Packing* real_only, bool claimed, const Tensor3<double>* ref = nullptr);
// the largest |x - ref| over tokens (all when null) of x and ref (same shape), with elem_diff's
// convention for two computed tensors; real_only: skip padding tokens
double cell_diff(const Tensor3<double>& x, const Tensor3<double>& ref, const std::vector<index_t>* tokens,
                 const Packing* real_only);
// the same for a claimed output x: its non-finite values where ref is finite left out
double claimed_diff(const Tensor3<double>& x, const Tensor3<double>& ref, const Packing* real_only);
// max |ref| over the finite values of ref (real tokens only when real_only); 1 when that is 0
double ref_scale(const Tensor3<double>& ref, const Packing* real_only);

// a claimed output's non-finite values where the reference differs: NaN, +inf, -inf
struct NonFinite {
  index_t nan = 0, pos_inf = 0, neg_inf = 0;
  index_t total() const { return nan + pos_inf + neg_inf; }
  void add(double x) { (std::isnan(x) ? nan : x > 0 ? pos_inf : neg_inf) += 1; }
};

struct ErrorMap {
  index_t ranks = 0, chunks = 0;
  std::array<index_t, kCheckTensors> heads{};        // 0: output not given
  std::array<std::vector<double>, kCheckTensors> v;  // [(rank * chunks + chunk) * heads + head]
  std::array<std::vector<NonFinite>, kCheckTensors> nonfinite;  // the same cells' claimed NaN / inf
  std::array<NonFinite, kCheckTensors> nonfinite_total;         // per output
  double at(CheckTensor t, index_t r, index_t c, index_t i) const {
    return v[idx(t)][static_cast<size_t>((r * chunks + c) * heads[idx(t)] + i)];
  }
  NonFinite nonfinite_at(CheckTensor t, index_t r, index_t c, index_t i) const {  // none when not mapped (inference)
    const std::vector<NonFinite>& n = nonfinite[idx(t)];
    return n.empty() ? NonFinite{} : n[static_cast<size_t>((r * chunks + c) * heads[idx(t)] + i)];
  }
  double max(CheckTensor t) const;  // the output's error (max over its cells, finite values only)
  bool any_nonfinite() const;
};
// out: the claimed outputs; ref and scale: the reference's, per output (scale: ref_scale)
ErrorMap error_map(const CpSpec& spec, const Chunks& chunks, const std::array<ClaimedTensor, kCheckTensors>& out,
                   const std::array<const Tensor3<double>*, kCheckTensors>& ref, const std::array<double, kCheckTensors>& scale);

// "where the error lives": for each output whose error is above tol, the cells above it, as lines
// such as "dK: 16 of 32 cells above 1e-04: ranks 0-7, chunk 1 of each rank, heads 0-1; worst 1.2e+00
// at rank 3 chunk 12 head 1"
std::vector<std::string> where_lines(const ErrorMap& m, const Chunks& chunks, const std::array<double, kCheckTensors>& tol);
// where the claimed NaN / inf are, one phrase per output holding some: "dQ holds 1,234 NaN (rank 2
// chunk 2, heads 0-7)", "dK holds 3 NaN and 16 +inf (ranks 0-1, chunks 0,7, heads 1)"
std::vector<std::string> nonfinite_lines(const ErrorMap& m);

}  // namespace cplab
