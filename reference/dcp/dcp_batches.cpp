// dcp_batches.cpp: length distributions, batch sampling, static CP (see dcp_batches.h).
#include "dcp/dcp_batches.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <numeric>

#include "core/error.h"

namespace cplab {

LengthDist read_length_dist(const std::string& path) {
  std::ifstream f(path);
  require(static_cast<bool>(f), path + ": cannot open the distribution file");
  LengthDist d;
  try {
    const nlohmann::json j = nlohmann::json::parse(f);
    d.name = j.at("name").get<std::string>();
    d.description = j.value("description", "");
    d.min = j.at("min").get<std::int64_t>();
    d.max = j.at("max").get<std::int64_t>();
    d.batch_size = j.value("batch_size", std::int64_t{64});
    for (const auto& p : j.at("lognormal_mixture"))
      d.parts.push_back({p.at("weight").get<double>(), p.at("median").get<double>(), p.at("sigma").get<double>()});
  } catch (const nlohmann::json::exception& e) {
    throw Error(path + ": not a cplab length distribution (" + e.what() + "); see data/README.md");
  }
  require(!d.parts.empty(), path + ": lognormal_mixture is empty");
  require(d.min >= 1 && d.max >= d.min, path + ": needs 1 <= min <= max");
  require(d.batch_size >= 1, path + ": batch_size must be >= 1");
  for (const auto& p : d.parts)
    require(p.weight > 0 && p.median > 0 && p.sigma >= 0, path + ": every component needs weight > 0, median > 0, sigma >= 0");
  return d;
}

std::vector<std::int64_t> sample_batch(const LengthDist& d, std::int64_t count, std::mt19937_64& rng) {
  std::vector<double> w;
  for (const auto& p : d.parts) w.push_back(p.weight);
  std::discrete_distribution<size_t> pick(w.begin(), w.end());
  std::normal_distribution<double> z(0.0, 1.0);
  std::vector<std::int64_t> out;
  for (std::int64_t i = 0; i < count; ++i) {
    const auto& p = d.parts[pick(rng)];
    const double L = std::exp(std::log(p.median) + p.sigma * z(rng));
    out.push_back(std::clamp<std::int64_t>(static_cast<std::int64_t>(std::llround(std::min(L, 1e15))), d.min, d.max));
  }
  return out;
}

DcpSchedule static_cp_schedule(const std::vector<std::int64_t>& lengths, std::int64_t N, std::int64_t M,
                               const CostModel& cost) {
  check_batch(lengths, N, M);
  std::int64_t c = 1;
  for (std::int64_t L : lengths) c = std::max(c, cp_min(L, M));
  std::vector<int> order(lengths.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return lengths[static_cast<size_t>(a)] > lengths[static_cast<size_t>(b)]; });
  DcpRound round;
  for (std::int64_t s = 0; s < N; s += c) round.groups.push_back(DcpGroup{s, c, {}, 0});
  for (int i : order) {  // longest first onto the least-loaded replica
    auto g = std::min_element(round.groups.begin(), round.groups.end(), [](const DcpGroup& a, const DcpGroup& b) { return a.load < b.load; });
    g->samples.push_back(i);
    g->load += cost.time(lengths[static_cast<size_t>(i)], c);
  }
  DcpSchedule s;
  s.ranks = N;
  round.groups.erase(std::remove_if(round.groups.begin(), round.groups.end(), [](const DcpGroup& g) { return g.samples.empty(); }), round.groups.end());
  s.rounds.push_back(std::move(round));
  evaluate(s, lengths, cost);
  return s;
}

}  // namespace cplab
