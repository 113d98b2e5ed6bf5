// dcp_exact_tree.cpp: branch and bound over block assignments (see dcp_exact_tree.h).
#include "dcp/dcp_exact_tree.h"

#include <algorithm>
#include <limits>
#include <numeric>
#include <set>

#include "dcp/dcp_list.h"
#include "dcp/dcp_tree.h"

namespace cplab {

namespace {

struct TreeSearch {
  std::int64_t N;
  std::vector<std::vector<SizeOption>> opt;  // [search index] non-dominated sizes, ascending c
  std::vector<double> rest_work;             // [search index] least work of this sample and the later ones
  std::vector<double> load;                  // [N] rank loads
  std::vector<std::pair<std::int64_t, std::int64_t>> cur, best;  // [search index] (size, start)
  double best_len;
  std::int64_t nodes = 0, limit;
  bool aborted = false;
  std::set<std::pair<size_t, std::vector<double>>> seen;  // (samples assigned, canonical loads)

  struct Cand {
    double after, work;
    std::int64_t c, s;
    double t;
  };

  bool worse(double x) const { return x >= best_len * (1 - 1e-12); }

  void dfs(size_t k, double mx, double total) {
    if (aborted) return;
    if (++nodes > limit) {
      aborted = true;
      return;
    }
    if (k == opt.size()) {  // every candidate below was shorter than the best
      best = cur;
      best_len = mx;
      return;
    }
    if (worse((total + rest_work[k]) / static_cast<double>(N))) return;
    if (seen.size() < 300000) {
      std::vector<double> key;
      key.reserve(static_cast<size_t>(N));
      canonical_order(load, 0, N, key);
      if (!seen.insert({k, std::move(key)}).second) return;
    }
    std::vector<Cand> cands;
    for (const SizeOption& o : opt[k])
      for (std::int64_t s = 0; s < N; s += o.c) {
        const auto b = load.begin() + s;
        const double after = *std::max_element(b, b + o.c) + o.t;
        if (!worse(std::max(mx, after))) cands.push_back({after, static_cast<double>(o.c) * o.t, o.c, s, o.t});
      }
    std::stable_sort(cands.begin(), cands.end(), [](const Cand& a, const Cand& b) {
      return a.after != b.after ? a.after < b.after : a.work < b.work;
    });
    std::vector<double> saved;
    for (const Cand& x : cands) {
      if (worse(std::max(mx, x.after))) continue;  // best_len fell meanwhile
      const auto b = load.begin() + x.s;
      saved.assign(b, b + x.c);
      for (auto q = b; q != b + x.c; ++q) *q += x.t;
      cur[k] = {x.c, x.s};
      dfs(k + 1, std::max(mx, x.after), total + x.work);
      std::copy(saved.begin(), saved.end(), b);
      if (aborted) return;
    }
  }
};

}  // namespace

DcpSchedule schedule_exact_tree(const std::vector<std::int64_t>& lengths, std::int64_t N, std::int64_t M,
                                const CostModel& cost, double upper_bound, std::int64_t node_limit, bool& complete) {
  check_batch(lengths, N, M);
  const std::vector<std::vector<SizeOption>> all = size_options(lengths, N, M, cost);
  const size_t n = lengths.size();
  std::vector<size_t> order(n);
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return all[a].front().t > all[b].front().t; });
  TreeSearch s{N, {}, std::vector<double>(n + 1, 0.0), std::vector<double>(static_cast<size_t>(N), 0.0),
               std::vector<std::pair<std::int64_t, std::int64_t>>(n), {}, upper_bound, 0, node_limit, false, {}};
  for (size_t i : order) s.opt.push_back(useful_sizes(all[i]));
  for (size_t k = n; k-- > 0;) {
    double w = std::numeric_limits<double>::infinity();
    for (const SizeOption& p : s.opt[k]) w = std::min(w, static_cast<double>(p.c) * p.t);
    s.rest_work[k] = s.rest_work[k + 1] + w;
  }
  s.dfs(0, 0.0, 0.0);
  complete = !s.aborted;
  if (s.best.empty()) return DcpSchedule{};
  const ListProblem p{lengths, N, M, cost};
  std::vector<Placed> placed;
  for (size_t k = 0; k < n; ++k)
    placed.push_back(Placed{static_cast<int>(order[k]), s.best[k].second, s.best[k].first, 0, 0});
  return to_schedule(p, top_down(p, std::move(placed)));
}

}  // namespace cplab
