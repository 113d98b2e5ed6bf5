// test_layout_kernels.cpp: GPU shard/unshard (layout_kernels.h) against a host computation.
//
// What it is: for contiguous/zigzag/striped, cp in {1,2,3,4,8}, several S (multiples of 2*cp) and
// row_elems in {1,5}: shard on the GPU == host scatter, unshard on the GPU == host gather, and
// unshard(shard(x)) == x, all compared exactly. The host side walks (rank, local) with
// layout_global, while the kernels walk global tokens with layout_owner, so the two directions of
// layout_index.h are checked against each other. The same, byte for byte, for the element sizes of
// every dtype (f16 / bf16 through the typed wrappers, 1, 2, 4, 8, 16 bytes through the byte API)
// and for rows at odd addresses (each copy width the kernel picks). Also DeviceBuffer and
// CPLAB_CUDA_CHECK basics.
// What it is not: a test of the layout formulas themselves (tests/ does that on the CPU), nor a
// benchmark. Needs a GPU: test_cuda_main.cpp skips the whole binary without one.
#include <doctest/doctest.h>

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "check.h"
#include "device_buffer.h"
#include "test_bytes.h"
#include "core/error.h"
#include "layout/layout_index.h"
#include "layout_kernels.h"

#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace {

using namespace cplab::cuda::test;

using cplab::Layout;
using cplab::cuda::DeviceBuffer;

const char* name(Layout layout) {
  switch (layout) {
    case Layout::contiguous: return "contiguous";
    case Layout::zigzag: return "zigzag";
    case Layout::striped: return "striped";
  }
  return "?";
}

// host scatter: (S, row) global order -> (S, row) rank-concatenated order
template <typename T>
std::vector<T> host_shard(const std::vector<T>& x_global, std::int64_t S, std::int64_t P,
                          std::int64_t row, Layout layout) {
  std::vector<T> out(x_global.size());
  for (std::int64_t r = 0; r < P; ++r)
    for (std::int64_t l = 0; l < S / P; ++l) {
      const std::int64_t g = cplab::layout_global(layout, S, P, r, l);
      const std::int64_t j = cplab::rank_concat_index(S, P, r, l);
      for (std::int64_t e = 0; e < row; ++e)
        out[static_cast<std::size_t>(j * row + e)] = x_global[static_cast<std::size_t>(g * row + e)];
    }
  return out;
}

// host gather: (S, row) rank-concatenated order -> (S, row) global order
template <typename T>
std::vector<T> host_unshard(const std::vector<T>& x_ranks, std::int64_t S, std::int64_t P,
                            std::int64_t row, Layout layout) {
  std::vector<T> out(x_ranks.size());
  for (std::int64_t r = 0; r < P; ++r)
    for (std::int64_t l = 0; l < S / P; ++l) {
      const std::int64_t g = cplab::layout_global(layout, S, P, r, l);
      const std::int64_t j = cplab::rank_concat_index(S, P, r, l);
      for (std::int64_t e = 0; e < row; ++e)
        out[static_cast<std::size_t>(g * row + e)] = x_ranks[static_cast<std::size_t>(j * row + e)];
    }
  return out;
}

// distinct, exactly representable values (< 2^24) with a per-tensor offset
std::vector<float> iota(std::size_t n, float start) {
  std::vector<float> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = start + static_cast<float>(i);
  return v;
}

// the float test above for another element type, through the typed wrappers, compared as bytes
template <typename T>
void check_typed(const char* type_name) {
  for (Layout layout : {Layout::contiguous, Layout::zigzag, Layout::striped})
    for (std::int64_t P : {1, 3, 4})
      for (std::int64_t row : {1, 3, 64}) {
        const std::int64_t S = 2 * P * 7;
        CAPTURE(type_name);
        CAPTURE(name(layout));
        CAPTURE(P);
        CAPTURE(row);
        const auto n = static_cast<std::size_t>(S * row);
        const std::vector<T> x = random_elems<T>(n, 1), y = random_elems<T>(n, 2);
        DeviceBuffer<T> d_x(n), d_shard(n), d_back(n), d_y(n), d_y_global(n);
        d_x.copy_from_host(x);
        d_y.copy_from_host(y);
        cplab::cuda::shard_tokens(d_x.data(), d_shard.data(), S, P, row, layout, nullptr);
        cplab::cuda::unshard_tokens(d_shard.data(), d_back.data(), S, P, row, layout, nullptr);
        cplab::cuda::unshard_tokens(d_y.data(), d_y_global.data(), S, P, row, layout, nullptr);
        std::vector<T> shard(n), back(n), y_global(n);
        d_shard.copy_to_host(shard);
        d_back.copy_to_host(back);
        d_y_global.copy_to_host(y_global);
        CHECK(bytes_of(shard) == bytes_of(host_shard(x, S, P, row, layout)));
        CHECK(bytes_of(y_global) == bytes_of(host_unshard(y, S, P, row, layout)));
        CHECK(bytes_of(back) == bytes_of(x));
      }
}

}  // namespace

