// dcp_block_search.cpp: the big-first block search, its fill and its relaxation (see dcp_block_search.h).
#include "dcp/dcp_block_search.h"

#include <algorithm>
#include <limits>
#include <set>

namespace cplab {

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
using Options = std::vector<SizeOption>;
using Block = std::pair<std::int64_t, std::int64_t>;  // (start, size)

// rank loads in canonical order: at every aligned block, the lexicographically smaller half first
void canonical(const std::vector<double>& load, size_t s, size_t c, std::vector<double>& out) {
  if (c == 1) {
    out.push_back(load[s]);
    return;
  }
  std::vector<double> a, b;
  canonical(load, s, c / 2, a);
  canonical(load, s + c / 2, c / 2, b);
  if (b < a) std::swap(a, b);
  out.insert(out.end(), a.begin(), a.end());
  out.insert(out.end(), b.begin(), b.end());
}

struct Search {
  size_t N;
  double T, cap;                     // cap = T with the tolerance: a load may reach it
  bool fill;
  std::vector<Options> big, small;   // [big / small sample] sizes with t <= T, faster as c grows
  std::vector<double> big_work;      // [big sample] least work
  double small_work = 0;             // the small samples' least work
  std::vector<double> load, top;     // [N] path loads; [2N] the largest load in each block (node 1 = all)
  std::vector<Block> at_big, at_small;
  std::int64_t nodes = 0, limit = 0;
  bool aborted = false;
  std::set<std::pair<size_t, std::vector<double>>> seen;

  // least work of big samples k.., each among its sizes that still have a block where it fits
  double rest_work(size_t k) {
    for (size_t r = 0; r < N; ++r) top[N + r] = load[r];
    for (size_t q = N; q-- > 1;) top[q] = std::max(top[2 * q], top[2 * q + 1]);
    double sum = 0;
    for (size_t j = k; j < big.size(); ++j) {
      double w = kInf;
      for (const SizeOption& o : big[j]) {
        const auto first = static_cast<std::ptrdiff_t>(N / static_cast<size_t>(o.c));  // blocks of size c: nodes [first, 2 first)
        if (*std::min_element(top.begin() + first, top.begin() + 2 * first) + o.t <= cap)
          w = std::min(w, static_cast<double>(o.c) * o.t);
      }
      if (w == kInf) return kInf;
      sum += w;
    }
    return sum;
  }

  // the small samples, longest first: least work, fullest block on ties; false if one fits nowhere
  bool fill_small() {
    std::vector<double> l = load;
    for (size_t i = 0; i < small.size(); ++i) {
      double bw = kInf, bl = -1;
      Block bb{0, 0};
      double bt = 0;
      for (const SizeOption& o : small[i]) {
        const auto c = static_cast<size_t>(o.c);
        for (size_t s = 0; s < N; s += c) {
          const double mx = *std::max_element(l.begin() + static_cast<std::ptrdiff_t>(s), l.begin() + static_cast<std::ptrdiff_t>(s + c));
          const double w = static_cast<double>(o.c) * o.t;
          if (mx + o.t > cap) continue;
          if (w < bw - 1e-12 || (w <= bw + 1e-12 && mx > bl)) bw = w, bl = mx, bb = {static_cast<std::int64_t>(s), o.c}, bt = o.t;
        }
      }
      if (bw == kInf) return false;
      for (std::int64_t q = bb.first; q < bb.first + bb.second; ++q) l[static_cast<size_t>(q)] += bt;
      at_small[i] = bb;
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
    if (small_work + rest_work(k) > room * (1 + 1e-12)) return false;
    if (k == big.size()) return !fill || fill_small();
    std::vector<double> key;
    key.reserve(N);
    canonical(load, 0, N, key);
    if (!seen.insert({k, std::move(key)}).second) return false;  // the same loads died before
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
                         bool fill, BlockSplit split) {
  BlockResult r;
  Search s;
  s.N = static_cast<size_t>(N);
  s.T = T;
  s.cap = T * (1 + 1e-12);
  s.fill = fill;
  s.limit = node_limit;
  s.load.assign(s.N, 0.0);
  s.top.assign(2 * s.N, 0.0);
  std::vector<std::pair<double, size_t>> big, small;  // (-least work, sample), (-its time, sample)
  for (size_t i = 0; i < jobs.size(); ++i) {
    double w = kInf, tw = 0;
    for (const SizeOption& p : jobs[i])
      if (p.t <= T && static_cast<double>(p.c) * p.t < w) w = static_cast<double>(p.c) * p.t, tw = p.t;
    if (w == kInf) return r;  // no size meets T: nothing survives, a proof
    if (tw > split.big * T) big.push_back({-w, i});
    else small.push_back({-tw, i});
  }
  std::sort(big.begin(), big.end());
  while (big.size() > split.max_big) {  // the rest of the big ones are placed with the small ones
    const size_t i = big.back().second;
    big.pop_back();
    double tw = 0, w = kInf;
    for (const SizeOption& p : jobs[i])
      if (p.t <= T && static_cast<double>(p.c) * p.t < w) w = static_cast<double>(p.c) * p.t, tw = p.t;
    small.push_back({-tw, i});
  }
  std::sort(small.begin(), small.end());
  auto usable = [&](size_t i, double& least) {
    Options o;
    least = kInf;
    for (const SizeOption& p : jobs[i])  // ascending c: a size only if it meets T and is faster
      if (p.t <= T && (o.empty() || p.t < o.back().t)) o.push_back(p), least = std::min(least, static_cast<double>(p.c) * p.t);
    return o;
  };
  double least = 0;
  for (const auto& [key, i] : big) s.big.push_back(usable(i, least)), s.big_work.push_back(least);
  for (const auto& [key, i] : small) s.small.push_back(usable(i, least)), s.small_work += least;
  s.big_work.push_back(0);
  for (size_t k = big.size(); k-- > 0;) s.big_work[k] += s.big_work[k + 1];  // suffix sums
  s.at_big.assign(big.size(), {0, 0});
  s.at_small.assign(small.size(), {0, 0});
  r.found = s.survives(0, 0.0);
  r.aborted = s.aborted;
  r.nodes = s.nodes;
  if (r.found && fill) {
    r.block.assign(jobs.size(), {0, 0});
    for (size_t k = 0; k < big.size(); ++k) r.block[big[k].second] = s.at_big[k];
    for (size_t k = 0; k < small.size(); ++k) r.block[small[k].second] = s.at_small[k];
  }
  return r;
}

bool blocks_too_short(const std::vector<Options>& jobs, std::int64_t N, double T, std::int64_t node_limit,
                      BlockSplit split) {
  const BlockResult r = block_search(jobs, N, T, node_limit, false, split);
  return !r.found && !r.aborted;
}

}  // namespace cplab
