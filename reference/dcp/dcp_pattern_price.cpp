// dcp_pattern_price.cpp: the exact pricing of rank patterns (see dcp_pattern_price.h).
#include "dcp/dcp_pattern_price.h"

#include <algorithm>
#include <limits>
#include <numeric>

namespace cplab {

namespace {

// a list longer than this is compressed to at most kGrid + 1 states (see compress)
constexpr size_t kMaxList = 2048;
constexpr double kGrid = 8192;

}  // namespace

void PatternPricer::compress(std::vector<State>& list, double u) {
  // list: times ascending, values rising. Consecutive states whose times fall within u of the
  // first of their run become one: the first one's time with the last one's value (and path).
  // That state is optimistic (no real pattern needs so little time for so much value), so V stays
  // an upper bound, and the pattern read back may take up to u per merge more than T.
  size_t w = 0;
  for (size_t r = 0; r < list.size();) {
    size_t e = r;
    while (e + 1 < list.size() && list[e + 1].t <= list[r].t + u) ++e;
    State s = list[e];
    s.t = list[r].t;
    list[w++] = s;
    compressed_ = compressed_ || e > r;
    r = e + 1;
  }
  list.resize(w);
}

// The fractional bound of stages k..m-1: each sample's sizes with the empty choice (0, 0), reduced
// to their upper concave hull, give segments of falling value per time; taking all samples'
// segments in that order, the last one in part, is the LP optimum of the multiple-choice knapsack
// (Sinha and Zemel 1979), at least the best integral completion.
void PatternPricer::build_bounds(const std::vector<std::vector<SizeOption>>& jobs, const std::vector<double>& pi,
                                 double T) {
  const size_t m = order_.size();
  seg_t_.assign(m + 1, {});
  seg_v_.assign(m + 1, {});
  std::vector<std::pair<double, double>> segs, hull;  // (time, value) increments, suffix in efficiency order
  const auto steeper = [](const auto& a, const auto& b) { return a.second * b.first > b.second * a.first; };
  for (size_t k = m; k-- > 0;) {
    const size_t i = order_[k];
    hull.assign(1, {0.0, 0.0});  // points (t, v) ascending in t (sizes descending in c)
    for (size_t o = jobs[i].size(); o-- > 0;) {
      const SizeOption& opt = jobs[i][o];
      if (opt.t > T) continue;
      const std::pair<double, double> p{opt.t, pi[i] / static_cast<double>(opt.c)};
      if (p.second <= hull.back().second) continue;  // more time, no more value
      while (hull.size() >= 2) {  // keep the hull concave
        const auto& a = hull[hull.size() - 2];
        const auto& b = hull.back();
        if ((b.second - a.second) * (p.first - a.first) <= (p.second - a.second) * (b.first - a.first)) hull.pop_back();
        else break;
      }
      hull.push_back(p);
    }
    // each new segment inserted where its value per time puts it (segs stays sorted: no re-sort)
    for (size_t q = 1; q < hull.size(); ++q) {
      const std::pair<double, double> g{hull[q].first - hull[q - 1].first, hull[q].second - hull[q - 1].second};
      segs.insert(std::upper_bound(segs.begin(), segs.end(), g, steeper), g);
    }
    std::vector<double>& pt = seg_t_[k];
    std::vector<double>& pv = seg_v_[k];
    pt.assign(1, 0.0), pv.assign(1, 0.0);
    for (const auto& [t, v] : segs) pt.push_back(pt.back() + t), pv.push_back(pv.back() + v);
  }
  seg_t_[m].assign(1, 0.0), seg_v_[m].assign(1, 0.0);
}

double PatternPricer::best(const std::vector<std::vector<SizeOption>>& jobs, const std::vector<double>& pi, double T,
                           std::vector<double>& pattern, double* time) {
  const size_t n = jobs.size();
  // the samples that can add value, longest (at their smallest size meeting T) first
  std::vector<double> longest(n, 0.0);
  order_.clear();
  for (size_t i = 0; i < n; ++i) {
    if (pi[i] <= 0) continue;
    for (const SizeOption& o : jobs[i])
      if (o.t <= T) longest[i] = std::max(longest[i], o.t);
    if (longest[i] > 0) order_.push_back(i);
  }
  std::sort(order_.begin(), order_.end(), [&](size_t a, size_t b) { return longest[a] > longest[b]; });
  const size_t m = order_.size();
  build_bounds(jobs, pi, T);
  if (stages_.size() < m + 1) stages_.resize(m + 1);
  compressed_ = false;
  stages_[0].assign(1, State{0.0, 0.0, -1, -1});
  double best = 0;
  for (size_t k = 0; k < m; ++k) {
    const std::vector<State>& from = stages_[k];
    const size_t i = order_[k];
    // the list without sample i, then merged with the list extended by each of its sizes (each
    // sorted by time: a merge, not a sort), dropping dominated states as it goes (one with no less
    // time and no more value than an earlier one)
    merged_.clear();
    for (size_t s = 0; s < from.size(); ++s) merged_.push_back({from[s].t, from[s].v, static_cast<int>(s), -1});
    // values rise along a list, so each list's best is its last
    if (!from.empty()) best = std::max(best, from.back().v);
    for (size_t o = 0; o < jobs[i].size(); ++o) {
      const SizeOption& opt = jobs[i][o];
      if (opt.t > T) continue;
      const double value = pi[i] / static_cast<double>(opt.c);
      size_t len = 0;  // the states of `from` that still fit T with this size
      while (len < from.size() && from[len].t + opt.t <= T) ++len;
      if (len == 0) continue;
      best = std::max(best, from[len - 1].v + value);
      // branch-free (the comparisons are unpredictable): a sentinel ends merged_, an index clamp
      // keeps `from` in range, every state is written and kept by advancing the end or not
      const size_t na = merged_.size();
      merged_.push_back({std::numeric_limits<double>::infinity(), 0.0, -1, -1});
      scratch_.resize(na + len);
      double top = -1;
      size_t a = 0, b = 0, w = 0;
      for (size_t r = 0; r < na + len; ++r) {
        const State& x = merged_[a];
        const State& y = from[std::min(b, len - 1)];
        const double et = b < len ? y.t + opt.t : std::numeric_limits<double>::infinity(), ev = y.v + value;
        const bool take_e = et < x.t || (et == x.t && ev > x.v);  // as std::merge: ties from merged_
        const State s{take_e ? et : x.t, take_e ? ev : x.v, take_e ? static_cast<int>(b) : x.parent,
                      take_e ? static_cast<int>(o) : x.option};
        a += take_e ? 0 : 1, b += take_e ? 1 : 0;
        scratch_[w] = s;
        const bool keep = s.v > top;
        w += keep ? 1 : 0;
        top = keep ? s.v : top;
      }
      scratch_.resize(w);
      merged_.swap(scratch_);
    }
    std::vector<State>& to = stages_[k + 1];
    to.clear();
    // rest: what stages k+1.. can add within T - s.t, at most (the fractional bound: its prefix
    // sums at T - s.t, the segment found by a pointer that only moves down, the states coming in
    // ascending time)
    const std::vector<double>& pt = seg_t_[k + 1];
    const std::vector<double>& pv = seg_v_[k + 1];
    size_t q = pt.size() - 1;
    for (const State& s : merged_) {  // no state in it is dominated
      const double cap = T - s.t;
      while (q > 0 && pt[q] > cap) --q;
      const double rest =
          q + 1 >= pt.size() ? pv.back() : pv[q] + (pv[q + 1] - pv[q]) * (cap - pt[q]) / (pt[q + 1] - pt[q]);
      if (s.v + rest < best) continue;  // cannot beat the best
      to.push_back(s);
    }
    if (to.size() > kMaxList) compress(to, T / kGrid);
  }
  // the best pattern is the last state of the last list (times ascending, values rising)
  pattern.assign(n, 0.0);
  const std::vector<State>& last = stages_[m];
  *time = 0;  // the real time of the pattern read back (a compressed state's time is optimistic)
  int s = last.empty() ? -1 : static_cast<int>(last.size()) - 1;
  for (size_t k = m; k-- > 0 && s >= 0;) {
    const State& st = stages_[k + 1][static_cast<size_t>(s)];
    if (st.option >= 0) {
      const SizeOption& o = jobs[order_[k]][static_cast<size_t>(st.option)];
      pattern[order_[k]] = 1.0 / static_cast<double>(o.c);
      *time += o.t;
    }
    s = st.parent;
  }
  return last.empty() ? 0.0 : last.back().v;
}

double PatternPricer::greedy(const std::vector<std::vector<SizeOption>>& jobs, const std::vector<double>& pi, double T,
                             std::vector<double>& pattern, double* time) {
  // the (sample, size) pairs that can join: pi > 0 and t <= T, with their value per time
  flat_.clear();
  double shortest = T;
  for (size_t i = 0; i < jobs.size(); ++i) {
    if (pi[i] <= 0) continue;
    for (const SizeOption& o : jobs[i])
      if (o.t <= T) {
        const double c = static_cast<double>(o.c);
        flat_.push_back({i, o.t, c, pi[i] / (c * o.t)});
        shortest = std::min(shortest, o.t);
      }
  }
  // taken by value per time when the sample is not yet in and it fits: a scan for the best one
  // left per pick, not a sort or a heap (a pattern is full after a few)
  pattern.assign(jobs.size(), 0.0);
  double t = 0, v = 0;
  while (t + shortest <= T) {
    const Flat* pick = nullptr;
    double top = 0;
    for (const Flat& f : flat_)
      if (f.e > top && t + f.t <= T && pattern[f.i] == 0) top = f.e, pick = &f;
    if (pick == nullptr) break;
    pattern[pick->i] = 1 / pick->c;
    t += pick->t, v += pi[pick->i] / pick->c;
  }
  *time = t;
  return v;
}

}  // namespace cplab
