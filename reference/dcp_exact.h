// dcp_exact.h: the optimal dynamic-CP schedule of a small batch, by exhaustive search.
//
// What it is: depth-first search over every way to put each sample (longest minimum size first)
// onto an existing group of a size it may use, onto a new aligned group at any free aligned
// position of any round, or into a new round, with branch and bound on the makespan (sum of
// round lengths, which only grows as samples are added). Within the node limit the result is
// optimal for the execution model (rounds with barriers, aligned power-of-two groups, a sample
// runs with CP = its group's size); `complete` says whether the search finished.
// What it is not: for large batches (schedule_cplab uses it only for at most 7 samples on at most
// 8 ranks).
#pragma once

#include "dcp_schedule.h"

namespace cplab {

DcpSchedule schedule_exact(const std::vector<std::int64_t>& lengths, std::int64_t N, std::int64_t M,
                           const CostModel& cost, double upper_bound, std::int64_t node_limit, bool& complete);

}  // namespace cplab
