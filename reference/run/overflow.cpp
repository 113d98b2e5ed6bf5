// overflow.cpp: the range checks of a run (see overflow.h).
#include "run/overflow.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>

#include "core/error.h"

namespace cplab {

namespace {

std::string g(double x) {
  char b[32];
  std::snprintf(b, sizeof b, "%g", x);
  return b;
}

double max_abs(const Tensor3<double>& x) {
  double m = 0;
  for (double v : x.data) m = std::max(m, std::abs(v));
  return m;
}

std::string what_value(double x) { return std::isnan(x) ? "NaN" : (x > 0 ? "+inf" : "-inf"); }

}  // namespace

std::optional<std::int64_t> first_non_finite(const double* x, std::int64_t n) {
  for (std::int64_t i = 0; i < n; ++i)
    if (!std::isfinite(x[i])) return i;
  return std::nullopt;
}

void check_float_range(const Inputs& in) {
  constexpr double fmax = std::numeric_limits<float>::max();
  const std::pair<const char*, const Tensor3<double>*> tensors[] = {{"Q", &in.q}, {"K", &in.k}, {"V", &in.v}, {"dO", &in.dout}};
  for (const auto& [name, x] : tensors)
    for (std::size_t i = 0; i < x->data.size(); ++i)
      if (!(std::abs(x->data[i]) <= fmax))  // the message is built for the first bad element only
        throw Error(std::string(name) + " element " + std::to_string(i) + " is " + g(x->data[i]) +
                    ", outside float's range (|x| <= " + g(fmax) + "): use --dtype double or scale the inputs down");
}

void check_reference_finite(const RunSpec& s, const Inputs& in, const ReferenceResult& ref) {
  const Packing& pk = s.cp.packing();
  // the first place it fails, as "its LSE is +inf at head 2, token 5"
  std::string where;
  const Rows<double>& lse = *ref.lse;
  for (index_t t = 0; t < lse.cols() && where.empty(); ++t) {
    if (!pk.real(t)) continue;  // a padding token's LSE is -inf by definition
    for (index_t i = 0; i < lse.rows(); ++i)
      if (!std::isfinite(lse(i, t))) {
        where = "its LSE is " + what_value(lse(i, t)) + " at head " + std::to_string(i) + ", token " + std::to_string(t);
        break;
      }
  }
  const std::pair<const char*, const Tensor3<double>*> tensors[] = {{"O", ref.o}, {"dQ", ref.dq}, {"dK", ref.dk}, {"dV", ref.dv}};
  for (const auto& [name, x] : tensors) {
    if (!where.empty() || x == nullptr) continue;
    if (const auto i = first_non_finite(x->data.data(), static_cast<std::int64_t>(x->data.size()))) {
      const std::int64_t per_token = x->h * x->d;
      where = std::string("its ") + name + " is " + what_value(x->data[static_cast<std::size_t>(*i)]) + " at token " +
              std::to_string(*i / per_token) + ", head " + std::to_string(*i % per_token / x->d);
    }
  }
  if (where.empty()) return;
  throw Error("the dense reference overflows: " + where + " (scale " + g(s.cp.scale()) + ", largest |Q| " + g(max_abs(in.q)) +
              ", |K| " + g(max_abs(in.k)) + ", |V| " + g(max_abs(in.v)) +
              (s.backward ? ", |dO| " + g(max_abs(in.dout)) : std::string()) +
              "): these inputs are outside the range the CPU reference can check; scale them down");
}

}  // namespace cplab
