// dcp_batches.cpp: length distributions, batch sampling, static CP (see dcp_batches.h).
#include "dcp/dcp_batches.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <numeric>

#include "core/checked.h"
#include "core/error.h"

namespace cplab {

LengthDist read_length_dist(const std::string& path) {
  std::error_code ec;
  require(std::filesystem::exists(path, ec), path + ": cannot open the distribution file");
  const std::string text = read_text_file(path, "length distribution", kMaxDistFileBytes);
  const std::string see = "; see data/README.md";
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    throw Error(path + ": not a cplab length distribution (" + e.what() + ")" + see);
  }
  const std::string shape = "a JSON object with name, min, max and lognormal_mixture";
  require(j.is_object(), path + ": not a cplab length distribution (" + shape + ")" + see);
  for (const char* key : {"name", "min", "max", "lognormal_mixture"})
    require(j.contains(key), path + ": not a cplab length distribution (it has no field '" + key + "')" + see);
  LengthDist d;
  require(j["name"].is_string(), path + ": name is a JSON " + j["name"].type_name() + ", not a string");
  d.name = j["name"].get<std::string>();
  if (j.contains("description")) {
    require(j["description"].is_string(),
            path + ": description is a JSON " + j["description"].type_name() + ", not a string");
    d.description = j["description"].get<std::string>();
  }
  d.min = json_int(j["min"], path + ": min", 1, kMaxDistLength);
  d.max = json_int(j["max"], path + ": max", 1, kMaxDistLength);
  if (j.contains("batch_size")) d.batch_size = json_int(j["batch_size"], path + ": batch_size", 1, kMaxBatchSamples);
  const nlohmann::json& parts = j["lognormal_mixture"];
  require(parts.is_array(), path + ": lognormal_mixture is a JSON " + std::string(parts.type_name()) +
                                ", not an array of {weight, median, sigma}");
  require(!parts.empty(), path + ": lognormal_mixture is empty");
  require(parts.size() <= kMaxDistParts, path + ": lognormal_mixture has " + std::to_string(parts.size()) +
                                             " components, more than " + std::to_string(kMaxDistParts));
  for (size_t k = 0; k < parts.size(); ++k) {
    const nlohmann::json& p = parts[k];
    const std::string at = path + ": lognormal_mixture[" + std::to_string(k) + "]";
    require(p.is_object() && p.contains("weight") && p.contains("median") && p.contains("sigma"),
            at + " is not an object with weight, median and sigma");
    d.parts.push_back({json_real(p["weight"], at + ".weight", -kMaxDistWeight, kMaxDistWeight),
                       json_real(p["median"], at + ".median", 0, kMaxDistMedian),
                       json_real(p["sigma"], at + ".sigma", 0, kMaxDistSigma)});
  }
  require(d.max >= d.min, path + ": needs 1 <= min <= max");
  for (const auto& p : d.parts)
    require(p.weight > 0 && p.median > 0 && p.sigma >= 0, path + ": every component needs weight > 0, median > 0, sigma >= 0");
  return d;
}

std::vector<std::int64_t> sample_batch(const LengthDist& d, std::int64_t count, std::mt19937_64& rng) {
  require(count >= 1 && count <= kMaxBatchSamples,
          "batch size " + std::to_string(count) + " must be in [1, " + std::to_string(kMaxBatchSamples) + "]");
  std::vector<double> w;
  for (const auto& p : d.parts) w.push_back(p.weight);
  std::discrete_distribution<size_t> pick(w.begin(), w.end());
  std::normal_distribution<double> z(0.0, 1.0);
  std::vector<std::int64_t> out;
  out.reserve(static_cast<size_t>(count));
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
