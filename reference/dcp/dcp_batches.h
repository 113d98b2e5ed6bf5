// dcp_batches.h: synthetic sequence-length distributions, sampled batches, and static CP.
//
// What it is: LengthDist, read from a small JSON file in data/ (documented there): a mixture of
// lognormal components over token lengths, clipped to [min, max], and a default batch size;
// sample_batch draws one batch with a seeded generator; static_cp_schedule is the baseline DCP is
// compared with: one CP size for the whole batch, pinned to its longest sequence (cp_min of it),
// the N/c groups acting as data-parallel replicas filled longest-first.
// What it is not: real data. Every distribution in data/ says it is synthetic and how it was chosen.
#pragma once

#include <random>
#include <string>
#include <vector>

#include "dcp/dcp_schedule.h"

namespace cplab {

struct LengthDist {
  struct Part {
    double weight, median, sigma;  // lognormal: exp(N(log(median), sigma^2))
  };
  std::string name, description;
  std::vector<Part> parts;
  std::int64_t min = 1, max = 1 << 20, batch_size = 64;
};

LengthDist read_length_dist(const std::string& path);  // throws cplab::Error naming the file and rule
std::vector<std::int64_t> sample_batch(const LengthDist& d, std::int64_t count, std::mt19937_64& rng);
DcpSchedule static_cp_schedule(const std::vector<std::int64_t>& lengths, std::int64_t N, std::int64_t M,
                               const CostModel& cost);

}  // namespace cplab
