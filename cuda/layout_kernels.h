// layout_kernels.h: move a token-major tensor between global sequence order and the
// rank-concatenated order of a context-parallel layout, on the GPU.
//
// What it is: shard_tokens (scatter: global order -> rank 0's S/P tokens, then rank 1's, ...) and
// unshard_tokens (the inverse gather), for the contiguous / zigzag / striped layouts. All index
// math comes from reference/layout_index.h (layout_owner + rank_concat_index), the same
// functions the CPU reference uses; there is no second copy of the layout formulas here.
// What it is not: communication (all P "ranks" live in one buffer on one GPU), attention, or a
// dtype-generic API (float only, for now).
#pragma once

#include "layout_index.h"

#include <cuda_runtime.h>

#include <cstdint>

namespace cplab::cuda {

// Both functions: S tokens of row_elems floats each; P = cp ranks. Requires S > 0, P > 0,
// row_elems > 0, S % P == 0 (zigzag: S % (2*P) == 0), else throws cplab::Error before any CUDA
// call. Pointers are device memory, must not overlap, and are used asynchronously on `stream`
// (0 = legacy default stream); launch errors throw std::runtime_error (CPLAB_CUDA_CHECK).

// x_ranks[rank_concat_index(r, l)] = x_global[g] for every global token g, (r, l) = layout_owner(g)
void shard_tokens(const float* x_global,  // (S, row_elems) row-major, global sequence order
                  float* x_ranks,         // (S, row_elems) row-major: rank 0's S/P tokens, then rank 1's, ...
                  std::int64_t S, std::int64_t P, std::int64_t row_elems, cplab::Layout layout,
                  cudaStream_t stream);

// x_global[g] = x_ranks[rank_concat_index(r, l)], the inverse of shard_tokens
void unshard_tokens(const float* x_ranks,  // (S, row_elems) row-major: rank 0's S/P tokens, then rank 1's, ...
                    float* x_global,       // (S, row_elems) row-major, global sequence order
                    std::int64_t S, std::int64_t P, std::int64_t row_elems, cplab::Layout layout,
                    cudaStream_t stream);

}  // namespace cplab::cuda
