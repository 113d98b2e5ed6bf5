// dcp_list.h: list scheduling of samples onto aligned power-of-two blocks of ranks.
//
// What it is: the engine of cplab's DCP scheduler. Samples are taken in a given order; each is put
// on one aligned block (size c a power of two >= cp_min, start a multiple of c) and starts as soon
// as every rank of the block is free, i.e. at the latest finish time among them. Two rules:
//   list_fixed   every sample has a given size; it takes the block of that size that frees first
//                (lowest start on ties): LPT list scheduling on a buddy system;
//   list_target  a target makespan T; a sample takes, over every size it may use and every block,
//                the placement with the least work c * t(L, c) plus the idle rank-time it leaves
//                before its start, among those ending by T (earlier end on ties); if none ends by
//                T, the earliest-ending one (dual approximation, docs/sources.md).
// to_schedule turns placements into one round of dcp_schedule.h: a group per block and run of
// back-to-back samples, with its begin time. Every placement is aligned by construction.
// Blocks are nodes of the buddy tree (dcp_schedule.h's aligned groups): per node the latest and the
// total free time of its ranks, so a block's start and idle time are read in O(1). canonical_order
// gives per-rank values a key that is the same under the buddy tree's symmetries.
// What it is not: the search over orders and targets (dcp_cplab.h).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "dcp/dcp_schedule.h"

namespace cplab {

struct ListProblem {
  ListProblem(const std::vector<std::int64_t>& lengths, std::int64_t ranks, std::int64_t max_per_rank, const CostModel& c)
      : L(lengths), N(ranks), M(max_per_rank), cost(c), opt(size_options(lengths, ranks, max_per_rank, c)) {}
  const std::vector<std::int64_t>& L;  // [samples] lengths
  std::int64_t N, M;
  const CostModel& cost;
  std::vector<std::vector<SizeOption>> opt;  // [samples][sizes] (c, t(L, c)), dcp_cost.h
  double time(int sample, std::int64_t c) const;  // t(L_sample, c) from opt
};

struct Placed {
  int sample;
  std::int64_t start, size;  // ranks [start, start + size)
  double begin, end;
};

// prefix: the placements of order[0, prefix.size()) that the same call made for an order starting
// with the same samples (same sizes, or same T): they are replayed (their blocks taken), not searched
// again, and the result is the same as without them (the search's hill climbing changes orders
// from some position on; dcp_cplab.cpp)
std::vector<Placed> list_fixed(const ListProblem& p, const std::vector<int>& order,
                               const std::vector<std::int64_t>& size, std::span<const Placed> prefix = {});
std::vector<Placed> list_target(const ListProblem& p, const std::vector<int>& order, double T,
                                std::span<const Placed> prefix = {});
double makespan_of(const std::vector<Placed>& placed);
DcpSchedule to_schedule(const ListProblem& p, std::vector<Placed> placed);
// per-rank values v[s, s + c) (free times, loads) in an order that is the same under the buddy
// tree's symmetries (swapping the two halves of any aligned block): at every block, the
// lexicographically smaller half first; appended to `out` (c a power of two). The exhaustive
// searches (dcp_exact.cpp, dcp_exact_tree.cpp) and the huge-sample bound test (dcp_bound_huge.cpp)
// visit each state once up to those symmetries
void canonical_order(std::span<const double> v, std::int64_t s, std::int64_t c, std::vector<double>& out);

}  // namespace cplab
