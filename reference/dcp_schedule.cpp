// dcp_schedule.cpp: evaluation, checks, process groups and lower bounds (see dcp_schedule.h).
#include "dcp_schedule.h"

#include <algorithm>
#include <stdexcept>

#include "error.h"

namespace cplab {

namespace {
bool pow2(std::int64_t x) { return x >= 1 && (x & (x - 1)) == 0; }
}  // namespace

double DcpRound::length() const {
  double m = 0;
  for (const DcpGroup& g : groups) m = std::max(m, g.load);
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
    std::vector<int> used(static_cast<size_t>(s.ranks), 0);
    for (const DcpGroup& g : s.rounds[k].groups) {
      if (g.start < 0 || g.size < 1 || g.start + g.size > s.ranks) throw std::logic_error("dcp: group outside the ranks");
      for (std::int64_t r = g.start; r < g.start + g.size; ++r)
        if (used[static_cast<size_t>(r)]++) throw std::logic_error("dcp: rank " + std::to_string(r) + " in two groups of round " + std::to_string(k));
      for (int i : g.samples) {
        if (i < 0 || static_cast<size_t>(i) >= lengths.size()) throw std::logic_error("dcp: unknown sample");
        seen[static_cast<size_t>(i)] += 1;
        if (lengths[static_cast<size_t>(i)] > g.size * M)
          throw std::logic_error("dcp: sample " + std::to_string(i) + " does not fit its group's memory");
      }
    }
  }
  for (size_t i = 0; i < seen.size(); ++i)
    if (seen[i] != 1) throw std::logic_error("dcp: sample " + std::to_string(i) + " scheduled " + std::to_string(seen[i]) + " times");
}

void check_batch(const std::vector<std::int64_t>& lengths, std::int64_t N, std::int64_t M) {
  require(N >= 1 && pow2(N), "ranks " + std::to_string(N) + " is not a power of two (DCP groups are aligned power-of-two blocks)");
  require(N <= 4096, "ranks " + std::to_string(N) + " is more than 4096");
  require(M >= 1, "max-seqlen-per-rank " + std::to_string(M) + " must be >= 1");
  require(!lengths.empty(), "the batch is empty");
  for (size_t i = 0; i < lengths.size(); ++i) {
    require(lengths[i] >= 1, "sample " + std::to_string(i) + " has length " + std::to_string(lengths[i]) + " (must be >= 1)");
    require(lengths[i] <= N * M, "sample " + std::to_string(i) + " has length " + std::to_string(lengths[i]) +
                                     ", more than ranks x max-seqlen-per-rank = " + std::to_string(N) + " x " +
                                     std::to_string(M) + " = " + std::to_string(N * M));
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

DcpBound lower_bounds(const std::vector<std::int64_t>& lengths, std::int64_t N, std::int64_t M, const CostModel& cost) {
  DcpBound b;
  const double n = static_cast<double>(N);
  // rigid
  double full = 0, area = 0, tallest = 0;
  for (std::int64_t L : lengths) {
    const std::int64_t c = cp_min(L, M);
    const double t = cost.time(L, c);
    if (c == N) full += t;
    else area += static_cast<double>(c) * t / n, tallest = std::max(tallest, t);
  }
  b.rigid = full + std::max(area, tallest);
  // moldable. Samples whose minimum size is already N occupy every rank while they run, so they
  // add their time on N ranks in full; the others by dual approximation:
  // W(T) = sum_i min{c t(L_i, c) : c >= cp_min, t(L_i, c) <= T}
  double whole = 0;
  std::vector<std::int64_t> rest;
  for (std::int64_t L : lengths) {
    if (cp_min(L, M) == N) whole += cost.time(L, N);
    else rest.push_back(L);
  }
  auto work_within = [&](double T) {
    double W = 0;
    for (std::int64_t L : rest) {
      double best = -1;
      for (std::int64_t c = cp_min(L, M); c <= N; c *= 2) {
        const double t = cost.time(L, c);
        if (t <= T && (best < 0 || static_cast<double>(c) * t < best)) best = static_cast<double>(c) * t;
      }
      if (best < 0) return -1.0;  // some sample cannot finish within T
      W += best;
    }
    return W;
  };
  double lo = 0, hi = 0;
  for (std::int64_t L : rest) {
    double tmin = cost.time(L, cp_min(L, M));
    for (std::int64_t c = cp_min(L, M); c <= N; c *= 2) tmin = std::min(tmin, cost.time(L, c));
    lo = std::max(lo, tmin);             // no sample finishes faster than its fastest size
    hi += cost.time(L, cp_min(L, M));  // everything one after another at cp_min is feasible
  }
  hi = std::max(hi, lo);
  for (int it = 0; it < 100; ++it) {  // smallest T with W(T) <= N T (monotone in T)
    const double mid = 0.5 * (lo + hi);
    const double W = work_within(mid);
    if (W >= 0 && W <= n * mid) hi = mid;
    else lo = mid;
  }
  b.moldable = whole + (rest.empty() ? 0.0 : hi);
  return b;
}

}  // namespace cplab
