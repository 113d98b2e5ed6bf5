// dcp_cplab.cpp: targets, allotments, list scheduling, local improvement (see dcp_cplab.h).
#include "dcp/dcp_cplab.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <random>

#include "dcp/dcp_block_search.h"
#include "dcp/dcp_exact_tree.h"
#include "dcp/dcp_list.h"
#include "dcp/dcp_megatron.h"
#include "dcp/dcp_tree.h"

namespace cplab {

namespace {

// sizes for a target T: least work among sizes meeting T (the fastest size if none does)
std::vector<std::int64_t> allot(const ListProblem& p, double T) {
  std::vector<std::int64_t> size;
  for (std::int64_t Li : p.L) {
    std::int64_t best = -1, fastest = cp_min(Li, p.M);
    double bw = 0;
    for (std::int64_t c = cp_min(Li, p.M); c <= p.N; c *= 2) {
      const double t = p.cost.time(Li, c);
      if (t < p.cost.time(Li, fastest)) fastest = c;
      if (t <= T && (best < 0 || static_cast<double>(c) * t < bw - 1e-12)) best = c, bw = static_cast<double>(c) * t;
    }
    size.push_back(best > 0 ? best : fastest);
  }
  return size;
}

// the three orders: size then time, time, work (c * t); all descending, stable
std::vector<std::vector<int>> orders(const ListProblem& p, const std::vector<std::int64_t>& size) {
  const size_t n = p.L.size();
  std::vector<double> t(n), w(n);
  for (size_t i = 0; i < n; ++i) t[i] = p.cost.time(p.L[i], size[i]), w[i] = static_cast<double>(size[i]) * t[i];
  std::vector<int> base(n);
  std::iota(base.begin(), base.end(), 0);
  std::vector<std::vector<int>> out(3, base);
  std::stable_sort(out[0].begin(), out[0].end(), [&](int a, int b) {
    const auto ua = static_cast<size_t>(a), ub = static_cast<size_t>(b);
    return size[ua] != size[ub] ? size[ua] > size[ub] : t[ua] > t[ub];
  });
  std::stable_sort(out[1].begin(), out[1].end(), [&](int a, int b) { return t[static_cast<size_t>(a)] > t[static_cast<size_t>(b)]; });
  std::stable_sort(out[2].begin(), out[2].end(), [&](int a, int b) { return w[static_cast<size_t>(a)] > w[static_cast<size_t>(b)]; });
  return out;
}

struct Plan {
  double length = std::numeric_limits<double>::infinity();
  std::vector<Placed> placed;  // list scheduling's placements of `order` (see listed)
  std::vector<int> order;
  std::vector<std::int64_t> size;  // list_fixed's sizes; empty: list_target with T
  double T = 0;
  bool listed = false;  // placed is run()'s result (not replaced by another search's)
  // list scheduling of order; what it shares with `from` (the same rule and sizes or T, the same
  // first samples of the order) is replayed from from's placements, not searched again
  std::vector<Placed> run(const ListProblem& p, const Plan* from = nullptr) const {
    size_t keep = 0;
    if (from != nullptr && from->listed && from->size == size && (!size.empty() || from->T == T))
      while (keep < order.size() && keep < from->order.size() && order[keep] == from->order[keep]) ++keep;
    const std::span<const Placed> prefix(from != nullptr ? from->placed.data() : nullptr, keep);
    return size.empty() ? list_target(p, order, T, prefix) : list_fixed(p, order, size, prefix);
  }
  void offer(const ListProblem& p, std::vector<int> o, std::vector<std::int64_t> s, double t) {
    Plan c{0, {}, std::move(o), std::move(s), t, true};
    c.placed = c.run(p, this);
    c.length = makespan_of(c.placed);
    if (c.length < length - 1e-12) *this = std::move(c);
  }
};

// the sample ending last moves earlier in the order (to the front, or halfway), while that helps
void improve(const ListProblem& p, Plan& best) {
  for (int iter = 0; iter < 4 * static_cast<int>(p.L.size()) + 8; ++iter) {
    const auto last = std::max_element(best.placed.begin(), best.placed.end(), [](const Placed& a, const Placed& b) { return a.end < b.end; });
    const auto pos = static_cast<size_t>(std::find(best.order.begin(), best.order.end(), last->sample) - best.order.begin());
    bool better = false;
    for (size_t to : {size_t{0}, pos / 2, pos > 0 ? pos - 1 : 0}) {
      if (to >= pos) continue;
      std::vector<int> o = best.order;
      o.erase(o.begin() + static_cast<std::ptrdiff_t>(pos));
      o.insert(o.begin() + static_cast<std::ptrdiff_t>(to), last->sample);
      const double before = best.length;
      best.offer(p, std::move(o), best.size, best.T);
      if (best.length < before) {
        better = true;
        break;
      }
    }
    if (!better) return;
  }
}

// hill climbing with a fixed seed (the result is reproducible): move one sample in the order,
// swap two, or (target rule) nudge T by about 1%; keep a change that does not lengthen the schedule
void climb(const ListProblem& p, Plan& best, int iterations) {
  std::mt19937_64 rng(0x5eedULL);
  const size_t n = best.order.size();
  if (n < 2) return;
  for (int it = 0; it < iterations; ++it) {
    std::vector<int> o = best.order;
    double T = best.T;
    const std::uint64_t kind = rng() % (best.size.empty() ? 3 : 2);
    const size_t a = rng() % n, b = rng() % n;
    if (kind == 0) std::swap(o[a], o[b]);
    else if (kind == 1) {
      const int v = o[a];
      o.erase(o.begin() + static_cast<std::ptrdiff_t>(a));
      o.insert(o.begin() + static_cast<std::ptrdiff_t>(b), v);
    } else {
      T *= 1.0 + 0.01 * std::normal_distribution<double>(0.0, 1.0)(rng);
    }
    Plan c{0, {}, std::move(o), best.size, T, true};
    c.placed = c.run(p, &best);
    c.length = makespan_of(c.placed);
    if (c.length <= best.length) best = std::move(c);
  }
}

}  // namespace

DcpSchedule schedule_cplab(const std::vector<std::int64_t>& lengths, std::int64_t N, std::int64_t M,
                           const CostModel& cost, DcpBound* bound) {
  check_batch(lengths, N, M);
  const ListProblem p{lengths, N, M, cost};
  const DcpBound bounds = lower_bounds(lengths, N, M, cost);
  if (bound) *bound = bounds;
  const double lb = bounds.moldable;
  Plan best;
  const auto at_bound = [&] { return best.length <= lb * (1 + kRelTol) + 1e-12; };  // then it is optimal
  best.offer(p, orders(p, std::vector<std::int64_t>(lengths.size(), N))[1], std::vector<std::int64_t>(lengths.size(), N), 0);
  std::vector<std::int64_t> prev;
  for (int k = 0; k <= 41 && !at_bound(); ++k) {
    const double T = k == 41 ? std::numeric_limits<double>::infinity() : lb * std::pow(1.015, k);
    if (k < 41 && T > best.length * (1 + 1e-12)) k = 40;  // targets above the best makespan found: only infinity
    const std::vector<std::int64_t> size = allot(p, T);
    const std::vector<std::vector<int>> os = orders(p, size);
    for (const std::vector<int>& o : os) {
      if (size != prev) best.offer(p, o, size, 0);
      if (k < 41) best.offer(p, o, {}, T);
    }
    prev = size;
  }
  if (!at_bound()) improve(p, best);
  // search steps: 300 up to 64 samples, then falling as 1 / samples^2 (a step costs ~samples)
  const size_t n2 = std::max<size_t>(1, lengths.size() * lengths.size());
  const int steps = static_cast<int>(std::clamp<size_t>(300 * 64 * 64 / n2, 8, 300));
  if (!at_bound()) climb(p, best, steps);
  if (!at_bound()) {
    // block view (dcp_tree.h): ruin and recreate, about as much work for every batch size
    std::vector<Placed> r = refine_blocks(p, best.placed, steps);
    if (makespan_of(r) < best.length - 1e-12)
      best.placed = std::move(r), best.length = makespan_of(best.placed), best.listed = false;
  }
  // big samples placed exactly, small ones after (dcp_block_search.h): targets a step d below the
  // best makespan; d halves after a target no split reaches or one not above the bound, down to
  // kBlockGap
  const std::int64_t nodes = lengths.size() <= kBlockFewSamples ? kBlockNodesFew : kBlockNodes;
  for (double d = kBlockStep; !at_bound() && d >= kBlockGap;) {
    const double T = best.length / (1 + d);
    if (T <= lb) {  // proven too short (dcp_bounds.h): no schedule ends by it
      d /= 2;
      continue;
    }
    BlockResult r;
    for (const BlockSplit& split : kBlockSplits)
      if (!r.found) r = block_search(p.opt, N, T, nodes, split);
    if (!r.found) {
      d /= 2;
      continue;
    }
    std::vector<Placed> placed;
    for (size_t i = 0; i < lengths.size(); ++i)
      placed.push_back(Placed{static_cast<int>(i), r.block[i].first, r.block[i].second, 0, 0});
    placed = top_down(p, std::move(placed));
    const double len = makespan_of(placed);
    if (len >= best.length - 1e-12) break;  // cannot happen (len <= T < best); no loop without progress
    best.placed = std::move(placed), best.length = len, best.listed = false;
  }
  DcpSchedule s = to_schedule(p, best.placed);
  // Megatron v1's schedule, when aligned and shorter, is kept: never worse than v1
  const DcpSchedule v1 = schedule_megatron_v1(lengths, N, M, cost);
  if (v1.aligned && v1.makespan < s.makespan - 1e-12) s = v1;
  // small batches: the exact search in the block view (dcp_exact_tree.h) below the best makespan
  // found; within its node limit it proves the optimum, else it keeps any shorter schedule it found
  if (lengths.size() <= kExactSamples && N <= kExactRanks && s.makespan > lb * (1 + kRelTol) + 1e-12) {
    bool complete = false;
    DcpSchedule e = schedule_exact_tree(lengths, N, M, cost, s.makespan, kExactNodes, complete);
    if (!e.rounds.empty() && e.makespan < s.makespan - 1e-12) s = std::move(e);
  }
  check(s, lengths, M);
  return s;
}

}  // namespace cplab
