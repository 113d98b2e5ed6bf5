// thd_kernels.cu: ThdPartition and the THD kernels declared in thd_kernels.h.
//
// What it is: the validation (layout_index.h's check_cu_seqlens and check_packed_partition, the
// reference's own rules and messages), the partitioned-indices kernel (one thread per (rank, local
// token): cplab::packed_global, a binary search over cu_padded + the layout's per-sequence map), and
// shard / unshard through layout_kernels.cu's row permutation with a packed TokenMap
// (cplab::packed_owner per token).
// What it is not: tuned (each token searches cu_padded on its own; no shared-memory copy of it).
#include "thd_kernels.h"

#include "check.h"
#include "core/error.h"
#include "layout_kernels.h"

#include <algorithm>
#include <string>
#include <utility>

namespace cplab::cuda {

namespace {

std::vector<std::int64_t> validated(cplab::Layout layout, std::vector<std::int64_t> cu, std::int64_t cp) {
  try {
    cplab::check_cu_seqlens(cu);
    cplab::check_packed_partition(layout, cu, cp);
  } catch (const cplab::Error& e) {
    throw cplab::Error(std::string("ThdPartition: ") + e.what());
  }
  return cu;
}

__global__ void partitioned_indices_kernel(cplab::Layout layout,
                                           const std::int64_t* __restrict__ cu_padded,  // (nseq + 1)
                                           std::int64_t nseq, std::int64_t P, std::int64_t rank0,
                                           std::int64_t nranks, std::int64_t local_len,
                                           std::int64_t* __restrict__ indices) {  // (nranks, local_len)
  const std::int64_t n = nranks * local_len;
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  for (std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += stride) {
    const std::int64_t r = rank0 + i / local_len;
    const std::int64_t l = i % local_len;
    indices[i] = cplab::packed_global(layout, cu_padded, nseq, P, r, l);
  }
}

void launch_indices(const ThdPartition& part, std::int64_t rank0, std::int64_t nranks,
                    std::int64_t* indices, cudaStream_t stream) {
  constexpr std::int64_t threads = 256;
  const std::int64_t n = nranks * part.local_len();
  const std::int64_t blocks = std::min<std::int64_t>((n + threads - 1) / threads, 65535);
  partitioned_indices_kernel<<<static_cast<unsigned>(blocks), static_cast<unsigned>(threads), 0, stream>>>(
      part.layout(), part.cu_padded_device(), part.num_seqs(), part.cp(), rank0, nranks, part.local_len(),
      indices);
  CPLAB_CUDA_CHECK(cudaGetLastError());
}

void permute(const char* fn, const ThdPartition& part, bool to_ranks, const void* src,
             const char* src_name, void* dst, const char* dst_name, std::int64_t row_elems,
             std::size_t elem_bytes, cudaStream_t stream) {
  const std::int64_t row_bytes = detail::checked_row_bytes(fn, part.total(), row_elems, elem_bytes);
  cplab::require(src != nullptr, std::string(fn) + ": " + src_name + " is null");
  cplab::require(dst != nullptr, std::string(fn) + ": " + dst_name + " is null");
  const detail::TokenMap map{part.layout(), part.total(), part.cp(), part.cu_padded_device(), part.num_seqs()};
  detail::permute_rows(map, to_ranks, src, dst, row_bytes, stream);
}

}  // namespace

ThdPartition::ThdPartition(cplab::Layout layout, std::vector<std::int64_t> cu_padded, std::int64_t cp)
    : layout_(layout), cu_(validated(layout, std::move(cu_padded), cp)), cp_(cp), d_cu_(cu_.size()) {
  d_cu_.copy_from_host(cu_);
}

void thd_partitioned_indices(const ThdPartition& part, std::int64_t* indices, cudaStream_t stream) {
  cplab::require(indices != nullptr, "thd_partitioned_indices: indices is null");
  launch_indices(part, 0, part.cp(), indices, stream);
}

void thd_partitioned_indices(const ThdPartition& part, std::int64_t rank, std::int64_t* indices,
                             cudaStream_t stream) {
  cplab::require(rank >= 0 && rank < part.cp(), "thd_partitioned_indices: rank " + std::to_string(rank) +
                                                    " is not in [0, cp = " + std::to_string(part.cp()) + ")");
  cplab::require(indices != nullptr, "thd_partitioned_indices: indices is null");
  launch_indices(part, rank, 1, indices, stream);
}

void thd_shard_tokens(const ThdPartition& part, const void* x_packed, void* x_ranks, std::int64_t row_elems,
                      std::size_t elem_bytes, cudaStream_t stream) {
  permute("thd_shard_tokens", part, true, x_packed, "x_packed", x_ranks, "x_ranks", row_elems, elem_bytes, stream);
}

void thd_unshard_tokens(const ThdPartition& part, const void* x_ranks, void* x_packed, std::int64_t row_elems,
                        std::size_t elem_bytes, cudaStream_t stream) {
  permute("thd_unshard_tokens", part, false, x_ranks, "x_ranks", x_packed, "x_packed", row_elems, elem_bytes,
          stream);
}

}  // namespace cplab::cuda
