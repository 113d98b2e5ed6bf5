// dcp_pattern_price.h: the pricing problem of the rank-pattern LP, solved exactly.
//
// What it is: given weights pi_i >= 0 and a makespan T, the largest value sum_{(i, c) in P} pi_i / c
// over the rank patterns P of dcp_config_lp.h (distinct samples, each at one size c it may use,
// their times t(L_i, c) summing to at most T), and a pattern reaching it. A multiple-choice
// knapsack with real times, solved without rounding by the list (Nemhauser-Ullmann) method: the
// samples are taken longest first, and after each one the list holds the pareto-optimal partial
// patterns (no other has less time and no less value), each extended by every size of the next
// sample (merged: each list is sorted by time); a partial pattern is dropped when even the best
// completion it could have, the LP optimum of the multiple-choice knapsack of the samples still to
// come (their sizes' upper concave hulls, segments taken by value per time, Sinha and Zemel 1979),
// cannot beat the best pattern found so far. Exact: V is the true maximum and the pattern returned
// a real one, unless a list passes 2048 states: then it is compressed onto a T/8192 grid keeping
// each run's least time and largest value (compressed() says so), V only over-estimates (the LP's
// proof stays valid) and the pattern may need slightly more than T (the LP does not add it).
// greedy(): a cheap real pattern by value per time, for the LP to try before pricing exactly.
// Speed: on 64 samples of code_longtail on 64 ranks the lists stay at a few dozen states per
// sample; with many samples per rank (8-16 ranks) or hundreds of near-equal ones they grow, which
// is why dcp_config_lp.cpp prices exactly only with at most 96 samples and 2 per rank.
// What it is not: a bound by itself (dcp_config_lp.h uses it), or fast on long lists.
#pragma once

#include <vector>

#include "dcp/dcp_cost.h"

namespace cplab {

struct PatternPricer {
  // jobs[i]: sample i's sizes, ascending c, times falling (dominated sizes dropped by the caller).
  // Returns V and writes pattern[i] = 1 / c for the samples of the best pattern (0 elsewhere) and
  // its time in *time (the sum of its t). Samples with pi_i <= 0 are left out.
  double best(const std::vector<std::vector<SizeOption>>& jobs, const std::vector<double>& pi, double T,
              std::vector<double>& pattern, double* time);
  // a real pattern of good value, not always the best (greedy by value per time): a cheap way
  // to find a pattern the LP's weights violate; returns its value and writes the pattern and its
  // time as best() does. Each pick takes the (sample, size) of most pi / (c t) that still fits,
  // of a sample not yet in (ties: the first sample, then the smallest size)
  double greedy(const std::vector<std::vector<SizeOption>>& jobs, const std::vector<double>& pi, double T,
                std::vector<double>& pattern, double* time);
  // whether the last call had to merge states (then V is an over-estimate: still valid for the
  // LP's proof, and the pattern it wrote may need slightly more than T)
  bool compressed() const { return compressed_; }

 private:
  struct State {
    double t, v;
    int parent;  // index in the previous stage's list (-1: the empty pattern)
    int option;  // the size taken of this stage's sample (-1: none)
  };
  std::vector<std::vector<State>> stages_;  // reused between calls
  std::vector<State> merged_, scratch_;
  std::vector<size_t> order_;                         // [stage] sample
  std::vector<std::vector<double>> seg_t_, seg_v_;    // [stage] the fractional bound's prefix sums
  void build_bounds(const std::vector<std::vector<SizeOption>>& jobs, const std::vector<double>& pi, double T);
  bool compressed_ = false;
  struct Flat {  // one (sample, size) for greedy(): its time, c, and value per time pi / (c t)
    size_t i;
    double t, c, e;
  };
  std::vector<Flat> flat_;  // greedy()'s buffer
  void compress(std::vector<State>& list, double u);
};

}  // namespace cplab
