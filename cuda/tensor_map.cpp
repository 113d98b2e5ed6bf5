// tensor_map.cpp: tma_tile_map and v3_check_device (see tensor_map.h).
//
// What it is: the one place cplab calls the CUDA driver API, through a function pointer the
// runtime hands out (cudaGetDriverEntryPointByVersion), looked up once per process.
// What it is not: device code.
#include "tensor_map.h"

#include <cudaTypedefs.h>  // PFN_cuTensorMapEncodeTiled
#include <cuda_runtime.h>

#include <mutex>
#include <stdexcept>
#include <string>

#include "check.h"
#include "core/error.h"
#include "emulation_seam.h"  // CPLAB_EMULATE: the driver's encoder is the emulation's (tests/cuda/emu/tma_emu.h)

namespace cplab::cuda::detail {

namespace {

PFN_cuTensorMapEncodeTiled_v12000 encode_fn() {
#ifdef CPLAB_EMULATE
  return cplab_emu::encode_tiled;
#else
  static PFN_cuTensorMapEncodeTiled_v12000 fn = nullptr;
  static std::once_flag once;
  std::call_once(once, [] {
    void* p = nullptr;
    cudaDriverEntryPointQueryResult q{};
    CPLAB_CUDA_CHECK(cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &p, 12000, cudaEnableDefault, &q));
    if (q != cudaDriverEntryPointSuccess || !p)
      throw std::runtime_error("CUDA driver: cuTensorMapEncodeTiled is not available (driver too old for TMA?)");
    fn = reinterpret_cast<PFN_cuTensorMapEncodeTiled_v12000>(p);
  });
  return fn;
#endif
}

}  // namespace

CUtensorMap tma_tile_map(DType dtype, const void* x, std::int64_t rows, std::int64_t heads, std::int64_t d, int box_rows) {
  require(dtype == DType::bf16 || dtype == DType::f16, "a TMA tile map takes bf16 or fp16, not " + to_string(dtype));
  require(d % 64 == 0 && rows > 0 && heads > 0 && box_rows > 0 && box_rows <= 256,
          "a TMA tile map needs d a multiple of 64, rows and heads > 0, 1..256 box rows");
  require(reinterpret_cast<std::uintptr_t>(x) % 16 == 0, "TMA needs a 16-byte aligned tensor address");
  const cuuint64_t dims[3] = {static_cast<cuuint64_t>(d), static_cast<cuuint64_t>(heads), static_cast<cuuint64_t>(rows)};
  const cuuint64_t strides[2] = {static_cast<cuuint64_t>(d) * 2, static_cast<cuuint64_t>(heads * d) * 2};  // bytes, dims 1 and 2
  const cuuint32_t box[3] = {64, 1, static_cast<cuuint32_t>(box_rows)};
  const cuuint32_t step[3] = {1, 1, 1};
  CUtensorMap map{};
  const CUresult r = encode_fn()(&map, dtype == DType::bf16 ? CU_TENSOR_MAP_DATA_TYPE_BFLOAT16 : CU_TENSOR_MAP_DATA_TYPE_FLOAT16,
                                 3, const_cast<void*>(x), dims, strides, box, step, CU_TENSOR_MAP_INTERLEAVE_NONE,
                                 CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  if (r != CUDA_SUCCESS)
    throw std::runtime_error("CUDA driver error: cuTensorMapEncodeTiled (rows " + std::to_string(rows) + ", heads " +
                             std::to_string(heads) + ", d " + std::to_string(d) + ") returned CUresult " + std::to_string(static_cast<int>(r)));
  return map;
}

void v3_check_device() {
  int dev = 0, major = 0, minor = 0;
  CPLAB_CUDA_CHECK(cudaGetDevice(&dev));
  CPLAB_CUDA_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev));
  CPLAB_CUDA_CHECK(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, dev));
  require(major == 9 && minor == 0, "kernel v3 (wgmma + TMA) needs a compute capability 9.0 GPU (H100, H200); device " +
                                        std::to_string(dev) + " is " + std::to_string(major) + "." + std::to_string(minor) +
                                        " (use --kernel v2)");
}

}  // namespace cplab::cuda::detail
