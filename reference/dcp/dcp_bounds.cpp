// dcp_bounds.cpp: rigid, area and moldable lower bounds (see dcp_bounds.h).
#include "dcp/dcp_bounds.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "dcp/dcp_bound_huge.h"
#include "dcp/dcp_config_lp.h"
#include "dcp/dcp_schedule.h"

namespace cplab {

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

using Options = std::vector<SizeOption>;  // the sizes a sample may use, with its time on each

// A sample's useful sizes with what the tests read often: its fastest and slowest time, its least
// work. A size with more ranks than another and no shorter time is dropped: every test here is
// monotone (the functions f below are nondecreasing, the knapsack and the area term only gain from
// fewer ranks and less work), so the smaller size always counts at least as much.
struct Job {
  Options o;
  double tmin = kInf, tmax = 0, wmin = kInf;
  explicit Job(const Options& all) : o(useful_sizes(all)) {
    for (const SizeOption& p : o)
      tmin = std::min(tmin, p.t), tmax = std::max(tmax, p.t), wmin = std::min(wmin, static_cast<double>(p.c) * p.t);
  }
};

// Fekete-Schepers dual feasible functions on x = t / T in [0, 1]
double f_U(double x, double eps) { return x > 1 - eps + 1e-12 ? 1.0 : (x < eps - 1e-12 ? 0.0 : x); }
double f_u(double x, int k) {
  const double y = (k + 1) * x;
  return std::fabs(y - std::round(y)) < kRelTol ? x : std::floor(y) / k;
}

// true if no schedule of length <= T exists for these samples (one of the tests fails)
bool too_short(const std::vector<Job>& jobs, const std::vector<Options>& opts, std::int64_t N, double T) {
  const double n = static_cast<double>(N);
  for (const Job& j : jobs)
    if (j.tmin > T) return true;
  // knapsack: dp[k] = least total work with k ranks' worth of samples longer than T/2; a sample
  // whose every size is <= T/2 adds its least work to every state (`base`)
  std::vector<double> dp(static_cast<size_t>(N) + 1, kInf), next;
  dp[0] = 0;
  double base = 0;
  for (const Job& j : jobs) {
    if (j.tmax <= T / 2) {
      base += j.wmin;
      continue;
    }
    double small = kInf;
    for (const SizeOption& p : j.o)
      if (p.t <= T / 2) small = std::min(small, static_cast<double>(p.c) * p.t);
    next.assign(dp.size(), kInf);
    for (size_t k = 0; k < dp.size(); ++k) {
      if (dp[k] == kInf) continue;
      next[k] = std::min(next[k], dp[k] + small);
      for (const SizeOption& p : j.o)
        if (p.t > T / 2 && p.t <= T && k + static_cast<size_t>(p.c) < dp.size())
          next[k + static_cast<size_t>(p.c)] = std::min(next[k + static_cast<size_t>(p.c)], dp[k] + static_cast<double>(p.c) * p.t);
    }
    dp.swap(next);
  }
  if (base + *std::min_element(dp.begin(), dp.end()) > n * T * (1 + 1e-12)) return true;
  // dual feasible functions, each mixed with the area term: sum_i min_c c (lam x + (1 - lam) f(x)) <= N.
  // A sample whose every x is below 0.02 has f(x) = 0 for every f here (taking f_u's value x at
  // x ~ 0 as 0 too only lowers f, which keeps it dual feasible), so it adds lam * (least work) / T.
  static const double kEps[] = {0.02, 0.05, 0.08, 0.1, 0.12, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5};
  static const double kLam[] = {0.0, 0.25, 0.5, 0.75};
  constexpr int nU = static_cast<int>(std::size(kEps)), nf = nU + 6;
  constexpr size_t nl = std::size(kLam);
  double tiny = 0;
  // The other samples, with their sizes meeting T as (x = t / T, c) computed once for every f. A
  // sample all of whose x an f maps to 0 adds min_c c lam x for that f: its `zero` sums, also
  // computed once (the same expression as below with f(x) = 0, so the same sums to the last bit).
  struct Rest {
    size_t begin, end;  // its entries in xc
    double xmin, xmax, zero[nl];
  };
  thread_local std::vector<std::pair<double, double>> xc;
  thread_local std::vector<Rest> rest;
  xc.clear(), rest.clear();
  for (const Job& j : jobs) {
    if (j.tmax < (kEps[0] - 1e-12) * T) {
      tiny += j.wmin / T;
      continue;
    }
    Rest r{xc.size(), 0, kInf, 0, {}};
    std::fill(r.zero, r.zero + nl, kInf);
    for (const SizeOption& p : j.o) {
      if (p.t > T) continue;
      const double x = p.t / T, cd = static_cast<double>(p.c);
      xc.push_back({x, cd});
      r.xmin = std::min(r.xmin, x), r.xmax = std::max(r.xmax, x);
      for (size_t q = 0; q < nl; ++q) r.zero[q] = std::min(r.zero[q], cd * (kLam[q] * x));
    }
    r.end = xc.size();
    rest.push_back(r);
  }
  for (int f = 0; f < nf; ++f) {
    double sum[nl];
    for (size_t q = 0; q < nl; ++q) sum[q] = kLam[q] * tiny;
    const int k = f - nU + 1;  // f_u's k
    for (const Rest& r : rest) {
      // f(x) = 0 for all of the sample's x: f_U below eps - 1e-12; f_u where (k + 1) x lies in
      // [kRelTol, 1 - 2 kRelTol) (f_u's own test, kRelTol from an integer, then cannot return x)
      const bool zero =
          f < nU ? r.xmax < kEps[f] - 1e-12 : (k + 1) * r.xmax < 1 - 2 * kRelTol && (k + 1) * r.xmin >= kRelTol;
      if (zero) {
        for (size_t q = 0; q < nl; ++q) sum[q] += r.zero[q];
        continue;
      }
      double best[nl];
      std::fill(best, best + nl, kInf);
      for (size_t e = r.begin; e < r.end; ++e) {
        const auto [x, cd] = xc[e];
        const double fx = f < nU ? f_U(x, kEps[f]) : f_u(x, k);
        for (size_t q = 0; q < nl; ++q) best[q] = std::min(best[q], cd * (kLam[q] * x + (1 - kLam[q]) * fx));
      }
      for (size_t q = 0; q < nl; ++q) sum[q] += best[q];
    }
    for (size_t q = 0; q < nl; ++q)
      if (sum[q] > n * (1 + kRelTol)) return true;
  }
  // where the samples that need a quarter of the ranks or more run (dcp_bound_huge.h)
  return huge_too_short(opts, N, T);
}

// least T with W(T) <= N T (the area test alone), by bisection; returns a T proven too short
double area_bound(const std::vector<Job>& jobs, std::int64_t N, double lo, double hi) {
  while (hi - lo > 1e-10 * hi) {
    const double mid = 0.5 * (lo + hi);
    double W = 0;
    for (const Job& j : jobs) {
      if (j.tmax <= mid) {
        W += j.wmin;
        continue;
      }
      const SizeOption* lw = least_work_size(j.o, mid);
      W += lw != nullptr ? static_cast<double>(lw->c) * lw->t : kInf;
    }
    if (W <= static_cast<double>(N) * mid) hi = mid;
    else lo = mid;
  }
  return lo;
}

}  // namespace

