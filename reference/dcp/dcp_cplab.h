// dcp_cplab.h: cplab's dynamic-CP scheduler: aligned by construction, moldable, near the bound.
//
// What it is: for a batch of lengths on N ranks (power of two) with M tokens per rank:
//   1. targets: a ladder of makespans T from the moldable lower bound (dcp_bounds.h, without its
//      LP test, which needs a known makespan) up by 1.5% steps to 1.8x while below the best
//      makespan found so far, and T = infinity;
//   2. allotment per T: every sample takes the power-of-two size c >= cp_min with the least work
//      c * t(L, c) among those with t(L, c) <= T (dual approximation: docs/sources.md, "Bounds");
//   3. list scheduling (dcp_list.h) of three orders (size then time, time, work; all descending)
//      with the fixed sizes, and with the target rule (size chosen at placement, ending by T);
//      plus "every sample on all N ranks";
//   4. local improvement of the best: the sample that ends last moves earlier in the order while
//      that shortens the schedule; hill climbing, then ruin and recreate in the block view
//      (dcp_tree.h, timed top-down), each 300 steps up to 64 samples and 300 (64 / n)^2 beyond
//      (at least 8): a step costs about n placements;
//   5. the big-first block search (dcp_block_search.h): targets a relative step below the best
//      makespan (from kBlockStep, halved after a target not reached or not above the lower bound,
//      which no schedule can reach, down to kBlockGap); at each,
//      for each split of kBlockSplits until one succeeds, the long samples placed on aligned
//      blocks exactly (at most kBlockNodes search nodes, kBlockNodesFew on batches of at most
//      kBlockFewSamples) and the short ones after them;
//   6. Megatron v1's own schedule when it is aligned and shorter (so the result is never worse
//      than v1 on the same batch and cost model), and for batches of at most kExactSamples
//      samples on at most kExactRanks ranks the exact search in the block view (dcp_exact_tree.h)
//      below the best makespan found, at most kExactNodes nodes (the optimum when it completes).
// The search stops as soon as a schedule reaches the lower bound (it is then optimal), to the
// bound's precision kRelTol.
// A rank may serve several groups in one round (dcp_schedule.h explains why that is safe); the
// schedule has one round. Every schedule is checked (check()) and aligned.
// What it is not: optimal in general (the makespan / lower bound ratio is reported per batch).
#pragma once

#include "dcp/dcp_block_search.h"
#include "dcp/dcp_bounds.h"
#include "dcp/dcp_schedule.h"

namespace cplab {

inline constexpr size_t kExactSamples = 16;
inline constexpr std::int64_t kExactRanks = 16;
inline constexpr std::int64_t kExactNodes = 1000000;
// step 5's big-first block search: nodes per target and split; targets a relative step below the
// best makespan, from kBlockStep, halved after each target not reached, down to kBlockGap
inline constexpr std::int64_t kBlockNodes = 50;
// batches of at most kBlockFewSamples samples get kBlockNodesFew nodes (a node costs about n)
inline constexpr size_t kBlockFewSamples = 96;
inline constexpr std::int64_t kBlockNodesFew = 400;
inline constexpr double kBlockStep = 0.004, kBlockGap = 0.0005;
// which samples the block search places first: each split in turn until one finds a schedule.
// A target no split reaches costs every split's nodes, and that is most of the search's time.
// {0.15, 32} and {0.2, 16} were dropped (issue 24, sixth pass): without them code_longtail and
// web_lognormal on 64 ranks (1000 batches of 64) kept their mean / p99 / max ratios to the fourth
// digit, in 26% less block-search time (per batch: 14 of 300 code_longtail makespans longer, by at
// most 0.36%); dropping any one more split cost 0.0001 to 0.0006 of mean (p99: up to +0.0044)
inline const BlockSplit kBlockSplits[] = {{0.25, 24}, {0.25, 12}, {0.4, 24}, {0.5, 16}, {0.3, 8}};

// bound, if given, receives the lower bounds the search used (lower_bounds(lengths, N, M, cost))
DcpSchedule schedule_cplab(const std::vector<std::int64_t>& lengths, std::int64_t N, std::int64_t M,
                           const CostModel& cost, DcpBound* bound = nullptr);

}  // namespace cplab
