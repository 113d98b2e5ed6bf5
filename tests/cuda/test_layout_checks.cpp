// test_layout_checks.cpp: the layout and THD kernels refuse bad shapes and packings with the
// reference's rules and messages before any CUDA call, so this runs without a GPU (in
// cplab_cuda_host_tests).
// What it is not: a test of the kernels' results (test_layout_kernels.cpp, test_thd_kernels.cpp: GPU).
#include <doctest/doctest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "core/error.h"
#include "layout/layout.h"
#include "layout_kernels.h"
#include "layout/thd.h"
#include "thd_kernels.h"

namespace {

using cplab::Layout;
using cplab::Partition;
using cplab::cuda::ThdPartition;
using I64 = std::vector<std::int64_t>;

// the reference's refusal: check_cu_seqlens, then Partition's constructor ("" if it accepts)
std::string reference_error(Layout layout, const I64& cu, std::int64_t cp) {
  try {
    cplab::check_cu_seqlens(cu);
    const Partition part(layout, cu, cp);
  } catch (const cplab::Error& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("shard_tokens rejects shapes the layout cannot split, before touching the GPU") {
  using cplab::cuda::shard_tokens;
  using cplab::cuda::unshard_tokens;
  CHECK_THROWS_AS(shard_tokens<float>(nullptr, nullptr, 12, 4, 1, Layout::zigzag, nullptr), cplab::Error);
  CHECK_THROWS_AS(unshard_tokens<float>(nullptr, nullptr, 10, 4, 1, Layout::striped, nullptr), cplab::Error);
  CHECK_THROWS_AS(shard_tokens<float>(nullptr, nullptr, 8, 0, 1, Layout::contiguous, nullptr), cplab::Error);
  CHECK_THROWS_AS(shard_tokens<float>(nullptr, nullptr, 8, 2, 0, Layout::contiguous, nullptr), cplab::Error);
  CHECK_THROWS_WITH_AS(shard_tokens(nullptr, nullptr, 12, 4, 1, 2, Layout::zigzag, nullptr),
                       "shard_tokens: seq 12 is not a multiple of 2*cp = 8 (zigzag splits the sequence into 2*cp "
                       "equal chunks)",
                       cplab::Error);
  CHECK_THROWS_WITH_AS(unshard_tokens(nullptr, nullptr, 8, 2, 1, 0, Layout::contiguous, nullptr),
                       "unshard_tokens: elem_bytes must be > 0", cplab::Error);
  CHECK_THROWS_WITH_AS(shard_tokens(nullptr, nullptr, 8, 2, std::int64_t{1} << 60, 16, Layout::contiguous, nullptr),
                       "shard_tokens: 8 tokens x 1152921504606846976 elements x 16 bytes does not fit in 2^63 bytes",
                       cplab::Error);
  float dummy = 0.0f;  // a non-null host address: the null check of the other pointer must fire first
  CHECK_THROWS_WITH_AS(shard_tokens<float>(nullptr, &dummy, 8, 2, 1, Layout::contiguous, nullptr),
                       "shard_tokens: x_global is null", cplab::Error);
  CHECK_THROWS_WITH_AS(unshard_tokens<float>(&dummy, nullptr, 8, 2, 1, Layout::contiguous, nullptr),
                       "unshard_tokens: x_global is null", cplab::Error);
}

TEST_CASE("ThdPartition refuses bad packings with exactly the reference's message, before any CUDA call") {
  struct Bad {
    Layout layout;
    I64 cu;
    std::int64_t cp;
  };
  const std::vector<Bad> bad = {
      {Layout::zigzag, {0, 12, 34}, 3},           // 22 not a multiple of 2*cp = 6
      {Layout::zigzag, {0, 12, 36, 43}, 3},       // TE's THD example with an unpadded last sequence
      {Layout::striped, {0, 12, 36, 42}, 4},      // 42 - 36 = 6 not a multiple of cp = 4
      {Layout::contiguous, {0, 9}, 2},            // one sequence: no "sequence 0" prefix
      {Layout::zigzag, {0, 12, 12, 42}, 3},       // not strictly increasing
      {Layout::zigzag, {0, 12, 6}, 3},            // decreasing
      {Layout::zigzag, {1, 12}, 3},               // does not start at 0
      {Layout::zigzag, {0}, 3},                   // no sequence
      {Layout::zigzag, {}, 3},                    // nothing
      {Layout::zigzag, {0, 12, 24}, 0},           // cp 0
      {Layout::striped, {0, 12}, -2},             // cp < 0
      {static_cast<Layout>(7), {0, 12}, 2},       // unknown layout
      {Layout::contiguous, {0, std::int64_t{1} << 41}, 1},  // more than 2^40 tokens
  };
  for (const Bad& b : bad) {
    CAPTURE(b.cu.size());
    CAPTURE(b.cp);
    const std::string ref = reference_error(b.layout, b.cu, b.cp);
    REQUIRE(!ref.empty());
    CHECK_THROWS_WITH_AS(ThdPartition(b.layout, b.cu, b.cp), ("ThdPartition: " + ref).c_str(), cplab::Error);
  }
  CHECK_THROWS_WITH_AS(ThdPartition(Layout::zigzag, {0, 12, 34}, 3),
                       "ThdPartition: sequence 1 (padded): seq 22 is not a multiple of 2*cp = 6 (zigzag splits the "
                       "sequence into 2*cp equal chunks)",
                       cplab::Error);
  CHECK(reference_error(Layout::zigzag, {0, 12, 36, 42}, 3).empty());
}

