// dcp_config_lp.h: the rank-pattern (configuration) LP test for DCP lower bounds.
//
// What it is: a test that a makespan T is too short, stronger than the dual feasible functions of
// dcp_bounds.h. In any schedule of makespan <= T, rank r runs a set P_r of distinct samples (the
// samples of the groups it belongs to), one after another, so sum_{i in P_r} t(L_i, c_i) <= T: a
// "pattern". For any weights pi_i >= 0, let V = the largest sum_{(i, c) in P} pi_i / c over
// patterns P (a set of distinct samples, each with a size c it may use, sum of t <= T). Sample i
// runs on c_i ranks and gives pi_i / c_i to each, so sum_i pi_i = sum_r sum_{i in P_r} pi_i / c_i
// <= N V. Hence sum_i pi_i > N V proves T too short, whatever pi is (it is the LP dual of covering
// every sample with N patterns; Gilmore-Gomory for bin packing). V must never be under-estimated:
//   batches of at most 96 samples and at most 2 per rank on average: V is exact
//     (dcp_pattern_price.h: pareto lists, real times, no rounding; it over-estimates only where a
//     list had to be compressed, which keeps the test valid), every distinct sample has its own
//     level, and each round first adds a greedy pattern the LP's weights violate (cheap: no exact
//     pricing) before pricing exactly. Exactness matters: on
//     code_longtail (64 samples, 64 ranks) the rounded programme below left cplab / bound at a mean
//     of 1.0068 on 40 batches, exact pricing 1.0037 (a rank cannot be filled to exactly T; the
//     rounding and the fractional small sizes pretend it can).
//   other batches (faster, weaker): sizes with t >= T/16 ("big") go through a dynamic programme
//     on t rounded DOWN to T/1024 (T/896 on batches of more than 96 samples, in float there, V then
//     scaled up by 2e-6 for the float rounding; every real pattern is still admitted), the others
//     are added fractionally by value per time (the LP relaxation of a knapsack is at least its
//     optimum), and a sample may be counted once among the big sizes and again among the small
//     ones. On batches of more than 96 samples, samples whose every size has t < T0/10 share a
//     level per 5%-wide bucket of least work w.
// Weights rise with least work (dual-optimal inequalities: a shorter sample can take a longer
// one's place in any pattern, so some optimal weights of the full LP do): samples are put in
// levels by least work and pi of level l = sum_{k <= l} x_k / cnt_k, x >= 0 (cnt_k: samples at
// levels >= k, so sum pi = sum x). Levels of equal samples narrow the LP without losing its optimum
// (the buckets above do lose some); column generation then converges in fewer patterns (issue
// 24's fifth pass: megatron_example, 256 samples on 64 ranks, mean cplab / bound 1.0064 -> 1.0047
// in the same time; code_longtail on 64 ranks, 64 samples: the LP in 0.45x the time, mean 1.0041
// against 1.0040).
// The weights come from column generation: the restricted dual LP (max sum x, pi . a_P <= 1 for
// the patterns found so far; dcp_tableau.h, dual simplex after each added pattern, slack rows
// dropped) gives weights; they are asked at 0.9 x the best certificate so far + 0.1 x the LP's
// (Wentges smoothing), then at the LP's own (on batches of more than 96 samples only when the
// first found no cut); the pricing gives V and the pattern reaching it, which is added while it
// cuts the LP's weights off. It stops when sum pi > N V (too short), when the restricted LP
// optimum is <= N (then no weights can prove it: the full LP has more constraints), or after a
// fixed number of patterns (not proven).
// Speed (issue 24): sizes with more ranks and no shorter time than a smaller size are dropped first
// (they never add to V: less pi / c for no less time). Before that, every sample's largest sizes
// (long only because of the per-step ring latency of CP 32 or 64) counted as "big": every sample
// had its own weight and the programme ran over several sizes of every sample, about 10x the
// work on 256 samples on 64 ranks, and the dual simplex failed numerically on some batches. The
// programme keeps values only (a vectorized max, AVX2 where the CPU has it), its tables and lists in
// buffers reused between calls.
// The dual simplex switches to Bland's rule after 50 pivots of one addition: on degenerate
// tableaus it cycled (500 pivots, then the LP gave up: on three batches of web_lognormal on 64
// ranks examined, the bound came out 2.4-3.5% below the rounded programme's).
// What it is not: a bound on its own (dcp_bounds.cpp raises its bound with it), or exact on the
// other batches (rounding and the fractional small sizes make V larger than the true pattern
// maximum; exact pricing there costs several times more: `cplab schedule`'s 256-sample runs).
#pragma once

#include <cstdint>
#include <vector>

#include "dcp/dcp_cost.h"

namespace cplab {

// jobs[i] = the (size c, time t) pairs sample i may use. Tries T = T0 (1 + step)^k, k = 1..steps,
// in turn (patterns found for one T are patterns for the larger ones) and returns the largest T
// proven too short before the first that is not (0 if none).
double config_lp_raise(const std::vector<std::vector<SizeOption>>& jobs, std::int64_t N, double T0,
                       double step, int steps);

}  // namespace cplab
