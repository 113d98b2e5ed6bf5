// dcp_config_lp.cpp: column generation over rank patterns (see dcp_config_lp.h).
#include "dcp/dcp_config_lp.h"
#include "core/util.h"
#include "dcp/dcp_pattern_price.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>

namespace cplab {

namespace {

constexpr double kNegInf = -std::numeric_limits<double>::infinity();
constexpr int kGrid = 1024;    // big sizes' times rounded down to T / kGrid
constexpr int kGridShared = 512;  // the same on batches of more than kOwnWeights samples (faster; measured
                                  // on megatron_example, 256 samples: mean ratio 1.0084 instead of 1.0083)
constexpr double kBig = 1.0 / 16; // sizes with t >= kBig * T are "big"
constexpr int kPatterns = 3000;  // patterns added at most, over all T
constexpr int kPerStep = 400;   // rounds (up to 2 patterns each) at most for one T
constexpr size_t kOwnWeights = 96;
// on larger batches: samples whose longest time is below kOwnShare * T0 share a weight per bucket of
// least work kBucket wide (log scale). megatron_example, 256 samples on 64 ranks, 1000 batches: one
// shared weight for all of them (issue 24's third pass) 1.0086 / 1.0273 (mean / p99 of cplab / bound),
// the command 4.3 s wall on 2 cores; buckets 7% wide 1.0078 / 1.0235, 7.1 s; 5% wide 1.0064 / 1.0173 on
// 200 batches, 14 s per 1000 (over the 10 s); with a weight per sample (no buckets) the LP
// proves more still (one batch: 1.0178 -> 1.0017) but takes seconds per batch
constexpr double kOwnShare = 0.1, kBucket = 0.07;  // batches up to this size: a weight per sample
// exact pricing (dcp_pattern_price.h) on batches of at most kOwnWeights samples and at most
// kExactPerRank per rank on average: with more samples per rank the patterns hold more of them,
// the pricer's lists grow, and the LP needs more columns (megatron_example, 64 samples on 16 ranks,
// 200 batches: the LP took 7.9 s exact against 0.9 s rounded, for a mean ratio of 1.0018 against
// 1.0023); at 64 ranks exact pricing is what brings code_longtail's ratio under 1.005
constexpr size_t kExactPerRank = 2;
constexpr int kCheap = 4000;  // greedy patterns at most for one T (exact pricing's batches)

using Jobs = std::vector<std::vector<SizeOption>>;

// the restricted dual LP: max sum x subject to rows a . x <= 1, x >= 0, as a dense tableau in
// canonical form (columns: the n variables, then one slack per row; rhs: the rows' values). Rows
// whose slack is basic and positive (constraints not tight) are dropped after each addition.
struct Tableau {
  size_t n;
  std::vector<std::vector<double>> rows;
  std::vector<double> rhs;
  std::vector<size_t> basic;  // [row] its basic column
  std::vector<double> obj;    // reduced costs (optimal when all >= 0)
  double value = 0;           // the objective, sum x
  size_t cols() const { return obj.size(); }
  // a new row with its own slack column (coefficient 1 there), basic in that slack
  void append(std::vector<double> row, double b) {
    for (std::vector<double>& r : rows) r.push_back(0.0);
    obj.push_back(0.0);
    row.resize(cols(), 0.0);
    row.back() = 1;
    rows.push_back(std::move(row));
    rhs.push_back(b);
    basic.push_back(cols() - 1);
  }
  void pivot(size_t r, size_t j) {
    std::vector<double>& pr = rows[r];
    const double d = pr[j];
    for (double& x : pr) x /= d;
    rhs[r] /= d;
    for (size_t q = 0; q < rows.size(); ++q) {
      if (q == r || rows[q][j] == 0) continue;
      const double f = rows[q][j];
      for (size_t k = 0; k < pr.size(); ++k) rows[q][k] -= f * pr[k];
      rhs[q] -= f * rhs[r];
    }
    const double f = obj[j];
    for (size_t k = 0; k < pr.size(); ++k) obj[k] -= f * pr[k];
    value -= f * rhs[r];
    basic[r] = j;
  }
  void drop_slack_rows() {
    for (size_t q = rows.size(); q-- > 0;) {
      const size_t j = basic[q];
      if (j < n || rhs[q] <= 1e-7) continue;
      rows.erase(rows.begin() + static_cast<std::ptrdiff_t>(q));
      rhs.erase(rhs.begin() + static_cast<std::ptrdiff_t>(q));
      basic.erase(basic.begin() + static_cast<std::ptrdiff_t>(q));
      for (std::vector<double>& r : rows) r.erase(r.begin() + static_cast<std::ptrdiff_t>(j));
      obj.erase(obj.begin() + static_cast<std::ptrdiff_t>(j));
      for (size_t& b : basic) b -= b > j ? 1 : 0;
    }
  }
  // adds a . x <= 1 and restores optimality by dual simplex; false on numerical trouble
  bool add(const std::vector<double>& a) {
    std::vector<double> row(a.begin(), a.end());
    row.resize(cols(), 0.0);
    double b = 1;
    for (size_t q = 0; q < rows.size(); ++q) {
      const double f = row[basic[q]];
      if (f == 0) continue;
      for (size_t k = 0; k < row.size(); ++k) row[k] -= f * rows[q][k];
      b -= f * rhs[q];
    }
    append(std::move(row), b);
    // dual simplex: the most negative rhs leaves, the least ratio enters; on degenerate tableaus
    // (many patterns with the same value, e.g. greedy ones) that can cycle, so after kDantzig
    // pivots Bland's rule takes over (the row whose basic column comes first, the first column
    // among the least ratios), which terminates
    constexpr int kDantzig = 50, kPivots = 5000;
    for (int it = 0; it < kPivots; ++it) {
      const bool bland = it >= kDantzig;
      size_t r = rows.size();
      double worst = -kRelTol;
      for (size_t q = 0; q < rows.size(); ++q)
        if (rhs[q] < -kRelTol && (bland ? (r == rows.size() || basic[q] < basic[r]) : rhs[q] < worst)) worst = rhs[q], r = q;
      if (r == rows.size()) {
        drop_slack_rows();
        return true;
      }
      size_t enter = cols();
      double ratio = std::numeric_limits<double>::infinity();
      for (size_t j = 0; j < cols(); ++j)
        if (rows[r][j] < -1e-12 && std::max(obj[j], 0.0) / -rows[r][j] < ratio) ratio = std::max(obj[j], 0.0) / -rows[r][j], enter = j;
      if (enter == cols()) return false;
      if (bland)  // the first column whose ratio ties the least
        for (size_t j = 0; j < enter; ++j)
          if (rows[r][j] < -1e-12 && std::max(obj[j], 0.0) / -rows[r][j] <= ratio * (1 + 1e-12) + 1e-15) {
            enter = j;
            break;
          }
      pivot(r, enter);
    }
    return false;
  }
  std::vector<double> weights() const {
    std::vector<double> x(n, 0.0);
    for (size_t q = 0; q < rows.size(); ++q)
      if (basic[q] < n) x[basic[q]] = std::max(0.0, rhs[q]);
    return x;
  }
};

// V over-estimated as in the header; writes the pattern reaching it (coefficient per sample); adds
// the dynamic programme's cells (one per state and big size) to `cells`.
// The programme keeps values only (a branch-free max the compiler vectorizes) and every stage's
// table; the pattern is read back from the stages (an option was taken where the value changed).
// `stages` is the caller's buffer, kept between calls (a fresh table each call costs page faults)
double best_pattern(const Jobs& jobs, const std::vector<double>& pi, double T, int grid, std::vector<double>& pattern,
                    std::int64_t& cells, std::vector<double>& stages) {
  const double u = T / grid;
  const size_t G = static_cast<size_t>(grid) + 1;
  struct Small {
    size_t i;
    double v, t, c;
  };
  struct Big {
    size_t o;
    int w;
    double v;
  };
  std::vector<Small> small;
  // [big sample + 1][k] the best value within k grid units
  if (stages.size() < (jobs.size() + 1) * G) stages.resize((jobs.size() + 1) * G);
  std::fill(stages.begin(), stages.begin() + G, kNegInf);
  stages[0] = 0;
  int reach = 0;  // the largest state reached so far
  std::vector<std::vector<Big>> big_opts;    // [big sample] its big sizes
  std::vector<size_t> big_of;                // [big sample] sample index
  for (size_t i = 0; i < jobs.size(); ++i) {
    if (pi[i] <= 0) continue;
    std::vector<Big> opts;
    for (size_t o = 0; o < jobs[i].size(); ++o) {
      const auto& [c, t] = jobs[i][o];
      if (t > T) continue;
      if (t >= kBig * T) opts.push_back({o, static_cast<int>(std::floor(t / u)), pi[i] / static_cast<double>(c)});
      else small.push_back({i, pi[i] / static_cast<double>(c), t, static_cast<double>(c)});
    }
    if (opts.empty()) continue;
    const size_t b = big_of.size();
    const double* dp = stages.data() + b * G;
    double* next = stages.data() + (b + 1) * G;
    // states above `reach` are still unreachable (-inf): copied, never read as a source
    int wmax = 0;
    for (const Big& x : opts) wmax = std::max(wmax, x.w);
    const size_t top = std::min<size_t>(G, static_cast<size_t>(reach) + 1);
    std::copy(dp, dp + top, next);
    std::fill(next + top, next + G, kNegInf);
    for (const Big& x : opts) {
      const size_t len = std::min(top, G - static_cast<size_t>(x.w));
      cells += static_cast<std::int64_t>(len);
      const double* from = dp;
      double* to = next + x.w;
      for (size_t k = 0; k < len; ++k) to[k] = std::max(to[k], from[k] + x.v);
    }
    reach = std::min(grid, reach + wmax);
    big_opts.push_back(std::move(opts));
    big_of.push_back(i);
  }
  const double* dp = stages.data() + big_of.size() * G;
  std::sort(small.begin(), small.end(), [](const Small& a, const Small& b) { return a.v * b.t > b.v * a.t; });
  // fill(cap): the fractional knapsack of the small sizes, as prefix sums
  std::vector<double> pt(small.size() + 1, 0.0), pv(small.size() + 1, 0.0);
  for (size_t q = 0; q < small.size(); ++q) pt[q + 1] = pt[q] + small[q].t, pv[q + 1] = pv[q] + small[q].v;
  auto fill = [&](double cap) {
    const size_t q = static_cast<size_t>(std::upper_bound(pt.begin(), pt.end(), cap) - pt.begin()) - 1;
    return q >= small.size() ? pv[q] : pv[q] + small[q].v * (cap - pt[q]) / small[q].t;
  };
  double V = kNegInf;
  int kb = 0;
  for (int k = 0; k <= grid; ++k) {
    if (dp[k] == kNegInf) continue;
    const double val = dp[k] + fill(std::max(0.0, T - k * u));
    if (val > V) V = val, kb = k;
  }
  pattern.assign(jobs.size(), 0.0);
  double cap = std::max(0.0, T - kb * u);
  for (const Small& x : small) {
    if (cap <= 0) break;
    const double f = std::min(1.0, cap / x.t);
    pattern[x.i] += f / x.c;
    cap -= f * x.t;
  }
  for (size_t b = big_of.size(); b-- > 0;) {
    const double* before = stages.data() + b * G;
    const double after = stages[(b + 1) * G + static_cast<size_t>(kb)];
    if (after == before[kb]) continue;  // sample b not in the pattern
    for (const Big& x : big_opts[b])
      if (x.w <= kb && before[kb - x.w] + x.v == after) {
        pattern[big_of[b]] += 1.0 / static_cast<double>(jobs[big_of[b]][x.o].c);
        kb -= x.w;
        break;
      }
  }
  return V;
}

}  // namespace

double config_lp_raise(const Jobs& all, std::int64_t N, double T0, double step, int steps) {
  // a size with more ranks and no shorter time than a smaller one is dropped: in a pattern it gives
  // less (pi / c) for no less time, so V, the least work and the smallest size meeting T are unchanged;
  // what is left falls in time as c grows, so a sample's longest time is at its smallest size
  Jobs jobs(all.size());
  for (size_t i = 0; i < all.size(); ++i)
    for (const SizeOption& o : all[i])  // ascending c
      if (jobs[i].empty() || o.t < jobs[i].back().t) jobs[i].push_back(o);
  const size_t n = jobs.size();
  const double limit = static_cast<double>(N) * (1 + kRelTol);
  // LP variables: on batches of at most kOwnWeights samples one weight per sample; on larger ones
  // one per sample whose longest time (at its smallest size) is at least kOwnShare * T0, and the
  // others share one weight per bucket of least work w (buckets kBucket wide on a log scale):
  // pi_i = x_v * w_i. Fewer variables make a faster LP, and any weights are valid. One weight for all
  // of them (pi proportional to w, the area bound's weights) was what issue 24's third pass had:
  // the LP's best weights are not proportional to w (the 128-token samples get about half the weight
  // per unit of work of the 1K ones: they fill gaps), and with one shared weight the LP proved
  // nothing on most 256-sample megatron_example batches (see kBucket)
  std::vector<size_t> var(n);      // [sample] its variable
  std::vector<double> scale(n, 1.0);  // [sample] pi_i = x_var * scale
  const double own = n <= kOwnWeights ? 0.0 : kOwnShare * T0;
  const int grid = n <= kOwnWeights ? kGrid : kGridShared;
  size_t nv = 0;
  std::map<long, size_t> bucket;  // [floor(log w / log(1 + kBucket))] its shared variable
  for (size_t i = 0; i < n; ++i) {
    if (jobs[i].front().t >= own) {  // its longest time: at its smallest size
      var[i] = nv++;
      continue;
    }
    double work = std::numeric_limits<double>::infinity();
    for (const auto& [c, t] : jobs[i]) work = std::min(work, static_cast<double>(c) * t);
    const auto key = static_cast<long>(std::floor(std::log(work) / std::log(1 + kBucket)));
    auto it = bucket.find(key);
    if (it == bucket.end()) it = bucket.emplace(key, nv++).first;
    var[i] = it->second, scale[i] = work;
  }
  Tableau tab{nv, {}, {}, {}, std::vector<double>(nv, 0.0), 0};
  auto to_row = [&](const std::vector<double>& per_sample) {
    std::vector<double> row(nv, 0.0);
    for (size_t i = 0; i < n; ++i) row[var[i]] += per_sample[i] * scale[i];
    return row;
  };
  auto to_pi = [&](const std::vector<double>& x) {
    std::vector<double> pi(n);
    for (size_t i = 0; i < n; ++i) pi[i] = x[var[i]] * scale[i];
    return pi;
  };
  std::vector<double> smallest(n, 0);  // [sample] smallest size meeting the current T
  std::vector<char> has_row(nv, 0);
  std::vector<double> center(nv, 0.0), query(nv), pattern;
  double proven = 0;
  int added = 0;
  std::int64_t cells = 0;
  std::vector<double> stages;  // best_pattern's tables
  PatternPricer exact;
  const bool exact_pricing = n <= kOwnWeights && n <= kExactPerRank * static_cast<size_t>(N);
  double ptime = 0;
  const auto price = [&](const std::vector<double>& pi, double T) {
    return exact_pricing ? exact.best(jobs, pi, T, pattern, &ptime) : best_pattern(jobs, pi, T, grid, pattern, cells, stages);
  };
  for (int k = 1; k <= steps; ++k) {
    const double T = T0 * std::pow(1 + step, k);
    // the pattern of sample i alone at its smallest size c meeting T: pi_i / c <= 1 (again, tighter,
    // when a larger T lets it use a smaller size)
    for (size_t i = 0; i < n; ++i) {
      double c = 0;
      for (const auto& [ci, ti] : jobs[i])
        if (ti <= T && (c == 0 || static_cast<double>(ci) < c)) c = static_cast<double>(ci);
      if (c == 0) {  // no size meets T
        proven = T;
        break;
      }
      if (smallest[i] == c) continue;
      smallest[i] = c;
      const double coef = scale[i] / c;  // row: coef * x_var <= 1
      if (!has_row[var[i]]) {  // first row of this variable: it is basic there, solved as it stands
        // x_v + s / coef = 1 / coef with x_v basic; objective x_v = 1 / coef - s / coef
        std::vector<double> row(nv, 0.0);
        row[var[i]] = 1;
        tab.append(std::move(row), 1 / coef);
        tab.rows.back().back() = 1 / coef;
        tab.basic.back() = var[i];
        tab.obj[var[i]] = 0;
        tab.obj.back() = 1 / coef;
        tab.value += 1 / coef;
        has_row[var[i]] = 1;
      } else {
        std::vector<double> a(nv, 0.0);
        a[var[i]] = coef;
        if (!tab.add(a)) return proven;
      }
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
      for (size_t i = 0; i < n; ++i) {  // the area weights: pi_i = least c t
        double w = std::numeric_limits<double>::infinity();
        for (const auto& [ci, ti] : jobs[i]) w = std::min(w, static_cast<double>(ci) * ti);
        center[var[i]] = scale[i] != 1.0 ? 1.0 : w;  // shared: x = 1 gives pi = w
      }
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
      int cuts = 0;
      for (int attempt = 0; attempt < 2 && center_sum <= limit; ++attempt) {
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
