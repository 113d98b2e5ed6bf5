// row_moves.h: RowMoves, a fixed list of row copies on the GPU (gather, scatter and head slicing in
// one launch), for the context-parallel modes' packing before and unpacking after a collective.
//
// What it is: a list of (dst_offset, src_offset) byte offsets, uploaded once, and one kernel that
// copies row_bytes bytes for each: dst + dst_offset[i] <- src + src_offset[i]. Any row permutation
// of a token-major tensor, and any head slice of it, is such a list (the caller builds it from the
// reference's plans: ulysses_a2a.h A2aPlan, layout.h Partition). The kernel copies in the widest
// unit (16 .. 1 bytes) dividing the row size, every offset and both base pointers.
// What it is not: a check that destinations do not overlap (callers build permutations), or a
// reduction (overlapping destinations race).
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <cstring>
#include <vector>

#include "device_buffer.h"

namespace cplab::cuda {

// The list itself, host side: what the GPU-mode planners build and the CPU tests check (apply()).
struct RowList {
  std::vector<std::int64_t> dst, src;  // byte offsets, one pair per row
  std::int64_t row_bytes = 0;
  void add(std::int64_t d, std::int64_t s) { dst.push_back(d), src.push_back(s); }
};
// the copies on the host (tests): dst + dst_off[i] <- src + src_off[i]
inline void apply(const RowList& l, void* dst, const void* src) {
  for (std::size_t i = 0; i < l.dst.size(); ++i)
    std::memcpy(static_cast<char*>(dst) + l.dst[i], static_cast<const char*>(src) + l.src[i], static_cast<std::size_t>(l.row_bytes));
}

class RowMoves {
 public:
  RowMoves() = default;
  explicit RowMoves(const RowList& l) : RowMoves(l.dst, l.src, l.row_bytes) {}
  // dst_off and src_off: equal lengths, byte offsets >= 0; row_bytes > 0. Throws cplab::Error naming
  // the rule, before any CUDA call; then uploads the lists (synchronous).
  RowMoves(const std::vector<std::int64_t>& dst_off, const std::vector<std::int64_t>& src_off, std::int64_t row_bytes);
  // queues the copies on `stream`; dst and src are device memory covering every offset + row_bytes
  void run(void* dst, const void* src, cudaStream_t stream) const;
  std::int64_t count() const { return count_; }
  std::int64_t row_bytes() const { return row_bytes_; }

 private:
  DeviceBuffer<std::int64_t> off_;  // (2, count): destination offsets, then source offsets
  std::int64_t count_ = 0, row_bytes_ = 0;
  std::uint64_t align_bits_ = 0;    // OR of row_bytes and every offset (the copy unit's divisor)
};

}  // namespace cplab::cuda
