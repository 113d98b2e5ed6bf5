// pairs.h: two faults at once, the pair search of cplab check (issue 38).
//
// What it is: pair_hypotheses, run when no single fault explains the outputs at the tightest level
// with every wrong output checked (one that explains them only within a looser dtype's tolerance, or
// leaves a wrong output unchecked, may be a second fault's cover: a pair that does better ranks
// first, check.h's ranking). A pair (A, B) is a
// fault A (any family of hypotheses.h), then a fault B of a transform family (tokens out of order,
// dK / dV mixed up, LSE in base 2 or another layout, padding, an output off by a factor) applied to
// A's prediction instead of the reference: the order the data flows (A computes the outputs wrongly,
// B writes or reduces them wrongly). Which pairs: first those the single faults' partial fits
// suggest (A explains some wrong outputs and misses others: A's family is run again for A alone, at
// the sampled rows and keys plus the tokens the transforms read from them, c.token_maps), then, when
// none of those explains the outputs and while the time budget lasts, every other fault as A. Each pair is evaluated like a single hypothesis
// (evaluate_hypothesis against the claimed outputs) and only kept when every output A misses is
// checked under the pair and B moves some output beyond the tolerance; its result records how far
// each fault moves every output (moved_a against the reference, moved_b against A's prediction), the
// two faults' shares. A prediction is made only at the tokens whose sources A predicted (a token B
// reads from an unknown one is left out: NaN marks them while B runs).
// What it is not: pairs of two recomputed faults (a head map and a causal offset at once), or of
// a recomputed fault after a transform; three faults.
#pragma once

#include <string>
#include <vector>

#include "check/hypotheses.h"

namespace cplab {

struct PairSearch {
  bool ran = false;
  index_t tried = 0;                // pairs evaluated
  index_t suggested = 0;            // first faults suggested by partial fits (tried first, always)
  std::vector<std::string> firsts;  // every first fault tried, in order
  bool budget_cut = false;          // the time budget ended the search before every fault was tried as A
  double seconds = 0;
};

// adds the pairs to c.results (their family -1); c.results holds the single faults' results
PairSearch pair_hypotheses(CheckContext& c, double budget_seconds);

}  // namespace cplab
