// dcp_list.cpp: list scheduling on aligned blocks (see dcp_list.h).
#include "dcp_list.h"

#include <algorithm>
#include <limits>

namespace cplab {

namespace {

// per aligned block of size c: when all its ranks are free, and the rank-time idle until then
struct Blocks {
  std::vector<double> free_at;  // [N] per rank
  void block(std::int64_t s, std::int64_t c, double& ready, double& idle) const {
    double mx = 0, sum = 0;
    for (std::int64_t r = s; r < s + c; ++r) mx = std::max(mx, free_at[static_cast<size_t>(r)]), sum += free_at[static_cast<size_t>(r)];
    ready = mx;
    idle = static_cast<double>(c) * mx - sum;
  }
  void occupy(std::int64_t s, std::int64_t c, double until) {
    std::fill(free_at.begin() + s, free_at.begin() + s + c, until);
  }
};

}  // namespace

std::vector<Placed> list_fixed(const ListProblem& p, const std::vector<int>& order, const std::vector<std::int64_t>& size) {
  Blocks b{std::vector<double>(static_cast<size_t>(p.N), 0.0)};
  std::vector<Placed> out;
  out.reserve(order.size());
  for (int i : order) {
    const std::int64_t c = size[static_cast<size_t>(i)];
    const double t = p.cost.time(p.L[static_cast<size_t>(i)], c);
    double best = std::numeric_limits<double>::infinity();
    std::int64_t bs = 0;
    for (std::int64_t s = 0; s < p.N; s += c) {
      double ready = 0, idle = 0;
      b.block(s, c, ready, idle);
      if (ready < best - 1e-12) best = ready, bs = s;
    }
    b.occupy(bs, c, best + t);
    out.push_back(Placed{i, bs, c, best, best + t});
  }
  return out;
}

std::vector<Placed> list_target(const ListProblem& p, const std::vector<int>& order, double T) {
  Blocks b{std::vector<double>(static_cast<size_t>(p.N), 0.0)};
  std::vector<Placed> out;
  out.reserve(order.size());
  const double limit = T * (1 + 1e-12);
  for (int i : order) {
    const std::int64_t Li = p.L[static_cast<size_t>(i)];
    bool fits = false;
    double bcost = 0, bend = std::numeric_limits<double>::infinity(), bbegin = 0;
    std::int64_t bs = 0, bc = 0;
    for (std::int64_t c = cp_min(Li, p.M); c <= p.N; c *= 2) {
      const double t = p.cost.time(Li, c);
      for (std::int64_t s = 0; s < p.N; s += c) {
        double ready = 0, idle = 0;
        b.block(s, c, ready, idle);
        const double end = ready + t, cost = static_cast<double>(c) * t + idle;
        const bool ok = end <= limit;
        const bool better = ok ? (!fits || cost < bcost - 1e-12 || (cost <= bcost + 1e-12 && end < bend - 1e-12))
                               : (!fits && end < bend - 1e-12);
        if (better) fits = ok, bcost = cost, bend = end, bbegin = ready, bs = s, bc = c;
      }
    }
    b.occupy(bs, bc, bend);
    out.push_back(Placed{i, bs, bc, bbegin, bend});
  }
  return out;
}

double makespan_of(const std::vector<Placed>& placed) {
  double m = 0;
  for (const Placed& x : placed) m = std::max(m, x.end);
  return m;
}

DcpSchedule to_schedule(const ListProblem& p, std::vector<Placed> placed) {
  // a group = one block's run of back-to-back samples (nothing else can use its ranks in a gap of 0)
  std::stable_sort(placed.begin(), placed.end(), [](const Placed& a, const Placed& b) {
    if (a.start != b.start) return a.start < b.start;
    if (a.size != b.size) return a.size > b.size;
    return a.begin < b.begin;
  });
  DcpSchedule s;
  s.ranks = p.N;
  DcpRound round;
  for (size_t j = 0; j < placed.size(); ++j) {
    const Placed& x = placed[j];
    const bool join = j > 0 && placed[j - 1].start == x.start && placed[j - 1].size == x.size &&
                      x.begin <= placed[j - 1].end + 1e-12 * (1.0 + x.begin);
    if (join) round.groups.back().samples.push_back(x.sample);
    else round.groups.push_back(DcpGroup{x.start, x.size, {x.sample}, 0, x.begin});
  }
  std::stable_sort(round.groups.begin(), round.groups.end(), [](const DcpGroup& a, const DcpGroup& b) {
    return a.begin != b.begin ? a.begin < b.begin : a.start < b.start;
  });
  s.rounds.push_back(std::move(round));
  evaluate(s, p.L, p.cost);
  return s;
}

}  // namespace cplab
