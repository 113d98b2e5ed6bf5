// dcp_config_lp.cpp: column generation over rank patterns (see dcp_config_lp.h).
#include "dcp/dcp_config_lp.h"
#include "core/avx2_dispatch.h"
#include "core/util.h"
#include "dcp/dcp_pattern_price.h"
#include "dcp/dcp_tableau.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <type_traits>

namespace cplab {

namespace {

constexpr double kNegInf = -std::numeric_limits<double>::infinity();
constexpr int kGrid = 1024;    // big sizes' times rounded down to T / kGrid
// the same on batches of more than kOwnWeights samples (faster): megatron_example, 256 samples on 64
// ranks, 1000 batches, one pricing per round when it cuts (below): 768 1.0048 / 1.0171, 896 1.0046 /
// 1.0151, 1024 1.0045 / 1.0153, in 7.8, 8.2 and 8.8 s
constexpr int kGridShared = 896;
constexpr double kBig = 1.0 / 16; // sizes with t >= kBig * T are "big"
constexpr int kPatterns = 3000;  // patterns added at most, over all T
constexpr int kPerStep = 400;   // rounds (up to 2 patterns each) at most for one T
constexpr size_t kOwnWeights = 96;  // batches up to this size: a weight per sample
// on larger batches: samples whose longest time is below kOwnShare * T0 share a level (one weight)
// per bucket of least work kBucket wide (log scale; see the levels in config_lp_raise).
// megatron_example, 256 samples on 64 ranks, 1000 batches, 2 threads on 2 cores (mean / p99 of
// cplab / bound, the whole command's wall time), before the levels (a free weight per bucket, pi_i
// proportional to w_i in it): one bucket for all of them (issue 24's third pass) 1.0085 / 1.0273,
// 4.2 s; buckets 7% wide 1.0078 / 1.0235; 5% 1.0064 / 1.0182, 8.4 s. With the levels and 5%
// buckets: 1.0047 / 1.0159, 8.5 s at grid 768 (1.0046 / 1.0151 with one pricing per round where it
// cuts, below, at grid 896; 200 batches: a level per distinct sample 1.0045 in 1.6x the
// time; buckets 2% wide or kOwnShare 0.05, 1.0051 at grid 512, as 5% and 0.1 there)
constexpr double kOwnShare = 0.1, kBucket = 0.05;
// exact pricing (dcp_pattern_price.h) on batches of at most kOwnWeights samples and at most
// kExactPerRank per rank on average: with more samples per rank the patterns hold more of them,
// the pricer's lists grow, and the LP needs more columns (megatron_example, 64 samples on 16 ranks,
// 200 batches: the LP took 7.9 s exact against 0.9 s rounded, for a mean ratio of 1.0018 against
// 1.0023); at 64 ranks exact pricing is what brings code_longtail's ratio under 1.005
constexpr size_t kExactPerRank = 2;
constexpr int kCheap = 4000;  // greedy patterns at most for one T (exact pricing's batches)

using Jobs = std::vector<std::vector<SizeOption>>;

// the knapsack's step: to[k] = max(to[k], from[k] + v), k < len, with an AVX2 variant chosen at run
// time (both round alike). Cell is double on batches of at most kOwnWeights samples and float on
// larger ones: half the memory traffic and twice the lanes (megatron_example, 256 samples on 64
// ranks, 1000 batches: the command 8.7 s wall instead of 10.1 s, the same bounds). In float the
// sums may round down, so best_pattern scales V up by kFloatSlack to stay an over-estimate: a
// pattern holds at most 16 big sizes (t >= T / 16 each), so a cell sums at most 16 positive values,
// each rounded up to a float, each addition off by at most 2^-24 of the sum, under 1e-6 in all.
// Float is not used on the smaller batches because it changed which patterns the column generation
// found, and that was measurably worse there: megatron_example, 64 samples on 16 ranks, p99 1.0166
// instead of 1.0145.
constexpr double kFloatSlack = 2e-6;
template <class Cell>
Cell cell_up(double v) {  // v rounded up to a Cell
  const Cell f = static_cast<Cell>(v);
  return static_cast<double>(f) < v ? std::nextafter(f, std::numeric_limits<Cell>::infinity()) : f;
}
template <class Cell>
void relax_generic(Cell* __restrict to, const Cell* __restrict from, size_t len, Cell v) {
  for (size_t k = 0; k < len; ++k) to[k] = std::max(to[k], from[k] + v);
}
template <class Cell>
CPLAB_AVX2 void relax_avx2(Cell* __restrict to, const Cell* __restrict from, size_t len, Cell v) {
  for (size_t k = 0; k < len; ++k) to[k] = std::max(to[k], from[k] + v);
}
template <class Cell>
void relax(Cell* to, const Cell* from, size_t len, Cell v) {
  cpu_has_avx2() ? relax_avx2(to, from, len, v) : relax_generic(to, from, len, v);
}

// best_pattern's buffers, kept between calls (fresh ones each call cost more in allocations and
// page faults than the arithmetic)
struct PricingScratch {
  struct Small {
    size_t i;
    double v, t, c;
  };
  struct Big {
    size_t o;
    int w;
    double v;
  };
  // [big sample + 1][k] the best value within k grid units, in double or float (relax())
  std::vector<double> stages_double;
  std::vector<float> stages_float;
  std::vector<Small> small;
  std::vector<Big> big;         // the big sizes of every big sample, one after another
  std::vector<size_t> big_end;  // [big sample] one past its last entry of `big`
  std::vector<size_t> big_of;   // [big sample] sample index
  std::vector<double> pt, pv;   // prefix sums of the small sizes' times and values
};

// V over-estimated as in the header; writes the pattern reaching it (coefficient per sample).
// The programme keeps values only (relax(), in Cell) and every stage's table; the pattern is read
// back from the stages (an option was taken where the value changed).
template <class Cell>
double best_pattern(const Jobs& jobs, const std::vector<double>& pi, double T, int grid, std::vector<double>& pattern,
                    PricingScratch& s) {
  constexpr Cell kNoCell = -std::numeric_limits<Cell>::infinity();
  using Small = PricingScratch::Small;
  using Big = PricingScratch::Big;
  const double u = T / grid;
  const size_t G = static_cast<size_t>(grid) + 1;
  std::vector<Cell>& stages = [&]() -> std::vector<Cell>& {
    if constexpr (std::is_same_v<Cell, float>) return s.stages_float;
    else return s.stages_double;
  }();
  if (stages.size() < (jobs.size() + 1) * G) stages.resize((jobs.size() + 1) * G);
  std::fill(stages.begin(), stages.begin() + G, kNoCell);
  stages[0] = 0;
  s.small.clear(), s.big.clear(), s.big_end.clear(), s.big_of.clear();
  int reach = 0;  // the largest state reached so far
  for (size_t i = 0; i < jobs.size(); ++i) {
    if (pi[i] <= 0) continue;
    const size_t first = s.big.size();
    int wmax = 0;
    for (size_t o = 0; o < jobs[i].size(); ++o) {
      const auto& [c, t] = jobs[i][o];
      if (t > T) continue;
      const double v = pi[i] / static_cast<double>(c);
      if (t >= kBig * T) {
        s.big.push_back({o, static_cast<int>(std::floor(t / u)), v});
        wmax = std::max(wmax, s.big.back().w);
      } else {
        s.small.push_back({i, v, t, static_cast<double>(c)});
      }
    }
    if (s.big.size() == first) continue;
    const size_t b = s.big_of.size();
    const Cell* dp = stages.data() + b * G;
    Cell* next = stages.data() + (b + 1) * G;
    // states above `reach` are still unreachable (-inf): copied, never read as a source
    const size_t top = std::min<size_t>(G, static_cast<size_t>(reach) + 1);
    std::copy(dp, dp + top, next);
    std::fill(next + top, next + G, kNoCell);
    for (size_t e = first; e < s.big.size(); ++e) {
      const Big& x = s.big[e];
      const size_t len = std::min(top, G - static_cast<size_t>(x.w));
      relax(next + x.w, dp, len, cell_up<Cell>(x.v));
    }
    reach = std::min(grid, reach + wmax);
    s.big_end.push_back(s.big.size());
    s.big_of.push_back(i);
  }
  const Cell* dp = stages.data() + s.big_of.size() * G;
  std::vector<Small>& small = s.small;
  std::sort(small.begin(), small.end(), [](const Small& a, const Small& b) { return a.v * b.t > b.v * a.t; });
  // fill(cap): the fractional knapsack of the small sizes, as prefix sums
  const size_t m = small.size();
  s.pt.assign(m + 1, 0.0), s.pv.assign(m + 1, 0.0);
  for (size_t q = 0; q < m; ++q) s.pt[q + 1] = s.pt[q] + small[q].t, s.pv[q + 1] = s.pv[q] + small[q].v;
  // q: the last prefix with pt[q] <= cap; cap falls as k grows, so q only moves down
  double V = kNegInf;
  int kb = 0;
  size_t q = m;
  for (int k = 0; k <= grid; ++k) {
    if (dp[k] == kNoCell) continue;
    const double cap = std::max(0.0, T - k * u);
    while (s.pt[q] > cap) --q;
    const double fill = q >= m ? s.pv[q] : s.pv[q] + small[q].v * (cap - s.pt[q]) / small[q].t;
    const double val = static_cast<double>(dp[k]) + fill;
    if (val > V) V = val, kb = k;
  }
  pattern.assign(jobs.size(), 0.0);
  double cap = std::max(0.0, T - kb * u);
  for (size_t e = 0; e < m; ++e) {
    const Small& x = small[e];
    if (cap <= 0) break;
    const double f = std::min(1.0, cap / x.t);
    pattern[x.i] += f / x.c;
    cap -= f * x.t;
  }
  for (size_t b = s.big_of.size(); b-- > 0;) {
    const Cell* before = stages.data() + b * G;
    const Cell after = stages[(b + 1) * G + static_cast<size_t>(kb)];
    if (after == before[kb]) continue;  // sample b not in the pattern
    for (size_t e = b == 0 ? 0 : s.big_end[b - 1]; e < s.big_end[b]; ++e) {
      const Big& x = s.big[e];
      if (x.w <= kb && static_cast<Cell>(before[kb - x.w] + cell_up<Cell>(x.v)) == after) {
        pattern[s.big_of[b]] += 1.0 / static_cast<double>(jobs[s.big_of[b]][x.o].c);
        kb -= x.w;
        break;
      }
    }
  }
  return std::is_same_v<Cell, float> && V > 0 ? V * (1 + kFloatSlack) : V;
}

}  // namespace

double config_lp_raise(const Jobs& all, std::int64_t N, double T0, double step, int steps) {
  // a size with more ranks and no shorter time than a smaller one is dropped: in a pattern it gives
  // less (pi / c) for no less time, so V, the least work and the smallest size meeting T are unchanged;
  // what is left falls in time as c grows, so a sample's longest time is at its smallest size
  Jobs jobs;
  for (const std::vector<SizeOption>& o : all) jobs.push_back(useful_sizes(o));
  const size_t n = jobs.size();
  if (n == 0) return 0;
  const double limit = static_cast<double>(N) * (1 + kRelTol);
  const double own = n <= kOwnWeights ? 0.0 : kOwnShare * T0;
  const int grid = n <= kOwnWeights ? kGrid : kGridShared;
  std::vector<double> least(n);  // [sample] its least work c t over all its sizes
  for (size_t i = 0; i < n; ++i) {
    const SizeOption* lw = least_work_size(jobs[i], std::numeric_limits<double>::infinity());
    least[i] = static_cast<double>(lw->c) * lw->t;
  }
  // Dual-optimal inequalities: sample i's least work is below sample j's exactly when i is the
  // shorter sequence (c t(L, c) grows with L at every c, and so does cp_min), and then i can take
  // j's place in any pattern at j's size, in no more time. So some optimal weights of the full LP
  // rise with least work (Ben Amor, Desrosiers and Valerio de Carvalho 2006, for cutting stock),
  // and the LP here looks only among those: levels in order of least work, pi of level l =
  // sum_{k <= l} x_k / cnt_k with x >= 0 and cnt_k = the samples at levels >= k, so that
  // sum_i pi_i = sum_k x_k. Equal samples share a level. On batches of more than kOwnWeights
  // samples, samples whose longest time (at their smallest size) is below kOwnShare * T0 share a
  // level per bucket of least work kBucket wide (log scale). Any weights give a valid test; these
  // only narrow where the LP looks (what that gained: kOwnShare's comment)
  std::vector<size_t> order(n), level(n);
  for (size_t i = 0; i < n; ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return least[a] < least[b]; });
  std::vector<double> floor_least;  // [level] the least work of its first sample
  const auto bucket = [&](size_t i) { return std::floor(std::log(least[i]) / std::log(1 + kBucket)); };
  for (size_t q = 0; q < n; ++q) {
    const size_t i = order[q];
    const bool shared = jobs[i].front().t < own;  // its longest time: at its smallest size
    bool same = false;
    if (q > 0) {
      const size_t h = order[q - 1];
      same = least[h] == least[i] || (shared && jobs[h].front().t < own && bucket(h) == bucket(i));
    }
    if (!same) floor_least.push_back(least[i]);
    level[i] = floor_least.size() - 1;
  }
  const size_t nv = floor_least.size();
  std::vector<double> cnt(nv, 0.0);  // [level k] samples at levels >= k
  for (size_t i = 0; i < n; ++i) cnt[level[i]] += 1;
  for (size_t k = nv - 1; k-- > 0;) cnt[k] += cnt[k + 1];
  // a pattern (coefficient per sample) as a row over x: sum_{levels l >= k} coefficients / cnt_k
  auto to_row = [&](const std::vector<double>& per_sample) {
    std::vector<double> row(nv, 0.0);
    for (size_t i = 0; i < n; ++i) row[level[i]] += per_sample[i];
    for (size_t k = nv - 1; k-- > 0;) row[k] += row[k + 1];
    for (size_t k = 0; k < nv; ++k) row[k] /= cnt[k];
    return row;
  };
  auto to_pi = [&](const std::vector<double>& x) {
    std::vector<double> pl(nv), pi(n);
    double sum = 0;
    for (size_t k = 0; k < nv; ++k) sum += x[k] / cnt[k], pl[k] = sum;
    for (size_t i = 0; i < n; ++i) pi[i] = pl[level[i]];
    return pi;
  };
  // first rows x_k <= cnt_k N (implied: pi_i <= c_i <= N, the rows of samples alone below), each
  // x_k basic in its own: the tableau starts optimal
  Tableau tab{nv, {}, {}, {}, std::vector<double>(nv, 0.0), 0};
  for (size_t k = 0; k < nv; ++k) tab.add_bound(k, cnt[k] * static_cast<double>(N));
  std::vector<double> smallest(nv, 0);  // [level] the smallest size meeting the current T of any sample in it
  std::vector<double> center(nv, 0.0), query(nv), pattern;
  double proven = 0;
  int added = 0;
  PricingScratch scratch;  // best_pattern's buffers
  PatternPricer exact;
  const bool exact_pricing = n <= kOwnWeights && n <= kExactPerRank * static_cast<size_t>(N);
  double ptime = 0;
  const auto price = [&](const std::vector<double>& pi, double T) {
    if (exact_pricing) return exact.best(jobs, pi, T, pattern, &ptime);
    return (n <= kOwnWeights ? best_pattern<double> : best_pattern<float>)(jobs, pi, T, grid, pattern, scratch);
  };
  for (int k = 1; k <= steps; ++k) {
    const double T = T0 * std::pow(1 + step, k);
    // the pattern of sample i alone at its smallest size c meeting T: pi_i / c <= 1 (again, tighter,
    // when a larger T lets it use a smaller size); samples of one level share pi, so the one with
    // the smallest such size gives the tightest row
    for (size_t i = 0; i < n; ++i) {
      double c = 0;
      for (const auto& [ci, ti] : jobs[i])
        if (ti <= T && (c == 0 || static_cast<double>(ci) < c)) c = static_cast<double>(ci);
      if (c == 0) {  // no size meets T
        proven = T;
        break;
      }
      if (smallest[level[i]] != 0 && smallest[level[i]] <= c) continue;
      smallest[level[i]] = c;
      std::vector<double> alone(n, 0.0);
      alone[i] = 1 / c;
      if (!tab.add(to_row(alone))) return proven;
    }
    if (proven == T) continue;
    if (k == 1) {
      // first patterns: the ranks of a first-fit-decreasing packing of the samples' copies, each
      // at its least-work size meeting T (a sample's copies on distinct ranks)
      std::vector<std::pair<double, size_t>> items;  // (t, sample), c copies each
      std::vector<double> csize(n, 0);
      for (size_t i = 0; i < n; ++i) {
        const SizeOption* lw = least_work_size(jobs[i], T);  // non-null: every sample has a size meeting T here
        const double bt = lw->t, bc = static_cast<double>(lw->c);
        csize[i] = bc;
        for (int q = 0; q < static_cast<int>(bc); ++q) items.push_back({bt, i});
      }
      std::sort(items.begin(), items.end(), [](const auto& x, const auto& y) { return x.first > y.first; });
      std::vector<double> room;
      std::vector<std::vector<double>> bins;
      for (const auto& [t, i] : items) {
        size_t b = 0;
        while (b < bins.size() && (room[b] < t || bins[b][i] > 0)) ++b;
        if (b == bins.size()) room.push_back(T), bins.emplace_back(n, 0.0);
        room[b] -= t;
        bins[b][i] = 1.0 / csize[i];
      }
      for (size_t b = 0; b < bins.size() && b < static_cast<size_t>(N); ++b)
        if (!tab.add(to_row(bins[b]))) return proven;
      // the area weights: pi = least work (of the level's first sample), which rises with the levels
      for (size_t v = 0; v < nv; ++v) center[v] = (floor_least[v] - (v > 0 ? floor_least[v - 1] : 0.0)) * cnt[v];
    }
    // Wentges smoothing: weights are asked at a mix of the best certificate so far (scaled to
    // V = 1) and the LP's weights; the patterns found are added while the LP's weights violate them
    double center_sum = 0;
    {
      const std::vector<double> pi = to_pi(center);
      const double V0 = price(pi, T);
      if (!(V0 > 0)) return proven;
      for (double& x : center) x /= V0;
      for (double x : pi) center_sum += x / V0;
    }
    int cheap = 0;  // greedy patterns added at this T
    for (int round = 0; round < kPerStep && added < kPatterns && center_sum <= limit; ++round) {
      if (tab.value <= limit) return proven;  // even the restricted LP cannot exceed N
      const std::vector<double> x = tab.weights();
      if (exact_pricing && cheap < kCheap) {  // first a greedy pattern the LP's weights violate
        const std::vector<double> pi = to_pi(x);
        exact.greedy(jobs, pi, T, pattern, &ptime);
        const std::vector<double> row = to_row(pattern);
        double viol = 0;
        for (size_t v = 0; v < nv; ++v) viol += row[v] * x[v];
        if (viol > 1 + 1e-6) {  // added without pricing exactly: a round that does not count
          if (!tab.add(row)) return proven;
          ++cheap, --round;
          continue;
        }
      }
      // at the smoothed weights first, then at the LP's own; on batches of more than kOwnWeights
      // samples, where the knapsack is most of the LP's time, the second only when the first cut
      // nothing (megatron_example, 256 samples on 64 ranks, 1000 batches, grid 896: 15% less wall
      // time for the command than both at grid 768, mean / p99 1.0046 / 1.0151 against 1.0047 /
      // 1.0159; on the 64-sample rows it was mixed, +-0.0003 on p99s, so both run there)
      const bool second_if_needed = n > kOwnWeights;
      int cuts = 0;
      for (int attempt = 0; attempt < 2 && center_sum <= limit && !(second_if_needed && cuts > 0); ++attempt) {
        const double alpha = attempt == 0 ? 0.9 : 0.0;
        for (size_t v = 0; v < nv; ++v) query[v] = alpha * center[v] + (1 - alpha) * x[v];
        const std::vector<double> pi = to_pi(query);
        double sum = 0;
        for (double y : pi) sum += y;
        const double V = price(pi, T);
        if (V > 0 && sum / V > center_sum) {
          center_sum = sum / V;
          for (size_t v = 0; v < nv; ++v) center[v] = query[v] / V;
        }
        const std::vector<double> row = to_row(pattern);
        double viol = 0;
        for (size_t v = 0; v < nv; ++v) viol += row[v] * x[v];
        // a pattern that cuts the LP's weights off (and is a real one: the exact pricer's pattern
        // may need more than T when it had to compress its lists)
        if (viol > 1 + kRelTol && (!exact_pricing || ptime <= T)) {
          if (!tab.add(row)) return proven;
          ++cuts, ++added;
        }
      }
      if (center_sum <= limit && cuts == 0) return proven;  // the LP's weights are feasible
    }
    if (center_sum <= limit) return proven;
    proven = T;
  }
  return proven;
}

}  // namespace cplab
