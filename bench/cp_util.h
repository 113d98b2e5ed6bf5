// cp_util.h: what `cplab-bench cp`'s training run (cp_bench.cpp) and its inference run
// (infer_cp_bench.cpp) share: the timer, the index-hashed inputs written to device rows, one device
// row read back, and the sampled-row check.
//
// What it is:
//   time_ms(iters, f)         ms per call of f, the device synchronized before and after, a progress bar on stderr
//   fill(dst, which, order, width, t)  the tokens `order` of one input (inputs.h), `width` elements each,
//                             written to device memory as dtype t through a host buffer of at most 16 MiB;
//                             returns the elements written
//   row(base, g, width, t)    row g of a (tokens, width) device array of dtype t, as doubles
//   Diff                      one tensor's check on sampled rows: core/rel_error.h's metric, and
//                             infinity (why() says which) when a value is not finite or the
//                             baseline's sampled values are all zero (so that the check can fail)
// What it is not: a benchmark by itself.
#pragma once

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "check.h"
#include "core/dtype.h"
#include "core/rel_error.h"
#include "core/util.h"
#include "device_buffer.h"
#include "inputs.h"

namespace cplab::bench {

template <class F>
double time_ms(int iters, F&& f) {
  CPLAB_CUDA_CHECK(cudaDeviceSynchronize());
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < iters; ++i) {
    f();
    std::fprintf(stderr, "\r  [%-20s] %d/%d", std::string(sz(20 * (i + 1) / iters), '#').c_str(), i + 1, iters);
  }
  CPLAB_CUDA_CHECK(cudaDeviceSynchronize());
  std::fprintf(stderr, "\r%40s\r", "");
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count() / iters;
}

// row g of a (tokens, width) device array of dtype t, as doubles (any device: unified addressing)
inline std::vector<double> row(const void* base, std::int64_t g, std::int64_t width, DType t) {
  std::vector<std::byte> b(sz(width) * dtype_size(t));
  CPLAB_CUDA_CHECK(cudaMemcpy(b.data(), static_cast<const std::byte*>(base) + sz(g * width) * dtype_size(t), b.size(),
                              cudaMemcpyDefault));
  return from_dtype(b, t);
}

struct Diff {
  RelError e;
  void add(const std::vector<double>& x, const std::vector<double>& ref) {
    if (x.size() != ref.size()) e.failed = true;  // rows of different widths: nothing comparable
    e.add(x.data(), ref.data(), std::min(x.size(), ref.size()));
  }
  std::string why() const {
    if (e.failed) return "a NaN or an infinity (other than -inf on both sides) in the result or the reference";
    if (e.scale == 0) return "the baseline's sampled values are all zero";
    return "";
  }
  double rel() const { return why().empty() ? e.value() : INFINITY; }
};

// (any device: upload_sync); input_rows hashes the rows in parallel
inline std::uint64_t fill(std::byte* dst, Input which, const std::vector<index_t>& order, std::int64_t width, DType t) {
  const std::size_t row_b = sz(width) * dtype_size(t), rows = std::max<std::size_t>(1, (std::size_t{16} << 20) / row_b);
  std::vector<std::byte> host(std::min(rows, order.size()) * row_b);
  for (std::size_t i0 = 0; i0 < order.size(); i0 += rows) {
    const std::size_t m = std::min(rows, order.size() - i0);
    input_rows(which, order.data() + i0, m, width, t, host.data());
    cuda::upload_sync(dst + i0 * row_b, host.data(), m * row_b);
  }
  return order.size() * sz(width);
}

}  // namespace cplab::bench
