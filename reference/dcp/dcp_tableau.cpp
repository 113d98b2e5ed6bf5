// dcp_tableau.cpp: the rank-pattern LP's dense tableau and its dual simplex (see dcp_tableau.h).
#include "dcp/dcp_tableau.h"
#include "core/avx2_dispatch.h"
#include "core/util.h"

#include <algorithm>
#include <limits>

namespace cplab {

namespace {

// y[k] -= f * x[k], k < n: the row operations, with an AVX2 variant chosen at run time (both round
// alike: the same bound on every machine)
void axpy_generic(double* __restrict y, const double* __restrict x, size_t n, double f) {
  for (size_t k = 0; k < n; ++k) y[k] -= f * x[k];
}
CPLAB_AVX2 void axpy_avx2(double* __restrict y, const double* __restrict x, size_t n, double f) {
  for (size_t k = 0; k < n; ++k) y[k] -= f * x[k];
}
void sub_scaled(std::vector<double>& y, const std::vector<double>& x, double f) {
  cpu_has_avx2() ? axpy_avx2(y.data(), x.data(), x.size(), f) : axpy_generic(y.data(), x.data(), x.size(), f);
}

}  // namespace

void Tableau::append(std::vector<double> row, double b) {
  for (std::vector<double>& r : rows) r.push_back(0.0);
  obj.push_back(0.0);
  row.resize(cols(), 0.0);
  row.back() = 1;
  rows.push_back(std::move(row));
  rhs.push_back(b);
  basic.push_back(cols() - 1);
}

void Tableau::pivot(size_t r, size_t j) {
  std::vector<double>& pr = rows[r];
  const double d = pr[j];
  for (double& x : pr) x /= d;
  rhs[r] /= d;
  for (size_t q = 0; q < rows.size(); ++q) {
    if (q == r || rows[q][j] == 0) continue;
    const double f = rows[q][j];
    sub_scaled(rows[q], pr, f);
    rhs[q] -= f * rhs[r];
  }
  const double f = obj[j];
  sub_scaled(obj, pr, f);
  value -= f * rhs[r];
  basic[r] = j;
}

void Tableau::drop_slack_rows() {
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

void Tableau::add_bound(size_t j, double b) {
  std::vector<double> row(n, 0.0);
  row[j] = 1;
  append(std::move(row), b);
  // the row x_j / b + s = 1 (the form a . x <= 1) pivoted on x_j: x_j + b s = b; then the objective
  // sum x = b - b s + (the others), so the slack's reduced cost is b
  rows.back().back() = b;
  basic.back() = j;
  obj[j] = 0;
  obj.back() = b;
  value += b;
}

bool Tableau::add(const std::vector<double>& a) {
  std::vector<double> row(a.begin(), a.end());
  row.resize(cols(), 0.0);
  double b = 1;
  for (size_t q = 0; q < rows.size(); ++q) {
    const double f = row[basic[q]];
    if (f == 0) continue;
    sub_scaled(row, rows[q], f);
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

std::vector<double> Tableau::weights() const {
  std::vector<double> x(n, 0.0);
  for (size_t q = 0; q < rows.size(); ++q)
    if (basic[q] < n) x[basic[q]] = std::max(0.0, rhs[q]);
  return x;
}

}  // namespace cplab
