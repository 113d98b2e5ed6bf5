// layout_kernels.h: move a token-major tensor between global sequence order and the
// rank-concatenated order of a context-parallel layout, on the GPU.
//
// What it is: shard_tokens (scatter: global order -> rank 0's S/P tokens, then rank 1's, ...) and
// unshard_tokens (the inverse gather), for the contiguous / zigzag / striped layouts. Rows are
// moved as raw bytes (row_elems * elem_bytes per token), so one kernel serves every dtype (f32,
// f16, bf16, f64, ...); typed wrappers take T* and pass sizeof(T). All index math comes from
// reference/layout/layout_index.h (layout_owner + rank_concat_index, and packed_owner for
// thd_kernels.h), the same functions the CPU reference uses; there is no second copy of the layout
// formulas here.
// What it is not: communication (all P "ranks" live in one buffer on one GPU), attention, a dtype
// conversion (bytes are copied, never interpreted), or packed THD batches (thd_kernels.h).
#pragma once

#include "layout/layout_index.h"

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <type_traits>

namespace cplab::cuda {

// Both functions: S tokens, each a row of row_elems elements of elem_bytes bytes; P = cp ranks.
// Requires S > 0, P > 0, row_elems > 0, elem_bytes > 0, S % P == 0 (zigzag: S % (2*P) == 0),
// S * row_elems * elem_bytes < 2^63 and non-null pointers, else throws cplab::Error naming the rule
// before any CUDA call. Pointers are device memory, must not overlap, and are used asynchronously
// on `stream` (0 = legacy default stream); launch errors throw std::runtime_error (CPLAB_CUDA_CHECK).
// Any alignment works; rows whose size and addresses are multiples of 16 bytes copy 16 bytes a thread.

// x_ranks[rank_concat_index(r, l)] = x_global[g] for every global token g, (r, l) = layout_owner(g)
void shard_tokens(const void* x_global,  // (S, row_elems) row-major, global sequence order
                  void* x_ranks,         // (S, row_elems) row-major: rank 0's S/P tokens, then rank 1's, ...
                  std::int64_t S, std::int64_t P, std::int64_t row_elems, std::size_t elem_bytes,
                  cplab::Layout layout, cudaStream_t stream);

// x_global[g] = x_ranks[rank_concat_index(r, l)], the inverse of shard_tokens
void unshard_tokens(const void* x_ranks,  // (S, row_elems) row-major: rank 0's S/P tokens, then rank 1's, ...
                    void* x_global,       // (S, row_elems) row-major, global sequence order
                    std::int64_t S, std::int64_t P, std::int64_t row_elems, std::size_t elem_bytes,
                    cplab::Layout layout, cudaStream_t stream);

// Typed forms (float, double, __half, __nv_bfloat16, ...): elem_bytes = sizeof(T).
template <typename T>
  requires(!std::is_void_v<T>)
void shard_tokens(const T* x_global,  // (S, row_elems), global sequence order
                  T* x_ranks,         // (S, row_elems), rank-concatenated order
                  std::int64_t S, std::int64_t P, std::int64_t row_elems, cplab::Layout layout,
                  cudaStream_t stream) {
  shard_tokens(static_cast<const void*>(x_global), static_cast<void*>(x_ranks), S, P, row_elems,
               sizeof(T), layout, stream);
}
template <typename T>
  requires(!std::is_void_v<T>)
void unshard_tokens(const T* x_ranks,  // (S, row_elems), rank-concatenated order
                    T* x_global,       // (S, row_elems), global sequence order
                    std::int64_t S, std::int64_t P, std::int64_t row_elems, cplab::Layout layout,
                    cudaStream_t stream) {
  unshard_tokens(static_cast<const void*>(x_ranks), static_cast<void*>(x_global), S, P, row_elems,
                 sizeof(T), layout, stream);
}

namespace detail {

// Where a layout puts token g of a (tokens, row) tensor in the rank-concatenated order: one
// unpacked sequence of `tokens` (cu_padded == nullptr: layout_owner) or nseq packed sequences at the
// device offsets cu_padded[0..nseq] (packed_owner; cu_padded[nseq] == tokens).
struct TokenMap {
  cplab::Layout layout = cplab::Layout::contiguous;
  std::int64_t tokens = 0;                  // S (unpacked) or T = cu_padded[nseq] (packed)
  std::int64_t P = 1;                       // cp ranks
  const std::int64_t* cu_padded = nullptr;  // device, nseq + 1 entries, or nullptr
  std::int64_t nseq = 1;
};

// The one row-permutation launcher behind shard_tokens / unshard_tokens and thd_shard_tokens /
// thd_unshard_tokens. to_ranks: dst[ranks(g)] = src[g], else dst[g] = src[ranks(g)]. Does NOT
// validate: callers check the layout rules, row_bytes > 0, overflow and null pointers first.
void permute_rows(const TokenMap& map, bool to_ranks,
                  const void* src,  // (tokens, row_bytes) bytes: global order (to_ranks) or rank order
                  void* dst,        // (tokens, row_bytes) bytes: the other order
                  std::int64_t row_bytes, cudaStream_t stream);

// cplab::Error "<fn>: <what> ..." unless row_elems > 0, elem_bytes > 0 and
// tokens * row_elems * elem_bytes < 2^63; returns row_elems * elem_bytes. Host only.
std::int64_t checked_row_bytes(const char* fn, std::int64_t tokens, std::int64_t row_elems,
                               std::size_t elem_bytes);

}  // namespace detail

}  // namespace cplab::cuda
