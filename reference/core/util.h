// util.h: the few small helpers every part of cplab shares, each defined once here.
//
// What it is: sz (a non-negative 64-bit count as a size_t), num (an integer as text, for messages
// naming a rule), approx (a double as text with 3 significant digits; approx4 with 4), and kRelTol, the relative
// tolerance with which the DCP scheduler, its bounds and their tests compare floating-point costs
// and makespans (two values within kRelTol of each other are equal).
// What it is not: a numeric tolerance for attention results (those are per dtype: docs/numerics.md, cuda/README.md).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>

namespace cplab {

inline constexpr double kRelTol = 1e-9;

inline std::size_t sz(std::int64_t x) { return static_cast<std::size_t>(x); }

inline std::string num(std::int64_t x) { return std::to_string(x); }

inline std::string approx(double x) {
  char b[64];
  std::snprintf(b, sizeof b, "%.3g", x);
  return b;
}

// a double as text with 4 significant digits: how cplab check names a scale or a factor in its
// hypotheses' ids and names ("scale:0.0625")
inline std::string approx4(double x) {
  char b[64];
  std::snprintf(b, sizeof b, "%.4g", x);
  return b;
}

}  // namespace cplab
