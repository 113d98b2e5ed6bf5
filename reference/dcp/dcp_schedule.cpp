// dcp_schedule.cpp: evaluation, checks and process groups (see dcp_schedule.h).
#include "dcp/dcp_schedule.h"

#include <algorithm>
#include <stdexcept>

#include "core/error.h"
#include "core/util.h"

namespace cplab {

namespace {
bool pow2(std::int64_t x) { return x >= 1 && (x & (x - 1)) == 0; }
}  // namespace

double DcpRound::length() const {
  double m = 0;
  for (const DcpGroup& g : groups) m = std::max(m, g.begin + g.load);
  return m;
}

void evaluate(DcpSchedule& s, const std::vector<std::int64_t>& lengths, const CostModel& cost) {
  s.makespan = s.busy = 0;
  s.aligned = true;
  s.unaligned.clear();
  for (size_t k = 0; k < s.rounds.size(); ++k) {
    for (DcpGroup& g : s.rounds[k].groups) {
      g.load = 0;
      for (int i : g.samples) g.load += cost.time(lengths[static_cast<size_t>(i)], g.size);
      s.busy += static_cast<double>(g.size) * g.load;
      if (!pow2(g.size) || g.start % g.size != 0) {
        s.aligned = false;
        s.unaligned.push_back("round " + std::to_string(k) + ": group of ranks " + std::to_string(g.start) + ".." +
                              std::to_string(g.start + g.size - 1) + " (size " + std::to_string(g.size) +
                              ") is not an aligned process group");
      }
    }
    s.makespan += s.rounds[k].length();
  }
  s.utilization = s.makespan > 0 ? s.busy / (static_cast<double>(s.ranks) * s.makespan) : 1.0;
}

void check(const DcpSchedule& s, const std::vector<std::int64_t>& lengths, std::int64_t M) {
  std::vector<int> seen(lengths.size(), 0);
  for (size_t k = 0; k < s.rounds.size(); ++k) {
    std::vector<std::vector<std::pair<double, double>>> busy(static_cast<size_t>(s.ranks));  // per rank: [begin, end)
    for (const DcpGroup& g : s.rounds[k].groups) {
      if (g.start < 0 || g.size < 1 || g.start + g.size > s.ranks) throw std::logic_error("dcp: group outside the ranks");
      if (!(g.begin >= 0) || g.samples.empty()) throw std::logic_error("dcp: a group with a negative begin or no samples");
      for (std::int64_t r = g.start; r < g.start + g.size; ++r) busy[static_cast<size_t>(r)].emplace_back(g.begin, g.begin + g.load);
      for (int i : g.samples) {
        if (i < 0 || static_cast<size_t>(i) >= lengths.size()) throw std::logic_error("dcp: unknown sample");
        seen[static_cast<size_t>(i)] += 1;
        if (lengths[static_cast<size_t>(i)] > g.size * M)
          throw std::logic_error("dcp: sample " + std::to_string(i) + " does not fit its group's memory");
      }
    }
    for (size_t r = 0; r < busy.size(); ++r) {
      std::sort(busy[r].begin(), busy[r].end());
      for (size_t j = 1; j < busy[r].size(); ++j)
        if (busy[r][j].first < busy[r][j - 1].second - kRelTol * (1.0 + busy[r][j - 1].second))
          throw std::logic_error("dcp: rank " + std::to_string(r) + " runs two groups at once in round " + std::to_string(k));
    }
  }
  for (size_t i = 0; i < seen.size(); ++i)
    if (seen[i] != 1) throw std::logic_error("dcp: sample " + std::to_string(i) + " scheduled " + std::to_string(seen[i]) + " times");
}

void check_dcp_ranks(std::int64_t N, std::int64_t M) {
  require(N >= 1 && pow2(N), "ranks " + std::to_string(N) + " is not a power of two (DCP groups are aligned power-of-two blocks)");
  require(N <= kMaxDcpRanks, "ranks " + std::to_string(N) + " is more than " + std::to_string(kMaxDcpRanks));
  require(M >= 1, "max-seqlen-per-rank " + std::to_string(M) + " must be >= 1");
  require(M <= kMaxSeqlenPerRank, "max-seqlen-per-rank " + std::to_string(M) +
                                      " is more than 2^40 = " + std::to_string(kMaxSeqlenPerRank) + " tokens");
}

void check_batch_size(std::int64_t n, std::int64_t N, const std::string& what) {
  require(n >= 1, what + " " + std::to_string(n) + " must be >= 1 (the batch is empty)");
  require(n <= kMaxBatchSamples, what + " " + std::to_string(n) + " is more than the " +
                                     std::to_string(kMaxBatchSamples) + " samples a DCP batch may hold");
  require(n <= kMaxRankSamples / N, what + " " + std::to_string(n) + " on " + std::to_string(N) +
                                        " ranks is more than 2^24 (rank, sample) pairs (the schedulers' records "
                                        "of what each rank runs; at most " +
                                        std::to_string(kMaxRankSamples / N) + " samples on " + std::to_string(N) +
                                        " ranks)");
}

void check_batch(const std::vector<std::int64_t>& lengths, std::int64_t N, std::int64_t M) {
  check_dcp_ranks(N, M);
  require(!lengths.empty(), "the batch is empty");
  check_batch_size(static_cast<std::int64_t>(lengths.size()), N, "batch size");
  const std::int64_t room = N * M;  // <= 2^52 (check_dcp_ranks)
  for (size_t i = 0; i < lengths.size(); ++i) {
    if (lengths[i] < 1)
      throw Error("sample " + std::to_string(i) + " has length " + std::to_string(lengths[i]) + " (must be >= 1)");
    if (lengths[i] > room)
      throw Error("sample " + std::to_string(i) + " has length " + std::to_string(lengths[i]) +
                  ", more than ranks x max-seqlen-per-rank = " + std::to_string(N) + " x " + std::to_string(M) + " = " +
                  std::to_string(room));
  }
}

std::vector<std::pair<std::int64_t, std::vector<std::int64_t>>> dcp_groups(std::int64_t N) {
  std::vector<std::pair<std::int64_t, std::vector<std::int64_t>>> out;
  for (std::int64_t c = 1; c <= N; c *= 2) {
    std::vector<std::int64_t> starts;
    for (std::int64_t s = 0; s < N; s += c) starts.push_back(s);
    out.emplace_back(c, std::move(starts));
  }
  return out;
}

std::vector<std::pair<std::int64_t, std::vector<std::int64_t>>> dcp_groups_used(const DcpSchedule& s) {
  std::vector<std::pair<std::int64_t, std::vector<std::int64_t>>> out;
  for (std::int64_t c = 1; c <= s.ranks; c *= 2) {
    std::vector<std::int64_t> starts;
    for (const DcpRound& r : s.rounds)
      for (const DcpGroup& g : r.groups)
        if (g.size == c) starts.push_back(g.start);
    std::sort(starts.begin(), starts.end());
    starts.erase(std::unique(starts.begin(), starts.end()), starts.end());
    if (!starts.empty()) out.emplace_back(c, std::move(starts));
  }
  return out;
}

}  // namespace cplab
