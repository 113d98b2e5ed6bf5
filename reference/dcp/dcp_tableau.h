// dcp_tableau.h: the dense simplex tableau of the rank-pattern LP (dcp_config_lp.h).
//
// What it is: the restricted dual LP max sum x subject to rows a . x <= 1, x >= 0, in canonical
// form (columns: the n variables, then one slack per row; rhs: the rows' values), to which rows
// (patterns) are added one at a time, optimality being restored by the dual simplex. Rows whose
// slack is basic and positive (constraints no longer tight) are dropped after each addition.
// What it is not: the column generation that decides which rows to add (dcp_config_lp.cpp), or a
// general LP solver (no bounds, no equality rows, no refactorization).
#pragma once
#include <cstddef>
#include <vector>

namespace cplab {

struct Tableau {
  size_t n;                                // variables
  std::vector<std::vector<double>> rows;   // [row][column]
  std::vector<double> rhs;                 // [row]
  std::vector<size_t> basic;               // [row] its basic column
  std::vector<double> obj;                 // [column] reduced costs (optimal when all >= 0)
  double value = 0;                        // the objective, sum x
  size_t cols() const { return obj.size(); }
  // a new row with its own slack column (coefficient 1 there), basic in that slack
  void append(std::vector<double> row, double b);
  void pivot(size_t r, size_t j);
  void drop_slack_rows();
  // x_j <= b (b > 0) as a row with x_j basic in it, for a variable in no row yet: the tableau stays
  // optimal (x_j = b, the objective grows by b), no pivot needed; how the LP starts bounded
  void add_bound(size_t j, double b);
  // adds a . x <= 1 and restores optimality by dual simplex; false on numerical trouble
  bool add(const std::vector<double>& a);
  // the current x (basic variables at their rhs, the others 0)
  std::vector<double> weights() const;
};

}  // namespace cplab
