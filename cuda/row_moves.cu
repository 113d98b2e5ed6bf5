// row_moves.cu: the RowMoves kernel (see row_moves.h). A block is (bx, by) threads: each of its by
// thread rows takes one move at a time (grid-stride) and its bx threads copy that row's units.
#include "row_moves.h"

#include <algorithm>
#include <string>

#include "check.h"
#include "core/error.h"

namespace cplab::cuda {

namespace {

template <typename Unit>
__global__ void row_moves_kernel(const std::int64_t* __restrict__ off,  // (2, count) byte offsets
                                 std::int64_t count, const char* __restrict__ src, char* __restrict__ dst,
                                 std::int64_t row_units) {
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.y;
  for (std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.y + threadIdx.y; i < count; i += stride) {
    const Unit* from = reinterpret_cast<const Unit*>(src + off[count + i]);
    Unit* to = reinterpret_cast<Unit*>(dst + off[i]);
    for (std::int64_t u = threadIdx.x; u < row_units; u += blockDim.x) to[u] = from[u];
  }
}

template <typename Unit>
void launch(const std::int64_t* off, std::int64_t count, const void* src, void* dst, std::int64_t row_bytes,
            cudaStream_t stream) {
  constexpr std::int64_t threads = 256;
  const std::int64_t row_units = row_bytes / static_cast<std::int64_t>(sizeof(Unit));
  const std::int64_t bx = std::min<std::int64_t>(threads, (row_units + 31) / 32 * 32);
  const std::int64_t by = threads / bx;
  const std::int64_t blocks = std::min<std::int64_t>((count + by - 1) / by, 65535);
  row_moves_kernel<Unit><<<static_cast<unsigned>(blocks), dim3(static_cast<unsigned>(bx), static_cast<unsigned>(by)), 0, stream>>>(
      off, count, static_cast<const char*>(src), static_cast<char*>(dst), row_units);
  CPLAB_CUDA_CHECK(cudaGetLastError());
}

}  // namespace

RowMoves::RowMoves(const std::vector<std::int64_t>& dst_off, const std::vector<std::int64_t>& src_off, std::int64_t row_bytes)
    : count_(static_cast<std::int64_t>(dst_off.size())), row_bytes_(row_bytes) {
  require(dst_off.size() == src_off.size(), "RowMoves: " + std::to_string(dst_off.size()) + " destination offsets but " +
                                                std::to_string(src_off.size()) + " source offsets");
  require(row_bytes > 0, "RowMoves: row_bytes " + std::to_string(row_bytes) + " must be > 0");
  align_bits_ = static_cast<std::uint64_t>(row_bytes);
  std::vector<std::int64_t> all(dst_off);
  all.insert(all.end(), src_off.begin(), src_off.end());
  for (std::int64_t o : all) {
    require(o >= 0, "RowMoves: offset " + std::to_string(o) + " is negative");
    align_bits_ |= static_cast<std::uint64_t>(o);
  }
  if (count_ == 0) return;
  off_ = DeviceBuffer<std::int64_t>(all.size());
  off_.copy_from_host(all);
}

void RowMoves::run(void* dst, const void* src, cudaStream_t stream) const {
  if (count_ == 0) return;
  require(dst != nullptr && src != nullptr, "RowMoves: null buffer");
  const std::uint64_t a = align_bits_ | reinterpret_cast<std::uintptr_t>(dst) | reinterpret_cast<std::uintptr_t>(src);
  if (a % 16 == 0) launch<uint4>(off_.data(), count_, src, dst, row_bytes_, stream);
  else if (a % 8 == 0) launch<uint2>(off_.data(), count_, src, dst, row_bytes_, stream);
  else if (a % 4 == 0) launch<std::uint32_t>(off_.data(), count_, src, dst, row_bytes_, stream);
  else if (a % 2 == 0) launch<std::uint16_t>(off_.data(), count_, src, dst, row_bytes_, stream);
  else launch<std::uint8_t>(off_.data(), count_, src, dst, row_bytes_, stream);
}

}  // namespace cplab::cuda
