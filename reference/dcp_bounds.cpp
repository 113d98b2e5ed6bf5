// dcp_bounds.cpp: rigid, area and moldable lower bounds (see dcp_bounds.h).
#include "dcp_bounds.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "dcp_config_lp.h"

namespace cplab {

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

struct Option {
  std::int64_t c;
  double t;
};
using Options = std::vector<Option>;  // the sizes a sample may use, with its time on each

// Fekete-Schepers dual feasible functions on x = t / T in [0, 1]
double f_U(double x, double eps) { return x > 1 - eps + 1e-12 ? 1.0 : (x < eps - 1e-12 ? 0.0 : x); }
double f_u(double x, int k) {
  const double y = (k + 1) * x;
  return std::fabs(y - std::round(y)) < 1e-9 ? x : std::floor(y) / k;
}

// true if no schedule of length <= T exists for these samples (one of the tests fails)
bool too_short(const std::vector<Options>& jobs, std::int64_t N, double T) {
  const double n = static_cast<double>(N);
  for (const Options& o : jobs) {
    bool any = false;
    for (const Option& p : o) any = any || p.t <= T;
    if (!any) return true;
  }
  // knapsack: dp[k] = least total work with k ranks' worth of samples longer than T/2
  std::vector<double> dp(static_cast<size_t>(N) + 1, kInf), next;
  dp[0] = 0;
  for (const Options& o : jobs) {
    double small = kInf;
    for (const Option& p : o)
      if (p.t <= T / 2) small = std::min(small, static_cast<double>(p.c) * p.t);
    next.assign(dp.size(), kInf);
    for (size_t k = 0; k < dp.size(); ++k) {
      if (dp[k] == kInf) continue;
      next[k] = std::min(next[k], dp[k] + small);
      for (const Option& p : o)
        if (p.t > T / 2 && p.t <= T && k + static_cast<size_t>(p.c) < dp.size())
          next[k + static_cast<size_t>(p.c)] = std::min(next[k + static_cast<size_t>(p.c)], dp[k] + static_cast<double>(p.c) * p.t);
    }
    dp.swap(next);
  }
  if (*std::min_element(dp.begin(), dp.end()) > n * T * (1 + 1e-12)) return true;
  // dual feasible functions, each mixed with the area term
  static const double kEps[] = {0.02, 0.05, 0.08, 0.1, 0.12, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5};
  static const double kLam[] = {0.0, 0.25, 0.5, 0.75};
  const int nf = static_cast<int>(std::size(kEps)) + 6;
  for (int f = 0; f < nf; ++f) {
    auto fx = [&](double x) { return f < static_cast<int>(std::size(kEps)) ? f_U(x, kEps[f]) : f_u(x, f - static_cast<int>(std::size(kEps)) + 1); };
    for (double lam : kLam) {
      double sum = 0;
      for (const Options& o : jobs) {
        double best = kInf;
        for (const Option& p : o)
          if (p.t <= T) best = std::min(best, static_cast<double>(p.c) * (lam * p.t / T + (1 - lam) * fx(p.t / T)));
        sum += best;
      }
      if (sum > n * (1 + 1e-9)) return true;
    }
  }
  return false;
}

// least T with W(T) <= N T (the area test alone), by bisection; returns a T proven too short
double area_bound(const std::vector<Options>& jobs, std::int64_t N, double lo, double hi) {
  for (int it = 0; it < 100; ++it) {
    const double mid = 0.5 * (lo + hi);
    double W = 0;
    for (const Options& o : jobs) {
      double best = kInf;
      for (const Option& p : o)
        if (p.t <= mid) best = std::min(best, static_cast<double>(p.c) * p.t);
      W += best;
    }
    if (W <= static_cast<double>(N) * mid) hi = mid;
    else lo = mid;
  }
  return lo;
}

}  // namespace

DcpBound lower_bounds(const std::vector<std::int64_t>& lengths, std::int64_t N, std::int64_t M, const CostModel& cost,
                      double known) {
  DcpBound b;
  const double n = static_cast<double>(N);
  // rigid
  double full = 0, area = 0, tallest = 0;
  for (std::int64_t L : lengths) {
    const std::int64_t c = cp_min(L, M);
    const double t = cost.time(L, c);
    if (c == N) full += t;
    else area += static_cast<double>(c) * t / n, tallest = std::max(tallest, t);
  }
  b.rigid = full + std::max(area, tallest);
  // Samples whose minimum size is already N occupy every rank while they run: they add their
  // time in full, and the others are bounded on their own.
  double whole = 0;
  std::vector<Options> jobs;
  double lo = 0, hi = 0;
  for (std::int64_t L : lengths) {
    if (cp_min(L, M) == N) {
      whole += cost.time(L, N);
      continue;
    }
    Options o;
    double tmin = kInf;
    for (std::int64_t c = cp_min(L, M); c <= N; c *= 2) o.push_back({c, cost.time(L, c)}), tmin = std::min(tmin, o.back().t);
    lo = std::max(lo, tmin);  // no sample finishes faster than its fastest size
    hi += o.front().t;        // everything one after another at cp_min is a schedule
    jobs.push_back(std::move(o));
  }
  if (jobs.empty()) {
    b.area = b.moldable = whole;
    return b;
  }
  hi = std::max(hi, lo);
  const double a = area_bound(jobs, N, lo, hi);
  double l = std::max(lo, a), h = hi;  // a is proven too short; the sharper tests only raise it
  for (int it = 0; it < 45; ++it) {
    const double mid = 0.5 * (l + h);
    if (too_short(jobs, N, mid)) l = mid;
    else h = mid;
  }
  // the rank-pattern LP (dcp_config_lp.h) raises it by steps of 0.2% while it can prove them,
  // below the known makespan (no bound can pass it)
  const double room = known - whole;
  if (room > l * 1.002) {
    std::vector<std::vector<std::pair<std::int64_t, double>>> pj;
    for (const Options& o : jobs) {
      pj.emplace_back();
      for (const Option& p : o) pj.back().push_back({p.c, p.t});
    }
    const int steps = static_cast<int>(std::floor(std::log(room / l) / std::log(1.002)));
    l = std::max(l, config_lp_raise(pj, N, l, 0.002, std::min(steps, 50)));
  }
  b.area = whole + a;
  b.moldable = whole + l;
  return b;
}

}  // namespace cplab
