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

// The file's limits (read_length_dist refuses anything else, naming the file and the field): a JSON
// object of at most kMaxDistFileBytes; min and max whole numbers in [1, kMaxDistLength] (2^52 =
// kMaxDcpRanks x kMaxSeqlenPerRank: no batch can hold a longer sample); batch_size a whole number
// in [1, kMaxBatchSamples] (dcp_schedule.h); 1 to kMaxDistParts components, each with finite
// weight in (0, kMaxDistWeight], median in (0, kMaxDistMedian] and sigma in [0, kMaxDistSigma] (a
// log-normal of sigma 10 spreads its samples over e^+-30 = 10^+-13 at 3 sigma: wider is no distribution
// of lengths, every draw clamped to min or max)
inline constexpr std::int64_t kMaxDistFileBytes = 1 << 20;
inline constexpr std::int64_t kMaxDistLength = kMaxDcpRanks * kMaxSeqlenPerRank;
inline constexpr size_t kMaxDistParts = 1000;
inline constexpr double kMaxDistWeight = 1e12;
inline constexpr double kMaxDistMedian = 4503599627370496.0;  // 2^52 = kMaxDistLength
inline constexpr double kMaxDistSigma = 10;

LengthDist read_length_dist(const std::string& path);  // throws cplab::Error naming the file and rule
// count lengths drawn from d; cplab::Error unless 1 <= count <= kMaxBatchSamples
std::vector<std::int64_t> sample_batch(const LengthDist& d, std::int64_t count, std::mt19937_64& rng);
DcpSchedule static_cp_schedule(const std::vector<std::int64_t>& lengths, std::int64_t N, std::int64_t M,
                               const CostModel& cost);

}  // namespace cplab
