// dcp_block_search.h: big samples placed on aligned blocks exactly, small ones after: a scheduler
// step and a lower-bound test from one search.
//
// What it is: in every schedule of dcp_schedule.h a sample runs on one aligned block (size c a
// power of two, start a multiple of c), and rank r is busy for the sum of the times of the samples
// whose block contains it (its path load in the buddy tree, dcp_tree.h); running larger blocks
// first realises exactly that makespan (top_down). For a target T, the "big" samples (their
// least-work size with t <= T takes more than kBlockBig * T; at most kBlockMaxBig of them, those
// of most least work) are placed on blocks by a depth-first search (largest least work first;
// sizes ascending, blocks left to right); a node dies when a path load would pass T, or when the
// least work still to do exceeds the rank-time left, N T - (work placed): the small samples' least
// work plus, for each big sample not yet placed, its least work among the sizes that still have a
// block where it fits (loads only grow deeper in the search, so that is a valid bound). Rank loads
// equal under the buddy tree's symmetries (swapping the two halves of any block) are searched once
// (canonical loads, as in dcp_exact_tree.cpp). At a leaf:
//   fill (the scheduler): the small samples, longest first, each on the block and size of least
//        work that keeps its ranks <= T (fullest such block on ties); a leaf where one does not
//        fit dies. The first surviving leaf is a schedule of makespan <= T.
//   relax (the bound): the small samples are a fluid of their least work that may fill any rank's
//        remaining time; the leaf survives. If every node dies, no schedule ends by T: any real
//        schedule of makespan <= T gives a surviving path (its big samples' loads are at most its
//        own, its small samples do at least their least work in the time left).
// The search stops after node_limit nodes (then: no schedule found, no proof).
// Why: on batches whose makespan is set by a few long samples on CP 4-8 blocks that must not share
// ranks (megatron_example, 256 sequences on 64 ranks), list scheduling and ruin-and-recreate
// (dcp_list.h, dcp_tree.h) settle the long samples badly, and the rank-pattern LP (dcp_config_lp.h)
// cannot see that a sample takes one aligned block at once.
// What it is not: exact (small samples are placed greedily, or relaxed to a fluid).
#pragma once

#include <cstdint>
#include <vector>

#include "dcp/dcp_cost.h"

namespace cplab {

// which samples are big: least-work time > big * T, at most max_big of them (most least work first)
struct BlockSplit {
  double big = 0.25;
  size_t max_big = 24;
};

struct BlockResult {
  bool found = false;    // a surviving leaf (fill: a schedule <= T; relax: no proof)
  bool aborted = false;  // node_limit reached first
  std::int64_t nodes = 0;
  std::vector<std::pair<std::int64_t, std::int64_t>> block;  // fill, found: [sample] (start, size)
};

// jobs[i] = the (size c, time t) pairs sample i may use (ascending c; dcp_cost.h size_options)
BlockResult block_search(const std::vector<std::vector<SizeOption>>& jobs, std::int64_t N, double T,
                         std::int64_t node_limit, bool fill, BlockSplit split = {});

// the bound's use: true when the relaxed search proves that no schedule ends by T
bool blocks_too_short(const std::vector<std::vector<SizeOption>>& jobs, std::int64_t N, double T,
                      std::int64_t node_limit, BlockSplit split = {});

}  // namespace cplab
