// dcp_tree.h: the block view of a dynamic-CP schedule, and a ruin-and-recreate search in it.
//
// What it is: a schedule of dcp_schedule.h is, up to timing, an assignment of every sample to one
// aligned block (size c a power of two >= cp_min, start a multiple of c). Rank r then runs every
// sample whose block contains r, so its busy time is its path load: the sum of t(L, c) over the
// blocks on its path in the buddy tree. Conversely every assignment is realised with makespan =
// the largest path load by running larger blocks first (top-down): a block's samples start, back
// to back, when its strict ancestors' samples are done, which is the same time on all its ranks
// (they share those ancestors), so no rank ever waits. List schedules (dcp_list.h) may leave ranks
// idle in between; re-timing their blocks top-down never lengthens them.
// refine_blocks starts from placements, searches assignments by ruin and recreate (remove a few
// samples, one on the most loaded rank among them, and every short single-rank one; put them back
// longest first, each on the block and size of least work that keeps its ranks' path loads under
// a target just below the best makespan, else on the one ending earliest; keep the result when it
// is no longer than the current one), with a fixed seed, and returns top-down placements of the
// best assignment found (never longer than the input's).
// What it is not: a bound, or optimal.
#pragma once

#include "dcp/dcp_list.h"

namespace cplab {

// placements of the best assignment found in `iterations` steps, timed top-down
std::vector<Placed> refine_blocks(const ListProblem& p, const std::vector<Placed>& start, int iterations);
// the top-down timing of an assignment (sample -> block) given as placements
std::vector<Placed> top_down(const ListProblem& p, std::vector<Placed> placed);

}  // namespace cplab
