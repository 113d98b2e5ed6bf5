// dcp_tree.cpp: top-down timing and ruin-and-recreate over block assignments (see dcp_tree.h).
#include "dcp/dcp_tree.h"

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
    x.end = ready + p.time(x.sample, x.size);
    std::fill(free_at.begin() + static_cast<std::ptrdiff_t>(s), free_at.begin() + static_cast<std::ptrdiff_t>(e), x.end);
  }
  return placed;
}

namespace {

// The buddy tree over the ranks (node 1 = all N, children 2k and 2k + 1, node N + r = rank r; the
// block of size c at s is node N / c + s / c). A rank's path load is the sum of `own` over the
// nodes above it; per node, `sub` is the largest such sum below it counting itself and `anc` the sum
// of `own` over its strict ancestors, so the largest path load among a block's ranks is anc + sub.
struct LoadTree {
  size_t N;
  std::vector<double> own, sub, anc;  // [2N]
  explicit LoadTree(std::int64_t n) : N(static_cast<size_t>(n)), own(2 * N, 0.0), sub(2 * N, 0.0), anc(2 * N, 0.0) {}
  static size_t node(std::int64_t N, std::int64_t s, std::int64_t c) { return static_cast<size_t>(N / c + s / c); }
  void add(size_t k, double t) {
    own[k] += t;
    for (size_t lo = 2 * k, hi = 2 * k + 2; lo < 2 * N; lo *= 2, hi *= 2)
      for (size_t q = lo; q < hi; ++q) anc[q] += t;
    for (size_t q = k; q >= 1; q /= 2) sub[q] = own[q] + (q < N ? std::max(sub[2 * q], sub[2 * q + 1]) : 0.0);
  }
  double top(size_t k) const { return anc[k] + sub[k]; }
  double makespan() const { return sub[1]; }
  std::int64_t hottest_rank() const {
    size_t k = 1;
    while (k < N) k = sub[2 * k] >= sub[2 * k + 1] ? 2 * k : 2 * k + 1;
    return static_cast<std::int64_t>(k - N);
  }
};

struct State {
  const std::vector<std::vector<SizeOption>>* opts;  // [sample] every size it may use
  std::vector<size_t> opt;                           // [sample] index into opts
  std::vector<std::int64_t> start;                   // [sample] block start
  LoadTree tree;
  const SizeOption& size(size_t i) const { return (*opts)[i][opt[i]]; }
  void add(size_t i, double sign) { tree.add(LoadTree::node(static_cast<std::int64_t>(tree.N), start[i], size(i).c), sign * size(i).t); }
  double makespan() const { return tree.makespan(); }
};

// put sample i back: least work whose path loads stay <= T (fullest block on ties), else earliest end
void reinsert(State& s, size_t i, double T, std::int64_t N) {
  bool fits = false;
  double bwork = 0, bend = std::numeric_limits<double>::infinity();
  size_t bo = 0;
  std::int64_t bs = 0;
  const std::vector<SizeOption>& opts = (*s.opts)[i];
  double tprev = std::numeric_limits<double>::infinity();
  for (size_t k = 0; k < opts.size(); ++k) {
    const SizeOption& o = opts[k];
    if (o.t >= tprev) continue;  // more ranks, no shorter time: never better (dcp_list.cpp)
    tprev = o.t;
    const size_t k0 = static_cast<size_t>(N / o.c);
    const double work = static_cast<double>(o.c) * o.t;
    for (size_t q = k0; q < 2 * k0; ++q) {
      const double end = s.tree.top(q) + o.t;
      const bool ok = end <= T;
      const bool better = ok ? (!fits || work < bwork - 1e-12 || (work <= bwork + 1e-12 && end > bend + 1e-12))
                             : (!fits && end < bend - 1e-12);
      if (better) fits = ok, bwork = work, bend = end, bo = k, bs = static_cast<std::int64_t>(q - k0) * o.c;
    }
  }
  s.opt[i] = bo;
  s.start[i] = bs;
  s.add(i, +1);
}

}  // namespace

std::vector<Placed> refine_blocks(const ListProblem& p, const std::vector<Placed>& start, int iterations) {
  const size_t n = p.L.size();
  State s{&p.opt, std::vector<size_t>(n, 0), std::vector<std::int64_t>(n, 0), LoadTree(p.N)};
  for (const Placed& x : start) {
    const auto i = static_cast<size_t>(x.sample);
    for (size_t k = 0; k < p.opt[i].size(); ++k)
      if (p.opt[i][k].c == x.size) s.opt[i] = k;
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
    const std::int64_t hot = s.tree.hottest_rank();
    on_hot.clear();
    for (size_t i = 0; i < n; ++i)
      if (s.start[i] <= hot && hot < s.start[i] + s.size(i).c) on_hot.push_back(i);
    const int k = 1 + static_cast<int>(rng() % 4);
    for (int q = 0; q < k; ++q) {
      const size_t i = q == 0 && !on_hot.empty() ? on_hot[rng() % on_hot.size()] : rng() % n;
      if (!gone[i]) gone[i] = 1, out.push_back(i);
    }
    for (size_t i = 0; i < n; ++i)
      if (!gone[i] && s.size(i).c == 1 && s.size(i).t < 0.25 * T) gone[i] = 1, out.push_back(i);
    order.clear();
    for (size_t i : out) {
      s.add(i, -1);
      const SizeOption* lw = least_work_size(p.opt[i], T);  // its least-work time that fits T
      const double bt = lw != nullptr ? lw->t : p.opt[i].back().t;
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
  for (size_t i = 0; i < n; ++i) placed.push_back(Placed{static_cast<int>(i), best.start[i], best.size(i).c, 0, 0});
  return top_down(p, std::move(placed));
}

}  // namespace cplab
