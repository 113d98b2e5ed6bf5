// dcp_tree.cpp: top-down timing and ruin-and-recreate over block assignments (see dcp_tree.h).
#include "dcp_tree.h"

#include <algorithm>
#include <limits>
#include <random>

namespace cplab {

std::vector<Placed> top_down(const ListProblem& p, std::vector<Placed> placed) {
  // larger blocks first; a block's ranks then all become free at the same time (shared ancestors)
  std::stable_sort(placed.begin(), placed.end(), [](const Placed& a, const Placed& b) {
    return a.size != b.size ? a.size > b.size : a.start < b.start;
  });
  std::vector<double> free_at(static_cast<size_t>(p.N), 0.0);
  for (Placed& x : placed) {
    const auto s = static_cast<size_t>(x.start), e = static_cast<size_t>(x.start + x.size);
    const double ready = *std::max_element(free_at.begin() + static_cast<std::ptrdiff_t>(s), free_at.begin() + static_cast<std::ptrdiff_t>(e));
    x.begin = ready;
    x.end = ready + p.cost.time(p.L[static_cast<size_t>(x.sample)], x.size);
    std::fill(free_at.begin() + static_cast<std::ptrdiff_t>(s), free_at.begin() + static_cast<std::ptrdiff_t>(e), x.end);
  }
  return placed;
}

namespace {

struct Option {
  std::int64_t c;
  double t;
};

struct State {
  std::vector<std::vector<Option>> opts;  // [sample] every size it may use
  std::vector<size_t> opt;                // [sample] index into opts
  std::vector<std::int64_t> start;        // [sample] block start
  std::vector<double> load;               // [N] path load per rank
  void add(size_t i, double sign) {
    const Option& o = opts[i][opt[i]];
    for (std::int64_t r = start[i]; r < start[i] + o.c; ++r) load[static_cast<size_t>(r)] += sign * o.t;
  }
  double makespan() const { return *std::max_element(load.begin(), load.end()); }
};

// put sample i back: least work whose path loads stay <= T (fullest block on ties), else earliest end
void reinsert(State& s, size_t i, double T, std::int64_t N) {
  bool fits = false;
  double bwork = 0, bend = std::numeric_limits<double>::infinity();
  size_t bo = 0;
  std::int64_t bs = 0;
  for (size_t k = 0; k < s.opts[i].size(); ++k) {
    const Option& o = s.opts[i][k];
    for (std::int64_t st = 0; st < N; st += o.c) {
      double top = 0;
      for (std::int64_t r = st; r < st + o.c; ++r) top = std::max(top, s.load[static_cast<size_t>(r)]);
      const double end = top + o.t, work = static_cast<double>(o.c) * o.t;
      const bool ok = end <= T;
      const bool better = ok ? (!fits || work < bwork - 1e-12 || (work <= bwork + 1e-12 && end > bend + 1e-12))
                             : (!fits && end < bend - 1e-12);
      if (better) fits = ok, bwork = work, bend = end, bo = k, bs = st;
    }
  }
  s.opt[i] = bo;
  s.start[i] = bs;
  s.add(i, +1);
}

}  // namespace

std::vector<Placed> refine_blocks(const ListProblem& p, const std::vector<Placed>& start, int iterations) {
  const size_t n = p.L.size();
  State s;
  s.opts.resize(n);
  s.opt.assign(n, 0);
  s.start.assign(n, 0);
  s.load.assign(static_cast<size_t>(p.N), 0.0);
  for (size_t i = 0; i < n; ++i)
    for (std::int64_t c = cp_min(p.L[i], p.M); c <= p.N; c *= 2) s.opts[i].push_back({c, p.cost.time(p.L[i], c)});
  for (const Placed& x : start) {
    const auto i = static_cast<size_t>(x.sample);
    for (size_t k = 0; k < s.opts[i].size(); ++k)
      if (s.opts[i][k].c == x.size) s.opt[i] = k;
    s.start[i] = x.start;
    s.add(i, +1);
  }
  State best = s;
  double best_len = s.makespan(), cur = best_len;
  std::mt19937_64 rng(0x7eeULL);
  std::uniform_real_distribution<double> jitter(-0.02, 0.02);
  std::vector<size_t> out;
  std::vector<char> gone(n);
  std::vector<std::pair<double, size_t>> order;
  std::vector<size_t> on_hot;
  for (int it = 0; it < iterations && n > 0; ++it) {
    const double T = best_len * (1 - 0.002);
    out.clear();
    std::fill(gone.begin(), gone.end(), 0);
    const auto hot = static_cast<std::int64_t>(std::max_element(s.load.begin(), s.load.end()) - s.load.begin());
    on_hot.clear();
    for (size_t i = 0; i < n; ++i)
      if (s.start[i] <= hot && hot < s.start[i] + s.opts[i][s.opt[i]].c) on_hot.push_back(i);
    const int k = 1 + static_cast<int>(rng() % 4);
    for (int q = 0; q < k; ++q) {
      const size_t i = q == 0 && !on_hot.empty() ? on_hot[rng() % on_hot.size()] : rng() % n;
      if (!gone[i]) gone[i] = 1, out.push_back(i);
    }
    for (size_t i = 0; i < n; ++i)
      if (!gone[i] && s.opts[i][s.opt[i]].c == 1 && s.opts[i][s.opt[i]].t < 0.25 * T) gone[i] = 1, out.push_back(i);
    order.clear();
    for (size_t i : out) {
      s.add(i, -1);
      double bw = std::numeric_limits<double>::infinity(), bt = s.opts[i].back().t;  // least-work time that fits T
      for (const Option& o : s.opts[i])
        if (o.t <= T && static_cast<double>(o.c) * o.t < bw) bw = static_cast<double>(o.c) * o.t, bt = o.t;
      order.push_back({-bt * (1 + jitter(rng)), i});
    }
    std::sort(order.begin(), order.end());
    for (const auto& [key, i] : order) reinsert(s, i, T, p.N);
    const double m = s.makespan();
    if (m <= cur + 1e-12) {
      cur = m;
      if (m < best_len - 1e-12) best = s, best_len = m;
    } else {
      s = best;
      cur = best_len;
    }
  }
  std::vector<Placed> placed;
  for (size_t i = 0; i < n; ++i) placed.push_back(Placed{static_cast<int>(i), best.start[i], best.opts[i][best.opt[i]].c, 0, 0});
  return top_down(p, std::move(placed));
}

}  // namespace cplab
