// dcp_block_search.cpp: the big-first block search and its fill (see dcp_block_search.h).
#include "dcp/dcp_block_search.h"

#include <algorithm>
#include <limits>
#include <bit>
#include <unordered_set>

namespace cplab {

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
using Options = std::vector<SizeOption>;
using Block = std::pair<std::int64_t, std::int64_t>;  // (start, size)

// a hash of rank loads that is the same under the buddy tree's symmetries (swapping the two halves
// of any block): per node, the two children's hashes in sorted order. Equal loads give equal hashes;
// a collision only prunes a branch of a heuristic search
std::uint64_t mix(std::uint64_t a, std::uint64_t b) {
  std::uint64_t x = a * 0x9E3779B97F4A7C15ULL ^ (b + 0x632BE59BD9B4E019ULL + (a << 6) + (a >> 2));
  x ^= x >> 31;
  x *= 0xBF58476D1CE4E5B9ULL;
  return x ^ (x >> 29);
}

struct Search {
  size_t N;
  double T, cap;                     // cap = T with the tolerance: a load may reach it
  std::vector<Options> big, small;   // [big / small sample] sizes with t <= T, faster as c grows
  std::vector<double> big_work;      // [big sample] least work of it and the later ones
  double small_work = 0;             // the small samples' least work
  std::vector<double> small_rest;    // [small sample] least work of it and the later ones
  std::vector<double> load;          // [N] path loads of the big samples placed
  std::vector<double> top;           // [2N] buddy tree: the largest load in each block (node 1 = all)
  std::vector<double> lowest;        // [log2 N + 1] per size c (index log2 c): the least top of its blocks
  std::vector<std::uint64_t> hash;   // [2N] canonical hashes
  std::vector<Block> at_big, at_small;
  std::int64_t nodes = 0, limit = 0;
  bool aborted = false;
  std::unordered_set<std::uint64_t> seen;

  static size_t log2(std::int64_t c) { return static_cast<size_t>(std::countr_zero(static_cast<std::uint64_t>(c))); }

  // tops, per-size least tops and hashes from the loads
  void refresh() {
    for (size_t r = 0; r < N; ++r) {
      top[N + r] = load[r];
      hash[N + r] = std::hash<double>{}(load[r]);
    }
    for (size_t q = N; q-- > 1;) {
      top[q] = std::max(top[2 * q], top[2 * q + 1]);
      const std::uint64_t a = hash[2 * q], b = hash[2 * q + 1];
      hash[q] = mix(std::min(a, b), std::max(a, b));
    }
    for (size_t first = 1, lv = log2(static_cast<std::int64_t>(N)); first <= N; first *= 2, --lv) {
      double m = top[first];
      for (size_t q = first + 1; q < 2 * first; ++q) m = std::min(m, top[q]);
      lowest[lv] = m;
      if (lv == 0) break;
    }
  }

  // least work of big samples k.., each among its sizes that still have a block where it fits
  // (loads only grow deeper in the search); inf if one fits nowhere
  double rest_work(size_t k) const {
    double sum = 0;
    for (size_t j = k; j < big.size(); ++j) {
      double w = kInf;
      for (const SizeOption& o : big[j])
        if (lowest[log2(o.c)] + o.t <= cap) w = std::min(w, static_cast<double>(o.c) * o.t);
      if (w == kInf) return kInf;
      sum += w;
    }
    return sum;
  }

  // the small samples, longest first: least work, fullest block on ties; false if one fits nowhere.
  // Works on a copy of the tree of tops (a block's top is read in O(1), an addition costs O(c + log N))
  bool fill_small(double used) {
    std::vector<double> tp = top;
    for (size_t i = 0; i < small.size(); ++i) {
      if (small_rest[i] > (static_cast<double>(N) * T - used) * (1 + 1e-12)) return false;  // no room left for the rest
      double bw = kInf, bl = -1, bt = 0;
      size_t bq = 0;
      for (const SizeOption& o : small[i]) {
        const size_t first = N / static_cast<size_t>(o.c);
        const double w = static_cast<double>(o.c) * o.t;
        if (w > bw + 1e-12) continue;
        for (size_t q = first; q < 2 * first; ++q) {
          const double mx = tp[q];
          if (mx + o.t > cap) continue;
          if (w < bw - 1e-12 || mx > bl) bw = w, bl = mx, bq = q, bt = o.t;
        }
      }
      if (bw == kInf) return false;
      used += bw;
      // the block's ranks all gain bt: every node below it too; then its ancestors
      for (size_t lo = bq, hi = bq + 1; lo < 2 * N; lo *= 2, hi *= 2)
        for (size_t q = lo; q < hi; ++q) tp[q] += bt;
      for (size_t q = bq / 2; q >= 1; q /= 2) tp[q] = std::max(tp[2 * q], tp[2 * q + 1]);
      const size_t first = std::bit_floor(bq);  // the block's size and start from its node
      const auto c = static_cast<std::int64_t>(N / first);
      at_small[i] = {static_cast<std::int64_t>(bq - first) * c, c};
    }
    return true;
  }

