// layout_kernels.cu: the shard / unshard kernels declared in layout_kernels.h.
//
// What it is: one grid-stride kernel, one thread per element of the (S, row_elems) tensor; the
// thread for global token g finds its slot in the rank-concatenated order with
// cplab::layout_owner + cplab::rank_concat_index and copies one float (scatter or gather).
// What it is not: tuned (no vectorised loads, no shared memory); it is a correctness baseline.
#include "layout_kernels.h"

#include "check.h"
#include "error.h"

#include <algorithm>
#include <string>

namespace cplab::cuda {

namespace {

enum class Direction { shard, unshard };

// index of element e of global token g, in the rank-concatenated (S, row_elems) tensor
__device__ std::int64_t ranks_offset(cplab::Layout layout, std::int64_t S, std::int64_t P,
                                     std::int64_t row_elems, std::int64_t g, std::int64_t e) {
  const cplab::RankLocal o = cplab::layout_owner(layout, S, P, g);
  return cplab::rank_concat_index(S, P, o.rank, o.local) * row_elems + e;
}

template <Direction dir>
__global__ void permute_tokens_kernel(const float* __restrict__ src,  // (S, row_elems): global order (shard) or rank order (unshard)
                                      float* __restrict__ dst,        // (S, row_elems): the other order
                                      std::int64_t S, std::int64_t P, std::int64_t row_elems,
                                      cplab::Layout layout) {
  const std::int64_t n = S * row_elems;
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  for (std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += stride) {
    const std::int64_t g = i / row_elems;  // global token
    const std::int64_t e = i % row_elems;
    const std::int64_t j = ranks_offset(layout, S, P, row_elems, g, e);
    if constexpr (dir == Direction::shard) {
      dst[j] = src[i];
    } else {
      dst[i] = src[j];
    }
  }
}

void check_args(const char* fn, std::int64_t S, std::int64_t P, std::int64_t row_elems,
                cplab::Layout layout) {
  try {
    cplab::check_partition(layout, S, P);  // the one definition of the layout rules (layout.cpp)
  } catch (const cplab::Error& e) {
    throw cplab::Error(std::string(fn) + ": " + e.what());
  }
  cplab::require(row_elems > 0, std::string(fn) + ": row_elems " + std::to_string(row_elems) + " must be > 0");
}

template <Direction dir>
void launch(const float* src, float* dst, std::int64_t S, std::int64_t P, std::int64_t row_elems,
            cplab::Layout layout, cudaStream_t stream) {
  constexpr int threads = 256;
  const std::int64_t n = S * row_elems;
  const std::int64_t blocks = std::min<std::int64_t>((n + threads - 1) / threads, 65535);
  permute_tokens_kernel<dir><<<static_cast<unsigned>(blocks), threads, 0, stream>>>(src, dst, S, P, row_elems, layout);
  CPLAB_CUDA_CHECK(cudaGetLastError());
}

}  // namespace

void shard_tokens(const float* x_global, float* x_ranks, std::int64_t S, std::int64_t P,
                  std::int64_t row_elems, cplab::Layout layout, cudaStream_t stream) {
  check_args("shard_tokens", S, P, row_elems, layout);
  launch<Direction::shard>(x_global, x_ranks, S, P, row_elems, layout, stream);
}

void unshard_tokens(const float* x_ranks, float* x_global, std::int64_t S, std::int64_t P,
                    std::int64_t row_elems, cplab::Layout layout, cudaStream_t stream) {
  check_args("unshard_tokens", S, P, row_elems, layout);
  launch<Direction::unshard>(x_ranks, x_global, S, P, row_elems, layout, stream);
}

}  // namespace cplab::cuda
