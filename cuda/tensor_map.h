// tensor_map.h: the host side of the v3 (TMA) kernel: TMA tensor maps for token-major tensors,
// and the device check that kernel v3 can run here.
//
// What it is: tma_tile_map() encodes a CUtensorMap for x (rows, heads, d) of 16-bit elements with
// boxes of 64 columns x box_rows rows of one head and 128-byte swizzling (the layout
// wgmma_layout.h reads), by cuTensorMapEncodeTiled fetched through the runtime's
// cudaGetDriverEntryPointByVersion, so cplab never links libcuda and still starts on machines
// without a driver. v3_check_device() throws cplab::Error unless the current device is compute
// capability 9.0 (kernel v3 is compiled for sm_90a: H100, H200).
// What it is not: a general tensor-map builder (rank 3, tiled mode, no interleave, zero fill).
#pragma once

#include <cuda.h>  // CUtensorMap (a type only)

#include <cstdint>

#include "core/dtype.h"

namespace cplab::cuda::detail {

// x (rows, heads, d), bf16 or fp16, device memory 16-byte aligned; throws std::runtime_error
// naming the failed call (cplab::Error for a rule the shapes break)
CUtensorMap tma_tile_map(DType dtype, const void* x, std::int64_t rows, std::int64_t heads, std::int64_t d, int box_rows);

// throws cplab::Error naming the device and its compute capability unless it is 9.0
void v3_check_device();

}  // namespace cplab::cuda::detail
