// dcp_bound_huge.cpp: branching on the huge samples' blocks (see dcp_bound_huge.h).
#include "dcp/dcp_bound_huge.h"

#include <algorithm>
#include <array>
#include <limits>
#include <set>
#include <utility>
#include <vector>

#include "core/util.h"
#include "dcp/dcp_list.h"

namespace cplab {

namespace {

constexpr size_t kMaxHuge = 8;              // more huge samples than this: the test is skipped
// placements examined at most (then: not proven); 20000 instead cost code_longtail with 256
// sequences on 64 ranks 18% more time for a p99 ratio of 1.0007 instead of 1.0010 (200 batches)
constexpr std::int64_t kMaxLeaves = 2000;
constexpr int kMaxParts = 8;

using Loads = std::array<double, kMaxParts>;  // per part (a quarter or an eighth) of the ranks

struct Search {
  const std::vector<std::vector<SizeOption>>& jobs;
  std::vector<size_t> huge, rest;
  std::int64_t N;
  double T;
  int P;  // parts: the ranks in P aligned blocks of N / P
  std::int64_t leaves = 0;
  bool gave_up = false;

  // the other samples in the room a placement leaves: true if they cannot fit
  bool rest_fails(const Loads& load) const {
    // room[k]: the most room an aligned group of 2^k parts has on all its ranks
    double room[4] = {0, 0, 0, 0}, total = 0;
    for (int q = 0; q < P; ++q) total += T - load[q];
    for (int k = 0, g = 1; g <= P; ++k, g *= 2)
      for (int b = 0; b < P; b += g) {
        double r = T;
        for (int q = b; q < b + g; ++q) r = std::min(r, T - load[q]);
        room[k] = std::max(room[k], r);
      }
    const std::int64_t part = N / P;
    // the work only grows, so the test may stop as soon as it passes the room (the same answer)
    const double limit = static_cast<double>(part) * total * (1 + kRelTol);
    double work = 0;
    for (size_t i : rest) {
      double best = std::numeric_limits<double>::infinity();
      for (const SizeOption& o : jobs[i]) {
        int k = 0;  // the block spans 2^k parts (or lies inside one: k = 0)
        while (o.c > part << k) ++k;
        if (o.t <= room[k]) best = std::min(best, static_cast<double>(o.c) * o.t);
      }
      if (best == std::numeric_limits<double>::infinity()) return true;  // no block has room for it
      work += best;
      if (work > limit) return true;
    }
    return false;
  }

  // loads equal up to the buddy tree's symmetries (swapping the two halves of any aligned group of
  // parts) lead to the same outcome (the rest's room and every placement below map onto each other),
  // so each is searched once, keyed exactly by its canonical form (canonical_order, dcp_list.h)
  std::set<std::pair<size_t, std::vector<double>>> seen{};

  // true if some placement of huge[k..] on top of `load` survives (or the search gave up)
  bool survives(size_t k, const Loads& load) {
    if (gave_up) return true;
    std::vector<double> key;
    key.reserve(static_cast<size_t>(P));
    canonical_order(load, 0, P, key);
    if (!seen.insert({k, std::move(key)}).second) return false;  // searched before, and it failed
    if (k == huge.size()) {
      if (++leaves > kMaxLeaves) gave_up = true;
      return gave_up || !rest_fails(load);
    }
    for (const SizeOption& o : jobs[huge[k]]) {
      if (o.t > T) continue;
      const int span = static_cast<int>(o.c / (N / P));  // parts the block covers
      // the first huge sample's block: the first of its size (any other is a mirror image of it)
      const int blocks = k == 0 ? 1 : P / span;
      for (int b = 0; b < blocks; ++b) {
        Loads next = load;
        bool ok = true;
        for (int q = b * span; q < (b + 1) * span; ++q) ok = ok && (next[q] += o.t) <= T * (1 + kRelTol);
        if (ok && survives(k + 1, next)) return true;
      }
    }
    return false;
  }
};

// the test with the ranks in P parts: huge = the samples whose sizes meeting T are all >= N / P
bool parts_too_short(const std::vector<std::vector<SizeOption>>& jobs, std::int64_t N, double T, int P) {
  Search s{jobs, {}, {}, N, T, P};
  for (size_t i = 0; i < jobs.size(); ++i) {
    std::int64_t smallest = 0;  // the smallest size meeting T
    for (const SizeOption& o : jobs[i])
      if (o.t <= T) {
        smallest = o.c;
        break;
      }
    if (smallest == 0) return true;  // no size meets T
    (smallest >= N / P ? s.huge : s.rest).push_back(i);
  }
  if (s.huge.empty() || s.huge.size() > kMaxHuge) return false;
  // longest first: placements die early
  std::sort(s.huge.begin(), s.huge.end(), [&](size_t a, size_t b) { return jobs[a].back().t > jobs[b].back().t; });
  return !s.survives(0, Loads{});
}

}  // namespace

bool huge_too_short(const std::vector<std::vector<SizeOption>>& jobs, std::int64_t N, double T) {
  // quarters first (few placements), then eighths (more samples count as huge, more placements)
  return (N >= 4 && parts_too_short(jobs, N, T, 4)) || (N >= 8 && parts_too_short(jobs, N, T, 8));
}

}  // namespace cplab