DcpBound lower_bounds(const std::vector<std::int64_t>& lengths, std::int64_t N, std::int64_t M, const CostModel& cost) {
  check_batch(lengths, N, M);  // the sizes below (cp_min, c * M) stay far from overflow
  DcpBound b;
  const double n = static_cast<double>(N);
  const std::vector<Options> all = size_options(lengths, N, M, cost);
  // rigid
  double full = 0, area = 0, tallest = 0;
  for (const Options& o : all) {
    const double t = o.front().t;
    if (o.front().c == N) full += t;
    else area += static_cast<double>(o.front().c) * t / n, tallest = std::max(tallest, t);
  }
  b.rigid = full + std::max(area, tallest);
  // Samples whose minimum size is already N occupy every rank while they run: they add their
  // time in full, and the others are bounded on their own.
  double whole = 0;
  std::vector<Job> jobs;
  double lo = 0, hi = 0;
  for (const Options& o : all) {
    if (o.front().c == N) {
      whole += o.front().t;
      continue;
    }
    jobs.emplace_back(o);
    lo = std::max(lo, jobs.back().tmin);  // no sample finishes faster than its fastest size
    hi += o.front().t;                    // everything one after another at cp_min is a schedule
  }
  if (jobs.empty()) {
    b.area = b.moldable = whole;
    return b;
  }
  hi = std::max(hi, lo);
  std::vector<Options> opts;  // the jobs' useful sizes, for dcp_bound_huge.h
  for (const Job& j : jobs) opts.push_back(j.o);
  const double a = area_bound(jobs, N, lo, hi);
  // a is proven too short; the sharper tests only raise it. Bracket [l, h] a little above it
  // (widening while h is still proven too short), then bisect to a relative width of kRelTol.
  double l = std::max(lo, a), gap = l / 64, h = std::min(hi, l + gap);
  while (h < hi && too_short(jobs, opts, N, h)) l = h, gap *= 2, h = std::min(hi, l + gap);
  while (h - l > kRelTol * l) {
    const double mid = 0.5 * (l + h);
    if (too_short(jobs, opts, N, mid)) l = mid;
    else h = mid;
  }
  b.area = whole + a;
  b.moldable = whole + l;
  b.whole = whole;
  return b;
}

DcpBound sharpen_bound(const std::vector<std::int64_t>& lengths, std::int64_t N, std::int64_t M, const CostModel& cost,
                       DcpBound b, double known) {
  check_batch(lengths, N, M);
  // the rank-pattern LP (dcp_config_lp.h) raises it by steps of 0.2% while it can prove them,
  // below the known makespan (no bound can pass it)
  const double l = b.moldable - b.whole, room = known - b.whole;
  if (l <= 0 || room <= l * 1.002) return b;
  std::vector<Options> jobs;
  for (Options& o : size_options(lengths, N, M, cost))
    if (o.front().c < N) jobs.push_back(std::move(o));
  const int steps = static_cast<int>(std::floor(std::log(room / l) / std::log(1.002)));
  b.moldable = b.whole + std::max(l, config_lp_raise(jobs, N, l, 0.002, std::min(steps, 50)));
  return b;
}

DcpBound lower_bounds(const std::vector<std::int64_t>& lengths, std::int64_t N, std::int64_t M, const CostModel& cost,
                      double known) {
  return sharpen_bound(lengths, N, M, cost, lower_bounds(lengths, N, M, cost), known);
}

}  // namespace cplab
