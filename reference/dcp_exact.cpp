// dcp_exact.cpp: branch and bound over all schedules of a small batch (see dcp_exact.h).
#include "dcp_exact.h"

#include <algorithm>
#include <numeric>

namespace cplab {

namespace {

struct G {
  std::int64_t start, size;
  double load;
  std::vector<int> samples;
};
struct R {
  std::vector<G> groups;
  std::vector<char> used;
  double length() const {
    double m = 0;
    for (const G& g : groups) m = std::max(m, g.load);
    return m;
  }
  bool free(std::int64_t s, std::int64_t c) const {
    return std::all_of(used.begin() + s, used.begin() + s + c, [](char u) { return u == 0; });
  }
};

struct Search {
  const std::vector<std::int64_t>& L;
  std::int64_t N, M;
  const CostModel& cost;
  std::vector<int> order;
  std::vector<R> rounds, best;
  double best_len;
  std::int64_t nodes = 0, limit;
  bool aborted = false;

  double total() const {
    double t = 0;
    for (const R& r : rounds) t += r.length();
    return t;
  }
  void dfs(size_t i) {
    if (aborted) return;
    if (++nodes > limit) {
      aborted = true;
      return;
    }
    const double now = total();
    if (now >= best_len - 1e-12) return;  // the makespan only grows from here
    if (i == order.size()) {
      best = rounds;
      best_len = now;
      return;
    }
    const int id = order[i];
    const std::int64_t Li = L[static_cast<size_t>(id)];
    for (std::int64_t c = cp_min(Li, M); c <= N; c *= 2) {
      const double t = cost.time(Li, c);
      for (size_t k = 0; k < rounds.size(); ++k) {
        for (size_t g = 0; g < rounds[k].groups.size(); ++g) {  // join a group of size c
          if (rounds[k].groups[g].size != c) continue;
          rounds[k].groups[g].load += t;
          rounds[k].groups[g].samples.push_back(id);
          dfs(i + 1);
          rounds[k].groups[g].samples.pop_back();
          rounds[k].groups[g].load -= t;
        }
        for (std::int64_t s = 0; s + c <= N; s += c) {  // a new group at any free aligned position
          if (!rounds[k].free(s, c)) continue;
          std::fill(rounds[k].used.begin() + s, rounds[k].used.begin() + s + c, 1);
          rounds[k].groups.push_back(G{s, c, t, {id}});
          dfs(i + 1);  // may grow `rounds`: index again afterwards, never keep a reference across it
          rounds[k].groups.pop_back();
          std::fill(rounds[k].used.begin() + s, rounds[k].used.begin() + s + c, 0);
        }
      }
      rounds.push_back(R{{G{0, c, t, {id}}}, std::vector<char>(static_cast<size_t>(N), 0)});  // a new round
      std::fill(rounds.back().used.begin(), rounds.back().used.begin() + c, 1);
      dfs(i + 1);
      rounds.pop_back();
    }
  }
};

}  // namespace

DcpSchedule schedule_exact(const std::vector<std::int64_t>& lengths, std::int64_t N, std::int64_t M,
                           const CostModel& cost, double upper_bound, std::int64_t node_limit, bool& complete) {
  check_batch(lengths, N, M);
  Search s{lengths, N, M, cost, {}, {}, {}, upper_bound * (1 + 1e-12) + 1e-12, 0, node_limit, false};
  s.order.resize(lengths.size());
  std::iota(s.order.begin(), s.order.end(), 0);
  std::stable_sort(s.order.begin(), s.order.end(), [&](int a, int b) { return lengths[static_cast<size_t>(a)] > lengths[static_cast<size_t>(b)]; });
  s.dfs(0);
  complete = !s.aborted;
  DcpSchedule out;
  out.ranks = N;
  for (const R& r : s.best) {
    DcpRound dr;
    std::vector<G> gs = r.groups;
    std::sort(gs.begin(), gs.end(), [](const G& a, const G& b) { return a.start < b.start; });
    for (const G& g : gs) dr.groups.push_back(DcpGroup{g.start, g.size, g.samples, 0});
    out.rounds.push_back(std::move(dr));
  }
  evaluate(out, lengths, cost);
  return out;
}

}  // namespace cplab