TEST_CASE("shard_tokens / unshard_tokens match the host and invert each other") {
  for (Layout layout : {Layout::contiguous, Layout::zigzag, Layout::striped})
    for (std::int64_t P : {1, 2, 3, 4, 8})
      for (std::int64_t k : {1, 3, 64})  // S = 2*cp*k (the 64 case spans many blocks)
        for (std::int64_t row : {1, 5}) {
          const std::int64_t S = 2 * P * k;
          CAPTURE(name(layout));
          CAPTURE(P);
          CAPTURE(S);
          CAPTURE(row);
          const auto n = static_cast<std::size_t>(S * row);
          const std::vector<float> x = iota(n, 0.0f);
          const std::vector<float> y = iota(n, 1.0e6f);  // an independent rank-order input

          DeviceBuffer<float> d_x(n), d_shard(n), d_back(n), d_y(n), d_y_global(n);
          d_x.copy_from_host(x);
          d_y.copy_from_host(y);
          cplab::cuda::shard_tokens(d_x.data(), d_shard.data(), S, P, row, layout, nullptr);
          cplab::cuda::unshard_tokens(d_shard.data(), d_back.data(), S, P, row, layout, nullptr);
          cplab::cuda::unshard_tokens(d_y.data(), d_y_global.data(), S, P, row, layout, nullptr);

          std::vector<float> shard(n), back(n), y_global(n);
          d_shard.copy_to_host(shard);
          d_back.copy_to_host(back);
          d_y_global.copy_to_host(y_global);
          CHECK(shard == host_shard(x, S, P, row, layout));
          CHECK(y_global == host_unshard(y, S, P, row, layout));
          CHECK(back == x);
        }
}

TEST_CASE("shard_tokens / unshard_tokens move rows of every dtype (typed wrappers), byte for byte") {
  check_typed<__half>("__half");
  check_typed<__nv_bfloat16>("__nv_bfloat16");
  check_typed<double>("double");
  check_typed<float>("float");
}

TEST_CASE("shard_tokens / unshard_tokens byte API: element sizes 1..16 and rows at odd addresses") {
  // offset shifts both device pointers, so the kernel picks each copy width: 16 / 8 / 4 / 2 / 1 bytes
  for (std::size_t elem : {1, 2, 3, 4, 8, 16})
    for (std::int64_t row : {1, 2, 5, 16})
      for (std::size_t offset : {0, 1, 2, 4, 8})
        for (Layout layout : {Layout::zigzag, Layout::striped}) {
          const std::int64_t P = 3, S = 2 * P * 5;
          CAPTURE(elem);
          CAPTURE(row);
          CAPTURE(offset);
          CAPTURE(name(layout));
          const auto row_bytes = static_cast<std::int64_t>(elem) * row;
          const auto n = static_cast<std::size_t>(S * row_bytes);
          const std::vector<unsigned char> x = random_bytes(n, 3);
          DeviceBuffer<unsigned char> d_x(n + offset), d_shard(n + offset), d_back(n + offset);
          std::vector<unsigned char> x_padded(n + offset, 0);
          std::memcpy(x_padded.data() + offset, x.data(), n);
          d_x.copy_from_host(x_padded);
          cplab::cuda::shard_tokens(d_x.data() + offset, d_shard.data() + offset, S, P, row, elem, layout, nullptr);
          cplab::cuda::unshard_tokens(d_shard.data() + offset, d_back.data() + offset, S, P, row, elem, layout,
                                      nullptr);
          std::vector<unsigned char> shard(n + offset), back(n + offset);
          d_shard.copy_to_host(shard);
          d_back.copy_to_host(back);
          shard.erase(shard.begin(), shard.begin() + static_cast<std::ptrdiff_t>(offset));
          back.erase(back.begin(), back.begin() + static_cast<std::ptrdiff_t>(offset));
          CHECK(shard == host_shard(x, S, P, row_bytes, layout));  // a row of row_bytes one-byte elements
          CHECK(back == x);
        }
}

TEST_CASE("DeviceBuffer round-trips, moves, and checks sizes") {
  const std::vector<float> h = iota(7, 3.0f);
  DeviceBuffer<float> a(h.size());
  a.copy_from_host(h);
  DeviceBuffer<float> b(std::move(a));
  CHECK(a.data() == nullptr);
  CHECK(a.size() == 0);
  std::vector<float> out(h.size());
  b.copy_to_host(out);
  CHECK(out == h);
  std::vector<float> wrong(3);
  CHECK_THROWS_AS(b.copy_to_host(wrong), std::invalid_argument);
}

TEST_CASE("CPLAB_CUDA_CHECK names the call, file:line and the CUDA error text") {
  try {
    CPLAB_CUDA_CHECK(static_cast<cudaError_t>(cudaErrorInvalidValue));
    FAIL("no exception");
  } catch (const std::runtime_error& e) {
    const std::string msg = e.what();
    CHECK(msg.find("static_cast<cudaError_t>(cudaErrorInvalidValue)") != std::string::npos);
    CHECK(msg.find("test_layout_kernels.cpp:") != std::string::npos);
    CHECK(msg.find(cudaGetErrorString(cudaErrorInvalidValue)) != std::string::npos);
  }
}
