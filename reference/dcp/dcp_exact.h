// dcp_exact.h: the optimal dynamic-CP schedule of a small batch, by exhaustive search.
//
// What it is: depth-first search over list schedules (dcp_list.h): the next sample (any not yet
// placed), its size (any power of two >= cp_min) and its aligned block (any), starting when all
// the block's ranks are free. Every schedule of dcp_schedule.h is matched or beaten by one of
// these (take its samples in order of start time: by induction each starts no later), so a
// complete search is optimal. Pruned by the best makespan so far, by "busy rank-time plus the
// least work left, over N", and by symmetry: states equal up to swapping the two halves of any
// aligned block (the canonical form of the ranks' free times) are searched once; samples of equal
// length are placed in index order. `complete` says whether it finished within the node limit.
// What it is not: for large batches. schedule_cplab uses the smaller block-view search
// (dcp_exact_tree.h); this one is the independent check of it in tests/test_dcp_optimum.cpp.
#pragma once

#include "dcp/dcp_schedule.h"

namespace cplab {

// returns an empty schedule when nothing shorter than upper_bound was found
DcpSchedule schedule_exact(const std::vector<std::int64_t>& lengths, std::int64_t N, std::int64_t M,
                           const CostModel& cost, double upper_bound, std::int64_t node_limit, bool& complete);

}  // namespace cplab
