// dcp_pattern_price.cpp: the exact pricing of rank patterns (see dcp_pattern_price.h).
#include "dcp/dcp_pattern_price.h"

#include <algorithm>
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
    for (size_t q = 1; q < hull.size(); ++q)
      segs.push_back({hull[q].first - hull[q - 1].first, hull[q].second - hull[q - 1].second});
    std::sort(segs.begin(), segs.end(), [](const auto& a, const auto& b) { return a.second * b.first > b.second * a.first; });
    std::vector<double>& pt = seg_t_[k];
    std::vector<double>& pv = seg_v_[k];
    pt.assign(1, 0.0), pv.assign(1, 0.0);
    for (const auto& [t, v] : segs) pt.push_back(pt.back() + t), pv.push_back(pv.back() + v);
  }
  seg_t_[m].assign(1, 0.0), seg_v_[m].assign(1, 0.0);
}

double PatternPricer::bound(size_t k, double cap) const {
  const std::vector<double>& pt = seg_t_[k];
  const std::vector<double>& pv = seg_v_[k];
  const size_t q = static_cast<size_t>(std::upper_bound(pt.begin(), pt.end(), cap) - pt.begin()) - 1;
  if (q + 1 >= pt.size()) return pv.back();
  return pv[q] + (pv[q + 1] - pv[q]) * (cap - pt[q]) / (pt[q + 1] - pt[q]);
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
  const auto before = [](const State& a, const State& b) { return a.t < b.t || (a.t == b.t && a.v > b.v); };
  for (size_t k = 0; k < m; ++k) {
    const std::vector<State>& from = stages_[k];
    const size_t i = order_[k];
    // the list without sample i, then merged with the list extended by each of its sizes (each
    // sorted by time: a merge, not a sort)
    merged_.clear();
    for (size_t s = 0; s < from.size(); ++s) merged_.push_back({from[s].t, from[s].v, static_cast<int>(s), -1});
    for (size_t o = 0; o < jobs[i].size(); ++o) {
      const SizeOption& opt = jobs[i][o];
      if (opt.t > T) continue;
      const double value = pi[i] / static_cast<double>(opt.c);
      shifted_.clear();
      for (size_t s = 0; s < from.size(); ++s) {
        const double t = from[s].t + opt.t;
        if (t > T) break;  // `from` is sorted by time
        shifted_.push_back({t, from[s].v + value, static_cast<int>(s), static_cast<int>(o)});
      }
      scratch_.resize(merged_.size() + shifted_.size());
      std::merge(merged_.begin(), merged_.end(), shifted_.begin(), shifted_.end(), scratch_.begin(), before);
      merged_.swap(scratch_);
    }
    for (const State& s : merged_) best = std::max(best, s.v);
    std::vector<State>& to = stages_[k + 1];
    to.clear();
    double top = -1;
    for (const State& s : merged_) {
      if (s.v <= top) continue;  // dominated: an earlier one has no more time and no less value
      top = s.v;
      if (s.v + bound(k + 1, T - s.t) < best) continue;  // cannot beat the best
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
  // the (sample, size) pairs with what a call reads, kept while the jobs stay the same
  if (flat_jobs_ != &jobs) {
    flat_.clear();
    for (size_t i = 0; i < jobs.size(); ++i)
      for (const SizeOption& o : jobs[i])
        flat_.push_back({i, o.t, 1.0 / static_cast<double>(o.c), 1.0 / (static_cast<double>(o.c) * o.t)});
    flat_jobs_ = &jobs;
  }
  // every (sample, size) by value per time, taken when its sample is not yet in and it fits
  cand_.clear();
  double shortest = T;
  for (const Flat& f : flat_)
    if (pi[f.i] > 0 && f.t <= T) cand_.push_back({pi[f.i] * f.per_work, &f}), shortest = std::min(shortest, f.t);
  // a heap, not a sort: the pattern is full after a few of them
  const auto lower = [](const Cand& a, const Cand& b) { return a.e < b.e; };
  std::make_heap(cand_.begin(), cand_.end(), lower);
  pattern.assign(jobs.size(), 0.0);
  double t = 0, v = 0;
  for (auto end = cand_.end(); end != cand_.begin() && t + shortest <= T; --end) {
    std::pop_heap(cand_.begin(), end, lower);
    const Flat& f = *(end - 1)->f;
    if (pattern[f.i] != 0 || t + f.t > T) continue;
    pattern[f.i] = f.per_rank;
    t += f.t, v += pi[f.i] * f.per_rank;
  }
  *time = t;
  return v;
}

}  // namespace cplab
