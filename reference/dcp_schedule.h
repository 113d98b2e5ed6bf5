// dcp_schedule.h: a dynamic-CP schedule, its checks, its figures, and lower bounds.
//
// What it is: DcpSchedule = rounds separated by barriers; in a round the N ranks are cut into
// groups (start, size); a group runs its samples one after another, each with CP = group size.
// evaluate() recomputes every group's load with the cost model (load = sum of t(L, size)), the
// makespan (sum over rounds of the largest load), utilization (busy rank-time / (N * makespan)),
// and whether every group is aligned: a power of two starting at a multiple of its size, i.e. one
// of the process groups Megatron creates (dcp_groups). check() verifies that every sample appears
// once, groups are disjoint inside a round and big enough (L <= size * M).
// Lower bounds (notes dcp-scheduler.md 5.2): rigid (every sample at cp_min) and moldable (any
// power-of-two size >= cp_min, by dual approximation).
// What it is not: a scheduler (dcp_megatron.h, dcp_cplab.h).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "dcp_cost.h"

namespace cplab {

struct DcpGroup {
  std::int64_t start = 0, size = 1;
  std::vector<int> samples;  // indices into the batch, in execution order
  double load = 0;           // sum of t(L, size) over samples (evaluate())
};

struct DcpRound {
  std::vector<DcpGroup> groups;
  double length() const;  // the largest load
};

struct DcpSchedule {
  std::int64_t ranks = 0;
  std::vector<DcpRound> rounds;
  // filled by evaluate()
  double makespan = 0, busy = 0, utilization = 0;
  bool aligned = true;
  std::vector<std::string> unaligned;  // "round 2: group ranks 2..5 (size 4) starts at 2"
};

void evaluate(DcpSchedule& s, const std::vector<std::int64_t>& lengths, const CostModel& cost);
// throws std::logic_error describing the first violation (a scheduler bug, not user input)
void check(const DcpSchedule& s, const std::vector<std::int64_t>& lengths, std::int64_t M);

// checks the user's batch: N a power of two >= 1, M >= 1, lengths non-empty, each >= 1 and
// <= N * M (cplab::Error naming the rule)
void check_batch(const std::vector<std::int64_t>& lengths, std::int64_t N, std::int64_t M);

// The aligned process groups of every power-of-two size for N ranks: size -> list of starts.
std::vector<std::pair<std::int64_t, std::vector<std::int64_t>>> dcp_groups(std::int64_t N);

struct DcpBound {
  double rigid = 0;     // every sample at cp_min: sum_{c=N} t + max(sum_{c<N} c t / N, max_{c<N} t)
  double moldable = 0;  // sum of t(L, N) over samples that need all N ranks, plus, for the others,
                        // min T with sum_i min{c t(L_i, c) : t <= T} <= N T (and T >= every min time)
};
DcpBound lower_bounds(const std::vector<std::int64_t>& lengths, std::int64_t N, std::int64_t M, const CostModel& cost);

}  // namespace cplab
