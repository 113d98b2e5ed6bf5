// thd_kernels.h: packed variable-length sequences ("THD") split over cp ranks, on the GPU.
//
// What it is: ThdPartition, a validated packed layout (layout, cu_seqlens_padded, cp: every
// sequence split over the ranks by the layout on its own, as reference/layout/layout.h's
// Partition(layout, cu_padded, cp)) holding a device copy of cu_seqlens_padded; and the kernels
//   thd_partitioned_indices   the packed positions each rank owns (TE's
//                             thd_get_partitioned_indices for zigzag; Partition::indices)
//   thd_shard_tokens          packed (T, row) tensor -> rank-concatenated order (cplab::shard)
//   thd_unshard_tokens        the inverse (cplab::unshard)
// Rows are raw bytes (row_elems * elem_bytes), so every dtype is served; typed wrappers pass
// sizeof(T). All index math is reference/layout/layout_index.h's packed_global / packed_owner (CPLAB_HD);
// the validation is the reference's: check_cu_seqlens (thd.cpp) and, per sequence,
// check_partition (layout.cpp), with the same messages as Partition's constructor.
// What it is not: communication, attention, or TE's other THD kernels (read-half, LSE / out /
// grad correction, per-step cu_seqlens); real (unpadded) lengths play no role here: padding
// tokens are moved like any other.
#pragma once

#include "device_buffer.h"
#include "layout/layout_index.h"

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <type_traits>
#include <vector>

namespace cplab::cuda {

// A packed layout checked against the rules, with cu_seqlens_padded on the device.
// Move-only; it must outlive the kernels queued with it (its destructor cudaFree's the copy).
class ThdPartition {
 public:
  // cu_padded: B + 1 host entries, the offsets of the B sequences in the packed buffer (TE's
  // cu_seqlens_padded). Throws cplab::Error "ThdPartition: <rule>" before any CUDA call unless
  // cu_padded starts at 0, has >= 2 entries, strictly increases, totals <= 2^40 tokens, cp >= 1,
  // the layout is known, and every padded length is a multiple of 2*cp (zigzag) or cp (contiguous,
  // striped). Then copies cu_padded to the device (synchronous cudaMemcpy).
  ThdPartition(cplab::Layout layout, std::vector<std::int64_t> cu_padded, std::int64_t cp);

  cplab::Layout layout() const { return layout_; }
  std::int64_t cp() const { return cp_; }
  std::int64_t num_seqs() const { return static_cast<std::int64_t>(cu_.size()) - 1; }
  std::int64_t total() const { return cu_.back(); }          // T: packed tokens, padding included
  std::int64_t local_len() const { return total() / cp_; }   // tokens per rank
  const std::vector<std::int64_t>& cu_padded() const { return cu_; }  // host, num_seqs() + 1
  const std::int64_t* cu_padded_device() const { return d_cu_.data(); }  // device, num_seqs() + 1

 private:
  cplab::Layout layout_;
  std::vector<std::int64_t> cu_;
  std::int64_t cp_;
  DeviceBuffer<std::int64_t> d_cu_;
};

// All functions: device pointers, used asynchronously on `stream` (0 = legacy default stream);
// bad arguments throw cplab::Error naming the rule before any CUDA call, launch errors throw
// std::runtime_error (CPLAB_CUDA_CHECK).

// indices[r * local_len + l] = packed_global(layout, cu_padded, B, cp, r, l) for every rank r:
// row r is Partition::indices(r), increasing within every rank.
void thd_partitioned_indices(const ThdPartition& part,
                             std::int64_t* indices,  // (cp, T/cp) row-major
                             cudaStream_t stream);
// The same for one rank (0 <= rank < cp), as TE's thd_get_partitioned_indices(cu, T, cp, rank).
void thd_partitioned_indices(const ThdPartition& part, std::int64_t rank,
                             std::int64_t* indices,  // (T/cp): rank's packed positions, in local order
                             cudaStream_t stream);

// Both: T = part.total() tokens, each a row of row_elems elements of elem_bytes bytes. Requires
// row_elems > 0, elem_bytes > 0, T * row_elems * elem_bytes < 2^63, non-null non-overlapping
// pointers. Any alignment works (16-byte aligned rows copy 16 bytes a thread).

// x_ranks[rank_concat_index(T, cp, r, l)] = x_packed[g] for every packed token g, (r, l) = packed_owner(g)
void thd_shard_tokens(const ThdPartition& part,
                      const void* x_packed,  // (T, row_elems) row-major, packed order (cu_padded offsets)
                      void* x_ranks,         // (T, row_elems) row-major: rank 0's T/cp tokens, then rank 1's, ...
                      std::int64_t row_elems, std::size_t elem_bytes, cudaStream_t stream);

// x_packed[g] = x_ranks[rank_concat_index(T, cp, r, l)], the inverse of thd_shard_tokens
void thd_unshard_tokens(const ThdPartition& part,
                        const void* x_ranks,  // (T, row_elems) row-major: rank 0's T/cp tokens, then rank 1's, ...
                        void* x_packed,       // (T, row_elems) row-major, packed order
                        std::int64_t row_elems, std::size_t elem_bytes, cudaStream_t stream);

// Typed forms (Elem = float, double, __half, __nv_bfloat16, ...): elem_bytes = sizeof(Elem).
template <typename Elem>
  requires(!std::is_void_v<Elem>)
void thd_shard_tokens(const ThdPartition& part,
                      const Elem* x_packed,  // (T, row_elems), packed order
                      Elem* x_ranks,         // (T, row_elems), rank-concatenated order
                      std::int64_t row_elems, cudaStream_t stream) {
  thd_shard_tokens(part, static_cast<const void*>(x_packed), static_cast<void*>(x_ranks), row_elems,
                   sizeof(Elem), stream);
}
template <typename Elem>
  requires(!std::is_void_v<Elem>)
void thd_unshard_tokens(const ThdPartition& part,
                        const Elem* x_ranks,  // (T, row_elems), rank-concatenated order
                        Elem* x_packed,       // (T, row_elems), packed order
                        std::int64_t row_elems, cudaStream_t stream) {
  thd_unshard_tokens(part, static_cast<const void*>(x_ranks), static_cast<void*>(x_packed), row_elems,
                     sizeof(Elem), stream);
}

}  // namespace cplab::cuda
