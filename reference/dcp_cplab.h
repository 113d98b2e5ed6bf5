// dcp_cplab.h: cplab's dynamic-CP scheduler: aligned by construction, moldable, with a lower bound.
//
// What it is: for a batch of lengths on N ranks (power of two) with M tokens per rank:
//   1. allotment: for a time budget T every sample takes the power-of-two size c >= cp_min with
//      the least work c*t(L, c) among those with t(L, c) <= T (dual approximation, notes 5.2/5.4);
//      a ladder of T values from the moldable lower bound up, plus "every sample at cp_min" and
//      "every sample on all N ranks", gives candidate allotments;
//   2. placement (per allotment): samples by size then time, descending; each goes where it adds
//      least to the makespan: onto an existing group of its size in some round, onto a new aligned
//      group in a round's free ranks (blocks are handed out size-descending from rank 0, so every
//      group is an aligned buddy block), or into a new round;
//   3. one-round first-fit-decreasing bins of capacity T (bisection on T), and Megatron v1's own
//      placement when it is aligned, as further starting points (so the result is never worse
//      than v1's on the same batch and cost model);
//   4. local improvement on the two shortest greedy placements, the shortest bins placement and
//      v1's: relocate a sample of a round's longest group to any group or free aligned block of a
//      size it may use (in any round, or a new one), and grow a round's longest group into free
//      aligned ranks, while the makespan drops; the best result wins.
//   5. batches of at most 7 samples on at most 8 ranks: exhaustive search (dcp_exact.h) below the
//      heuristic's makespan.
// Every schedule is checked (dcp_schedule.h check()) and aligned.
// What it is not: optimal in general (the makespan / lower bound ratio is reported per batch).
#pragma once

#include "dcp_schedule.h"

namespace cplab {

DcpSchedule schedule_cplab(const std::vector<std::int64_t>& lengths, std::int64_t N, std::int64_t M,
                           const CostModel& cost);

}  // namespace cplab