  // true if some placement of big samples k.. survives
  bool survives(size_t k, double used) {
    if (++nodes > limit) {
      aborted = true;
      return false;
    }
    const double room = static_cast<double>(N) * T - used;
    if (small_work + big_work[k] > room * (1 + 1e-12)) return false;
    refresh();
    if (small_work + rest_work(k) > room * (1 + 1e-12)) return false;
    if (k == big.size()) return fill_small(used);
    if (!seen.insert(mix(hash[1], k)).second) return false;  // the same loads (up to symmetry) died before
    for (const SizeOption& o : big[k]) {
      const auto c = static_cast<size_t>(o.c);
      for (size_t s = 0; s < N; s += c) {
        const auto b = load.begin() + static_cast<std::ptrdiff_t>(s), e = b + static_cast<std::ptrdiff_t>(c);
        if (*std::max_element(b, e) + o.t > cap) continue;
        for (auto q = b; q != e; ++q) *q += o.t;
        at_big[k] = {static_cast<std::int64_t>(s), o.c};
        const bool ok = survives(k + 1, used + static_cast<double>(o.c) * o.t);
        for (auto q = b; q != e; ++q) *q -= o.t;
        if (ok || aborted) return ok;
      }
    }
    return false;
  }
};

}  // namespace

BlockResult block_search(const std::vector<Options>& jobs, std::int64_t N, double T, std::int64_t node_limit,
                         BlockSplit split) {
  BlockResult r;
  Search s;
  s.N = static_cast<size_t>(N);
  s.T = T;
  s.cap = T * (1 + 1e-12);
  s.limit = node_limit;
  s.load.assign(s.N, 0.0);
  s.top.assign(2 * s.N, 0.0);
  s.hash.assign(2 * s.N, 0);
  s.lowest.assign(static_cast<size_t>(std::countr_zero(static_cast<std::uint64_t>(N))) + 1, 0.0);
  std::vector<std::pair<double, size_t>> big, small;  // (-least work, sample), (-its time, sample)
  for (size_t i = 0; i < jobs.size(); ++i) {
    const SizeOption* lw = least_work_size(jobs[i], T);
    if (lw == nullptr) return r;  // no size meets T
    if (lw->t > split.big * T) big.push_back({-static_cast<double>(lw->c) * lw->t, i});
    else small.push_back({-lw->t, i});
  }
  std::sort(big.begin(), big.end());
  while (big.size() > split.max_big) {  // the rest of the big ones are placed with the small ones
    const size_t i = big.back().second;
    big.pop_back();
    small.push_back({-least_work_size(jobs[i], T)->t, i});
  }
  std::sort(small.begin(), small.end());
  auto usable = [&](size_t i, double& least) {
    Options o = useful_sizes(jobs[i], T);
    least = kInf;
    for (const SizeOption& p : o) least = std::min(least, static_cast<double>(p.c) * p.t);
    return o;
  };
  double least = 0;
  for (const auto& [key, i] : big) s.big.push_back(usable(i, least)), s.big_work.push_back(least);
  for (const auto& [key, i] : small) s.small.push_back(usable(i, least)), s.small_rest.push_back(least), s.small_work += least;
  for (size_t k = s.small_rest.size(); k-- > 1;) s.small_rest[k - 1] += s.small_rest[k];  // suffix sums
  s.big_work.push_back(0);
  for (size_t k = big.size(); k-- > 0;) s.big_work[k] += s.big_work[k + 1];  // suffix sums
  s.at_big.assign(big.size(), {0, 0});
  s.at_small.assign(small.size(), {0, 0});
  r.found = s.survives(0, 0.0);
  if (r.found) {
    r.block.assign(jobs.size(), {0, 0});
    for (size_t k = 0; k < big.size(); ++k) r.block[big[k].second] = s.at_big[k];
    for (size_t k = 0; k < small.size(); ++k) r.block[small[k].second] = s.at_small[k];
  }
  return r;
}

}  // namespace cplab
