// dcp_cost.h: how long one sequence takes on a group of c ranks, for dynamic CP scheduling.
//
// What it is: cp_min (Megatron's CP size per sample: the smallest power of two c with L <= c*M) and
// two cost models, in work units where (1024 tokens)^2 of attention on one rank = 1 (Lk = L/1024):
//   l2        t(L, c) = Lk^2 / c                           Megatron's BalancedCPScheduler model
//   overhead  t(L, c) = (a*Lk + Lk^2) / c                  compute: linear part + attention
//                     + (c-1) * (alpha + max(0, beta*Lk/c - Lk^2/c^2))   ring: per-step latency plus
//                                                          the KV transfer not hidden by a step's compute
//                     + o * [c > 1]                        fixed cost of a CP group
// Under l2 the total work c*t is the same for every c and time falls with c, so the best plan is
// always "every sequence on all ranks" (docs/sources.md, "Bounds"); the overhead terms make
// larger groups cost more work, which is what makes scheduling a real trade-off.
// The overhead defaults are illustrative, not measured: set them with CostModel's fields
// (`cplab schedule --cost-param a=..,alpha=..,beta=..,o=..`).
// What it is not: a performance model of a GPU (cuda/ will calibrate one), or a scheduler.
#pragma once

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

namespace cplab {

// smallest power of two c with L <= c * M (Megatron: max(1, 2^ceil(log2(L / M))))
std::int64_t cp_min(std::int64_t L, std::int64_t M);

struct CostModel {
  enum class Kind { l2, overhead };
  Kind kind = Kind::l2;
  double a = 0.5;      // linear (projection / MLP) work per 1024 tokens, relative to attention
  double alpha = 0.2;  // latency per ring step
  double beta = 0.3;   // time to move the KV of 1024 tokens over one hop
  double o = 1.0;      // fixed cost of running a sequence with CP > 1
  double time(std::int64_t L, std::int64_t c) const;
  std::string describe() const;
};

CostModel parse_cost(const std::string& kind, const std::string& params);  // throws cplab::Error

// one size a sample may use and its time there
struct SizeOption {
  std::int64_t c;
  double t;
};
// [sample][k] the sizes sample i may use, c = cp_min(L_i, M) * 2^k <= N (ascending), with t(L_i, c):
// the table every DCP scheduler and bound reads instead of calling CostModel::time again
std::vector<std::vector<SizeOption>> size_options(const std::vector<std::int64_t>& lengths, std::int64_t N,
                                                  std::int64_t M, const CostModel& cost);
// the size of least work c t among those with t <= T (on a tie the first, sizes ascending), or
// null when no size meets T: what the dual approximation, the bounds and the searches give a
// sample for a target makespan T
const SizeOption* least_work_size(const std::vector<SizeOption>& sizes, double T);
// the sizes worth using for a target makespan T (ascending c): those with t <= T that are faster
// than every smaller size kept. A size with more ranks and no shorter time never helps a schedule
// or a bound: its blocks hold a smaller block, and it gives more work for no less time. Used by the
// bounds, the LP and the searches (dcp_list.cpp and dcp_tree.cpp skip such sizes in their loops)
std::vector<SizeOption> useful_sizes(const std::vector<SizeOption>& sizes,
                                     double T = std::numeric_limits<double>::infinity());

}  // namespace cplab
