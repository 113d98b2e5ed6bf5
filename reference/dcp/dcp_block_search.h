// dcp_block_search.h: a scheduler step: the long samples placed on aligned blocks exactly by a
// bounded search, the short ones after them.
//
// What it is: in every schedule of dcp_schedule.h a sample runs on one aligned block (size c a
// power of two, start a multiple of c), and rank r is busy for the sum of the times of the samples
// whose block contains it (its path load in the buddy tree, dcp_tree.h); running larger blocks
// first realises exactly that makespan (top_down). For a target T, the "big" samples (their
// least-work size with t <= T takes more than split.big * T; at most split.max_big of them, those
// of most least work) are placed on blocks by a depth-first search (most least work first; sizes
// ascending, blocks left to right). A node dies when a path load would pass T, or when the least
// work still to do exceeds the rank-time left, N T - (work placed): the small samples' least work
// plus, for each big sample not yet placed, its least work among the sizes that still have a block
// where it fits (loads only grow deeper in the search). Rank loads equal under the buddy tree's
// symmetries (swapping the two halves of any block) are searched once (a hash of the canonical
// loads; a collision only prunes a branch). At a leaf the small samples, longest first, each take
// the block and size of least work that keeps its ranks <= T (the fullest such block on ties); a
// leaf where one does not fit dies. The first surviving leaf is a schedule of makespan <= T.
// The search stops after node_limit nodes.
// Why: on batches whose makespan is set by a few long samples on CP 4-8 blocks that must not share
// ranks (megatron_example, 256 sequences on 64 ranks), list scheduling and ruin-and-recreate
// (dcp_list.h, dcp_tree.h) settle the long samples badly. Tried and dropped: the same search with
// the small samples relaxed to a fluid of work, as a lower-bound test; within a bounded number of
// nodes it proved almost nothing (500 nodes per target, code_longtail and megatron_example, 50
// batches each: the mean ratio moved by at most 0.0001).
// What it is not: exact (the small samples are placed greedily, the search is bounded) or a bound.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "dcp/dcp_cost.h"

namespace cplab {

// which samples are big: least-work time > big * T, at most max_big of them (most least work first)
struct BlockSplit {
  double big = 0.25;
  size_t max_big = 24;
};

struct BlockResult {
  bool found = false;  // a schedule of makespan <= T (not found: none exists, or node_limit came first)
  std::vector<std::pair<std::int64_t, std::int64_t>> block;  // found: [sample] (start, size)
};

// jobs[i] = the (size c, time t) pairs sample i may use (ascending c; dcp_cost.h size_options);
// N a power of two
BlockResult block_search(const std::vector<std::vector<SizeOption>>& jobs, std::int64_t N, double T,
                         std::int64_t node_limit, BlockSplit split = {});

}  // namespace cplab
