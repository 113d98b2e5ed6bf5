// dcp_schedule.h: a dynamic-CP schedule, its checks, its figures, and lower bounds.
//
// What it is: DcpSchedule = rounds separated by barriers of the whole DP x CP group. A round holds
// groups: ranks [start, start + size) from time `begin` (relative to the round's start) running
// their samples back to back, each with CP = size. Megatron v1 cuts every round into disjoint
// groups that all begin at 0; cplab's scheduler also lets a rank serve several groups in one round
// (ranks 0-15 run a long sequence with CP16, then ranks 0..15 each run short ones with CP1), as
// long as groups that share a rank do not overlap in time.
// Execution (Megatron's hybrid_context_parallel_forward_backward runs, per round, each rank's
// list of samples in order, with local_cp_size = how many ranks hold the sample): every rank runs
// its groups in order of `begin`; a sample starts when all its ranks reach it. Because the order
// comes from one time line, every pair of ranks meets its shared samples in the same order, so no
// collective waits on another, and no sample starts later than planned.
// evaluate() recomputes every group's load with the cost model (load = sum of t(L, size)), the
// makespan (sum over rounds of the latest begin + load), utilization (busy rank-time / (N *
// makespan)), and whether every group is aligned: a power of two starting at a multiple of its
// size, i.e. one of the process groups Megatron creates (dcp_groups). check() verifies that every
// sample appears once, groups are big enough (L <= size * M), and groups sharing a rank in a round
// do not overlap in time.
// What it is not: a scheduler (dcp_megatron.h, dcp_cplab.h) or a bound (dcp_bounds.h).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "dcp/dcp_cost.h"

namespace cplab {

struct DcpGroup {
  std::int64_t start = 0, size = 1;
  std::vector<int> samples;  // indices into the batch, in execution order
  double load = 0;           // sum of t(L, size) over samples (evaluate())
  double begin = 0;          // start time inside the round (v1: always 0)
};

struct DcpRound {
  std::vector<DcpGroup> groups;
  double length() const;  // the latest begin + load
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

// The limits of a DCP problem, each checked before anything is derived from it:
//   ranks N               a power of two <= kMaxDcpRanks
//   max-seqlen-per-rank M <= kMaxSeqlenPerRank (2^40 tokens, like a packed batch), so N * M <= 2^52,
//                         and every length, cp_min and cost stays far from 64-bit overflow
//   samples n             <= kMaxBatchSamples, and N * n <= kMaxRankSamples = 2^24: the schedulers
//                         keep per-rank records of the samples a rank runs (check(), the "all on N
//                         ranks" candidate, the bound's rank patterns). Measured peaks (2 cores,
//                         --cost overhead): 4096 ranks x 4096 samples of code_longtail 650 MB and
//                         33 s, the worst seen at 2^24 pairs; at 2^25 (x 8192) over 2 GB and growing
//                         faster than linearly; 64 ranks x 1M samples 0.5 GB, 18 s
inline constexpr std::int64_t kMaxDcpRanks = 4096;
inline constexpr std::int64_t kMaxSeqlenPerRank = std::int64_t{1} << 40;
inline constexpr std::int64_t kMaxBatchSamples = 1000000;
inline constexpr std::int64_t kMaxRankSamples = std::int64_t{1} << 24;

// N and M against their rules (cplab::Error naming the rule and the value)
void check_dcp_ranks(std::int64_t N, std::int64_t M);
// a batch of n samples on N ranks (N already checked): 1 <= n <= kMaxBatchSamples and N * n <=
// kMaxRankSamples; `what` names where n came from ("--batch-size", "FILE: batch_size"), so it can
// be checked before a batch is drawn
void check_batch_size(std::int64_t n, std::int64_t N, const std::string& what);
// checks the user's batch: check_dcp_ranks, check_batch_size, and every length >= 1 and <= N * M
// (cplab::Error naming the rule)
void check_batch(const std::vector<std::int64_t>& lengths, std::int64_t N, std::int64_t M);

// The aligned process groups of every power-of-two size for N ranks: size -> list of starts.
std::vector<std::pair<std::int64_t, std::vector<std::int64_t>>> dcp_groups(std::int64_t N);
// The process groups a schedule uses: size -> sorted distinct starts.
std::vector<std::pair<std::int64_t, std::vector<std::int64_t>>> dcp_groups_used(const DcpSchedule& s);

}  // namespace cplab
