// dcp_exact_tree.h: the optimal dynamic-CP schedule of a small batch, by branch and bound in the
// block view.
//
// What it is: dcp_tree.h shows that a schedule is, up to timing, an assignment of every sample to
// one aligned block (size c a power of two >= cp_min, start a multiple of c), and that the best
// makespan of an assignment is its largest rank load (the sum of t(L, c) over the blocks holding
// the rank; run larger blocks first and no rank waits). So the optimum is the least largest rank
// load over assignments. The search assigns samples longest first (by their time at cp_min), each
// to every non-dominated size (a size with more ranks and no shorter time never lowers a load)
// and every block of it, least-loaded blocks first. Pruned by the best makespan so far, by "total
// load plus the least work left, over N", and by symmetry: states equal up to swapping the two
// halves of any aligned block (the only rank permutations that keep the aligned blocks) are
// searched once. `complete` says whether it finished within the node limit.
// This is a second exact method beside dcp_exact.h (list schedules in every order), much smaller
// (no orders, no start times); tests check that the two agree.
// What it is not: for large batches (the node count grows exponentially with the samples).
#pragma once

#include "dcp/dcp_schedule.h"

namespace cplab {

// returns an empty schedule when nothing shorter than upper_bound (by more than 1e-12 relative)
// was found
DcpSchedule schedule_exact_tree(const std::vector<std::int64_t>& lengths, std::int64_t N, std::int64_t M,
                                const CostModel& cost, double upper_bound, std::int64_t node_limit, bool& complete);

}  // namespace cplab
