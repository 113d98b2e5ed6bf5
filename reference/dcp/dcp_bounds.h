// dcp_bounds.h: lower bounds on the makespan of any dynamic-CP schedule of a batch.
//
// What it is: three bounds (docs/dcp.md "Lower bounds", docs/sources.md "Bounds"), each valid for every schedule of
// dcp_schedule.h (rounds, aligned power-of-two groups, a sample runs once, on c ranks for
// t(L, c), c a power of two >= cp_min(L)):
//   rigid     every sample at cp_min (Megatron v1's sizes): sum_{c=N} t + max(sum_{c<N} c t / N,
//             max_{c<N} t). Only a bound for schedules that keep cp_min, like v1's.
//   area      dual approximation: samples needing all N ranks add t(L, N) in full (nothing runs
//             beside them); for the others, a makespan T needs W(T) = sum_i min{c t(L_i, c) :
//             t(L_i, c) <= T} <= N T. The bound is the least T that passes.
//   moldable  the area bound sharpened with two more tests a makespan T must pass, both from "the
//             samples on one rank run one after another within T":
//               knapsack  two samples longer than T/2 cannot share a rank, so the total work, with
//                         the sizes of those longer ones summing to <= N, is still <= N T (exact
//                         dynamic programme over the rank budget; Mounie, Rapine, Trystram 2007);
//               dual feasible functions  for any f with sum f(x_j) <= 1 whenever sum x_j <= 1, each
//                         rank's samples give sum f(t/T) <= 1, so sum_i min_c c g(t(L_i, c)/T) <= N
//                         for g = lam x + (1 - lam) f; f from Fekete and Schepers (Math. Prog. 91,
//                         2001): U_eps (x > 1 - eps counts 1, x < eps counts 0) and u_k.
//               huge samples  the samples whose every size meeting T spans a quarter (then an
//                         eighth) of the ranks or more: every placement of them on aligned blocks,
//                         and the rest's least work in the room each leaves (dcp_bound_huge.h)
//             A T that fails a test is proven too short, so the bound returned is the largest
//             failing T found by bisection (valid even where a test is not monotone in T).
//             With a known makespan, a third test: the rank-pattern (configuration) LP of
//             dcp_config_lp.h. Solved to optimality it is at least as strong as every dual
//             feasible function test (each gives a feasible solution of its dual), and it sees
//             that a rank runs a sample at most once and that a rank's samples must fit T
//             together; here it is solved partly (a bounded number of patterns), from the bound
//             above up: T = bound * 1.002^k while proven, below the known makespan.
// The moldable bound is what `cplab schedule` reports as the lower bound, for both schedulers.
// What it is not: the optimum (dcp_exact.h finds that for small batches).
#pragma once

#include <cstdint>
#include <vector>

#include "core/util.h"
#include "dcp/dcp_cost.h"

namespace cplab {

// The moldable bound is found by bisection: the T returned is proven too short, and a T larger by
// kRelTol (core/util.h: the DCP code's one relative tolerance) is not (by these tests). A schedule
// within kRelTol of the bound counts as at it.

struct DcpBound {
  double rigid = 0, area = 0, moldable = 0;
  double whole = 0;  // the part of area and moldable from samples whose cp_min is already N
};
DcpBound lower_bounds(const std::vector<std::int64_t>& lengths, std::int64_t N, std::int64_t M, const CostModel& cost);
// known: the makespan of some schedule of the batch, or 0. When it is given, the moldable bound is
// raised further by the rank-pattern LP (dcp_config_lp.h), trying T up to `known` in steps of
// 0.2% (slower: tens of milliseconds for 64 samples on 64 ranks).
DcpBound lower_bounds(const std::vector<std::int64_t>& lengths, std::int64_t N, std::int64_t M, const CostModel& cost,
                      double known);
// the same from bounds already computed without a known makespan (b = lower_bounds(lengths, N, M, cost))
DcpBound sharpen_bound(const std::vector<std::int64_t>& lengths, std::int64_t N, std::int64_t M, const CostModel& cost,
                       DcpBound b, double known);

}  // namespace cplab
