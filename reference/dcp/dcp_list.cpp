// dcp_list.cpp: list scheduling on aligned blocks (see dcp_list.h).
#include "dcp/dcp_list.h"

#include <algorithm>
#include <limits>

#include "core/error.h"

namespace cplab {

namespace {

// The buddy tree over the N ranks: node 1 holds all of them, node k has children 2k and 2k + 1,
// node N + r is rank r; the aligned block of size c starting at s is node N / c + s / c.
// Per node: the latest free time of its ranks and their sum.
struct FreeTree {
  std::int64_t N;
  std::vector<double> mx, sum;  // [2N]
  explicit FreeTree(std::int64_t n) : N(n), mx(static_cast<size_t>(2 * n), 0.0), sum(static_cast<size_t>(2 * n), 0.0) {}
  // every rank of the block (node k, size c) becomes free at `until`
  void occupy(size_t k, std::int64_t c, double until) {
    for (size_t lo = k, hi = k + 1, w = static_cast<size_t>(c);; lo *= 2, hi *= 2, w /= 2) {
      for (size_t q = lo; q < hi; ++q) mx[q] = until, sum[q] = until * static_cast<double>(w);
      if (w == 1) break;
    }
    for (k /= 2; k >= 1; k /= 2) mx[k] = std::max(mx[2 * k], mx[2 * k + 1]), sum[k] = sum[2 * k] + sum[2 * k + 1];
  }
};

size_t first_node(std::int64_t N, std::int64_t c) { return static_cast<size_t>(N / c); }

// the prefix's blocks taken in order, as the search took them; returns where the search goes on
size_t replay(const ListProblem& p, const std::vector<int>& order, std::span<const Placed> prefix, FreeTree& b,
              std::vector<Placed>& out) {
  if (prefix.size() > order.size()) throw Error("list scheduling: a prefix longer than the order");
  for (size_t j = 0; j < prefix.size(); ++j) {
    const Placed& x = prefix[j];
    if (x.sample != order[j]) throw Error("list scheduling: the prefix is not the order's");
    b.occupy(first_node(p.N, x.size) + static_cast<size_t>(x.start / x.size), x.size, x.end);
    out.push_back(x);
  }
  return prefix.size();
}

}  // namespace

double ListProblem::time(int sample, std::int64_t c) const {
  for (const SizeOption& o : opt[static_cast<size_t>(sample)])
    if (o.c == c) return o.t;
  return cost.time(L[static_cast<size_t>(sample)], c);  // a size below cp_min: checked elsewhere
}

std::vector<Placed> list_fixed(const ListProblem& p, const std::vector<int>& order,
                               const std::vector<std::int64_t>& size, std::span<const Placed> prefix) {
  FreeTree b(p.N);
  std::vector<Placed> out;
  out.reserve(order.size());
  for (size_t j = replay(p, order, prefix, b, out); j < order.size(); ++j) {
    const int i = order[j];
    const std::int64_t c = size[static_cast<size_t>(i)];
    const double t = p.time(i, c);
    const size_t k0 = first_node(p.N, c);
    size_t bk = k0;
    double ready = b.mx[k0];
    for (size_t k = k0 + 1; k < 2 * k0; ++k)
      if (b.mx[k] < ready - 1e-12) bk = k, ready = b.mx[k];
    b.occupy(bk, c, ready + t);
    out.push_back(Placed{i, static_cast<std::int64_t>(bk - k0) * c, c, ready, ready + t});
  }
  return out;
}

std::vector<Placed> list_target(const ListProblem& p, const std::vector<int>& order, double T,
                                std::span<const Placed> prefix) {
  FreeTree b(p.N);
  std::vector<Placed> out;
  out.reserve(order.size());
  const double limit = T * (1 + 1e-12);
  for (size_t j = replay(p, order, prefix, b, out); j < order.size(); ++j) {
    const int i = order[j];
    bool fits = false;
    double bcost = 0, bend = std::numeric_limits<double>::infinity(), bbegin = 0;
    size_t bk = 0;
    std::int64_t bc = 0;
    double tprev = std::numeric_limits<double>::infinity();
    for (const SizeOption& o : p.opt[static_cast<size_t>(i)]) {
      // a size with more ranks and no shorter time never wins: any of its blocks holds a smaller
      // block, free no later, where the sample ends earlier using less rank-time
      if (o.t >= tprev) continue;
      tprev = o.t;
      const size_t k0 = first_node(p.N, o.c);
      const double cd = static_cast<double>(o.c), work = cd * o.t;
      size_t k = k0;
      // none ends by T yet: the earliest end, until one does
      for (; k < 2 * k0 && !fits; ++k) {
        const double ready = b.mx[k], end = ready + o.t;
        if (end <= limit)
          fits = true, bcost = work + cd * ready - b.sum[k], bend = end, bbegin = ready, bk = k, bc = o.c;
        else if (end < bend - 1e-12)
          bcost = work + cd * ready - b.sum[k], bend = end, bbegin = ready, bk = k, bc = o.c;
      }
      // then only blocks ending by T: the least work + idle (cost), the earlier end on ties
      for (; k < 2 * k0; ++k) {
        const double ready = b.mx[k], end = ready + o.t;
        if (end > limit) continue;
        const double cost = work + cd * ready - b.sum[k];  // work + idle
        if (cost < bcost - 1e-12 || (cost <= bcost + 1e-12 && end < bend - 1e-12))
          bcost = cost, bend = end, bbegin = ready, bk = k, bc = o.c;
      }
    }
    b.occupy(bk, bc, bend);
    out.push_back(Placed{i, static_cast<std::int64_t>(bk - first_node(p.N, bc)) * bc, bc, bbegin, bend});
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

void canonical_order(std::span<const double> v, std::int64_t s, std::int64_t c, std::vector<double>& out) {
  // bottom up in place: when blocks of g are in canonical order, a block of 2 g is by putting its
  // lesser half first
  const auto first = static_cast<std::ptrdiff_t>(out.size());
  out.insert(out.end(), v.begin() + s, v.begin() + s + c);
  const auto at = out.begin() + first;
  for (std::ptrdiff_t g = 1; g < c; g *= 2)
    for (std::ptrdiff_t b = 0; b < c; b += 2 * g)
      if (std::lexicographical_compare(at + b + g, at + b + 2 * g, at + b, at + b + g))
        std::swap_ranges(at + b, at + b + g, at + b + g);
}

}  // namespace cplab
