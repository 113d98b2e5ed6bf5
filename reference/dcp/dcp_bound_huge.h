// dcp_bound_huge.h: a lower-bound test that branches on where the huge samples run.
//
// What it is: one more test a makespan T must pass (dcp_bounds.h). The ranks are cut into P aligned
// parts, quarters (P = 4) and then eighths (P = 8). A sample is "huge" at T when every size it may
// use with t(L, c) <= T has c >= N/P: it runs on one part or an aligned group of parts. The test
// enumerates every placement of the huge samples on such blocks (at most kMaxHuge = 8 of them, at
// most 2000 placements, else it proves nothing; the first one's block fixed by the symmetry of the
// buddy tree, and loads equal up to its symmetries searched once), each giving every part a load.
// A placement survives only if no part passes T and the other samples fit in what is left: each
// needs a size and an aligned block whose parts all have room for its time, and their least total
// work on such blocks must not exceed the room left on all ranks. T is too short when no placement
// survives (for either P).
// Why: the rank-pattern LP (dcp_config_lp.h) and the dual feasible functions see each rank alone;
// with two or three samples that need half of the ranks or more (code_longtail's 64K sequences on
// 64 ranks), which ranks they share decides how much room the rest has, and the rest's sizes
// then cost more work than their least (on batch 853 of code_longtail, seed 0, the LP bound was
// 3.9% below cplab's makespan; with this test 1.0%).
// What it is not: exact (the rest is treated as divisible work), or useful without huge samples
// (it returns false at once).
#pragma once

#include <cstdint>
#include <vector>

#include "dcp/dcp_cost.h"

namespace cplab {

// jobs[i]: sample i's sizes (ascending c; only samples with cp_min < N); true if T is proven too short
bool huge_too_short(const std::vector<std::vector<SizeOption>>& jobs, std::int64_t N, double T);

}  // namespace cplab
