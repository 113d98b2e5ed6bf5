// dcp_cost.cpp: cp_min and the two DCP cost models (see dcp_cost.h).
#include "dcp/dcp_cost.h"

#include <algorithm>
#include <cstdio>
#include <sstream>

#include "core/error.h"

namespace cplab {

std::int64_t cp_min(std::int64_t L, std::int64_t M) {
  std::int64_t c = 1;
  while (c * M < L) c *= 2;
  return c;
}

double CostModel::time(std::int64_t L, std::int64_t c) const {
  const double lk = static_cast<double>(L) / 1024.0, cd = static_cast<double>(c);
  if (kind == Kind::l2) return lk * lk / cd;
  const double compute = (a * lk + lk * lk) / cd;
  const double exposed = std::max(0.0, beta * lk / cd - lk * lk / (cd * cd));
  return compute + (cd - 1.0) * (alpha + exposed) + (c > 1 ? o : 0.0);
}

std::string CostModel::describe() const {
  if (kind == Kind::l2) return "l2: t(L, c) = (L/1024)^2 / c";
  char b[256];
  std::snprintf(b, sizeof b,
                "overhead: t(L, c) = (a*Lk + Lk^2)/c + (c-1)*(alpha + max(0, beta*Lk/c - Lk^2/c^2)) + o*[c>1], "
                "Lk = L/1024, a=%g alpha=%g beta=%g o=%g",
                a, alpha, beta, o);
  return b;
}

CostModel parse_cost(const std::string& kind, const std::string& params) {
  CostModel m;
  if (kind == "l2") m.kind = CostModel::Kind::l2;
  else if (kind == "overhead") m.kind = CostModel::Kind::overhead;
  else throw Error("cost '" + kind + "' is not one of: l2, overhead");
  std::stringstream ss(params);
  std::string item;
  while (std::getline(ss, item, ',')) {
    if (item.empty()) continue;
    const size_t eq = item.find('=');
    require(eq != std::string::npos, "cost parameter '" + item + "' is not NAME=VALUE");
    const std::string name = item.substr(0, eq), value = item.substr(eq + 1);
    double v = 0;
    size_t used = 0;
    try {
      v = std::stod(value, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    require(used == value.size() && !value.empty() && v >= 0 && v < 1e12,
            "cost parameter " + name + " = '" + value + "' is not a number in [0, 1e12)");
    if (name == "a") m.a = v;
    else if (name == "alpha") m.alpha = v;
    else if (name == "beta") m.beta = v;
    else if (name == "o") m.o = v;
    else throw Error("cost parameter '" + name + "' is not one of: a, alpha, beta, o");
  }
  require(params.empty() || m.kind == CostModel::Kind::overhead, "--cost-param only applies to --cost overhead");
  return m;
}

std::vector<std::vector<SizeOption>> size_options(const std::vector<std::int64_t>& lengths, std::int64_t N,
                                                  std::int64_t M, const CostModel& cost) {
  std::vector<std::vector<SizeOption>> out(lengths.size());
  for (size_t i = 0; i < lengths.size(); ++i)
    for (std::int64_t c = cp_min(lengths[i], M); c <= N; c *= 2) out[i].push_back({c, cost.time(lengths[i], c)});
  return out;
}

const SizeOption* least_work_size(const std::vector<SizeOption>& sizes, double T) {
  const SizeOption* best = nullptr;
  for (const SizeOption& o : sizes)
    if (o.t <= T && (best == nullptr || static_cast<double>(o.c) * o.t < static_cast<double>(best->c) * best->t)) best = &o;
  return best;
}

std::vector<SizeOption> useful_sizes(const std::vector<SizeOption>& sizes, double T) {
  std::vector<SizeOption> out;
  for (const SizeOption& o : sizes)  // ascending c
    if (o.t <= T && (out.empty() || o.t < out.back().t)) out.push_back(o);
  return out;
}

}  // namespace cplab
