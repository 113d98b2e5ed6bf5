// layout_kernels.cu: the shard / unshard kernels declared in layout_kernels.h, and the row
// permutation they share with thd_kernels.cu.
//
// What it is: one kernel, templated on the copy unit (16, 8, 4, 2 or 1 bytes: the widest that
// divides the row size and both base addresses). A block is (bx, by) threads: each of its by
// thread rows takes one token at a time (grid-stride), finds the token's slot in the
// rank-concatenated order with cplab::layout_owner (unpacked) or cplab::packed_owner (packed THD)
// + cplab::rank_concat_index, and its bx threads copy the row's units (scatter or gather).
// What it is not: tuned further (no shared memory, no async copies); it is a correctness baseline
// that copies at the width the data allows.
#include "layout_kernels.h"

#include "check.h"
#include "core/error.h"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <string>

namespace cplab::cuda {

namespace {

// position of global token g in the rank-concatenated order
__device__ std::int64_t ranks_token(const detail::TokenMap& m, std::int64_t g) {
  const cplab::RankLocal o = m.cu_padded != nullptr
                                 ? cplab::packed_owner(m.layout, m.cu_padded, m.nseq, m.P, g)
                                 : cplab::layout_owner(m.layout, m.tokens, m.P, g);
  return cplab::rank_concat_index(m.tokens, m.P, o.rank, o.local);
}

template <typename Unit, bool to_ranks>
__global__ void permute_rows_kernel(detail::TokenMap m,
                                    const Unit* __restrict__ src,  // (tokens, row_units): global order (to_ranks) or rank order
                                    Unit* __restrict__ dst,        // (tokens, row_units): the other order
                                    std::int64_t row_units) {
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.y;
  for (std::int64_t g = static_cast<std::int64_t>(blockIdx.x) * blockDim.y + threadIdx.y; g < m.tokens;
       g += stride) {
    const std::int64_t j = ranks_token(m, g);  // the same for the whole thread row
    const Unit* from = src + (to_ranks ? g : j) * row_units;
    Unit* to = dst + (to_ranks ? j : g) * row_units;
    for (std::int64_t u = threadIdx.x; u < row_units; u += blockDim.x) to[u] = from[u];
  }
}

template <typename Unit>
void launch(const detail::TokenMap& m, bool to_ranks, const void* src, void* dst,
            std::int64_t row_bytes, cudaStream_t stream) {
  constexpr std::int64_t threads = 256;
  const std::int64_t row_units = row_bytes / static_cast<std::int64_t>(sizeof(Unit));
  // bx: the row's units rounded up to a warp (at most 256); by: tokens per block
  const std::int64_t bx = std::min<std::int64_t>(threads, (row_units + 31) / 32 * 32);
  const std::int64_t by = threads / bx;
  const std::int64_t blocks = std::min<std::int64_t>((m.tokens + by - 1) / by, 65535);
  const dim3 block(static_cast<unsigned>(bx), static_cast<unsigned>(by));
  const auto* s = static_cast<const Unit*>(src);
  auto* d = static_cast<Unit*>(dst);
  if (to_ranks)
    permute_rows_kernel<Unit, true><<<static_cast<unsigned>(blocks), block, 0, stream>>>(m, s, d, row_units);
  else
    permute_rows_kernel<Unit, false><<<static_cast<unsigned>(blocks), block, 0, stream>>>(m, s, d, row_units);
  CPLAB_CUDA_CHECK(cudaGetLastError());
}

}  // namespace

namespace detail {

std::int64_t checked_row_bytes(const char* fn, std::int64_t tokens, std::int64_t row_elems,
                               std::size_t elem_bytes) {
  constexpr std::int64_t max = std::numeric_limits<std::int64_t>::max();
  cplab::require(row_elems > 0, std::string(fn) + ": row_elems " + std::to_string(row_elems) + " must be > 0");
  cplab::require(elem_bytes > 0, std::string(fn) + ": elem_bytes must be > 0");
  cplab::require(elem_bytes <= static_cast<std::size_t>(max) && tokens > 0 &&
                     row_elems <= max / static_cast<std::int64_t>(elem_bytes) / tokens,
                 std::string(fn) + ": " + std::to_string(tokens) + " tokens x " + std::to_string(row_elems) +
                     " elements x " + std::to_string(elem_bytes) + " bytes does not fit in 2^63 bytes");
  return row_elems * static_cast<std::int64_t>(elem_bytes);
}

void permute_rows(const TokenMap& map, bool to_ranks, const void* src, void* dst,
                  std::int64_t row_bytes, cudaStream_t stream) {
  const auto addr = reinterpret_cast<std::uintptr_t>(src) | reinterpret_cast<std::uintptr_t>(dst) |
                    static_cast<std::uintptr_t>(row_bytes);
  if (addr % 16 == 0) launch<uint4>(map, to_ranks, src, dst, row_bytes, stream);
  else if (addr % 8 == 0) launch<uint2>(map, to_ranks, src, dst, row_bytes, stream);
  else if (addr % 4 == 0) launch<std::uint32_t>(map, to_ranks, src, dst, row_bytes, stream);
  else if (addr % 2 == 0) launch<std::uint16_t>(map, to_ranks, src, dst, row_bytes, stream);
  else launch<std::uint8_t>(map, to_ranks, src, dst, row_bytes, stream);
}

}  // namespace detail

namespace {

// the layout rules, the row size, then the pointers; returns the row size in bytes
std::int64_t check_args(const char* fn, const void* src, const char* src_name, const void* dst,
                        const char* dst_name, std::int64_t S, std::int64_t P, std::int64_t row_elems,
                        std::size_t elem_bytes, cplab::Layout layout) {
  try {
    cplab::check_partition(layout, S, P);  // the one definition of the layout rules (layout.cpp)
  } catch (const cplab::Error& e) {
    throw cplab::Error(std::string(fn) + ": " + e.what());
  }
  const std::int64_t row_bytes = detail::checked_row_bytes(fn, S, row_elems, elem_bytes);
  cplab::require(src != nullptr, std::string(fn) + ": " + src_name + " is null");
  cplab::require(dst != nullptr, std::string(fn) + ": " + dst_name + " is null");
  return row_bytes;
}

}  // namespace

void shard_tokens(const void* x_global, void* x_ranks, std::int64_t S, std::int64_t P,
                  std::int64_t row_elems, std::size_t elem_bytes, cplab::Layout layout,
                  cudaStream_t stream) {
  const std::int64_t row_bytes =
      check_args("shard_tokens", x_global, "x_global", x_ranks, "x_ranks", S, P, row_elems, elem_bytes, layout);
  detail::permute_rows(detail::TokenMap{layout, S, P, nullptr, 1}, true, x_global, x_ranks, row_bytes, stream);
}

void unshard_tokens(const void* x_ranks, void* x_global, std::int64_t S, std::int64_t P,
                    std::int64_t row_elems, std::size_t elem_bytes, cplab::Layout layout,
                    cudaStream_t stream) {
  const std::int64_t row_bytes =
      check_args("unshard_tokens", x_ranks, "x_ranks", x_global, "x_global", S, P, row_elems, elem_bytes, layout);
  detail::permute_rows(detail::TokenMap{layout, S, P, nullptr, 1}, false, x_ranks, x_global, row_bytes, stream);
}

}  // namespace cplab::cuda
