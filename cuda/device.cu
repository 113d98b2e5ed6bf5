// device.cu: device_count / device_unusable_reason / device_summary (see device.h).
//
// What it is: thin wrappers over cudaGetDeviceCount / cudaFree(0) / cudaGetDeviceProperties that
// turn every failure into a count of 0 or a reason string.
// What it is not: a place that throws; every error is reported, then cleared with cudaGetLastError.
#include "device.h"

#include <cuda_runtime.h>

#include <cstdio>

namespace cplab::cuda {

namespace {

// cudaGetDeviceCount leaves `n` untouched on failure (e.g. cudaErrorInsufficientDriver with no
// driver), so it starts at 0 and the return code decides.
cudaError_t query_count(int& n) noexcept {
  n = 0;
  const cudaError_t err = cudaGetDeviceCount(&n);
  if (err != cudaSuccess) {
    n = 0;
    (void)cudaGetLastError();  // clear the (non-sticky) error so later calls start clean
  }
  return err;
}

}  // namespace

int device_count() noexcept {
  int n = 0;
  (void)query_count(n);
  return n;
}

std::string device_unusable_reason() {
  int n = 0;
  cudaError_t err = query_count(n);
  if (err != cudaSuccess) return cudaGetErrorString(err);
  if (n == 0) return "no CUDA device found";
  err = cudaSetDevice(0);
  if (err == cudaSuccess) err = cudaFree(nullptr);  // forces context creation on device 0
  if (err != cudaSuccess) {
    (void)cudaGetLastError();
    return cudaGetErrorString(err);
  }
  return "";
}

std::string device_summary() {
  const std::string reason = device_unusable_reason();
  if (!reason.empty()) return "no CUDA device: " + reason;
  cudaDeviceProp prop{};
  const cudaError_t err = cudaGetDeviceProperties(&prop, 0);
  if (err != cudaSuccess) {
    (void)cudaGetLastError();
    return std::string("no CUDA device: ") + cudaGetErrorString(err);
  }
  char buf[512];
  std::snprintf(buf, sizeof buf, "%s, compute capability %d.%d, %.1f GiB, %d SMs", prop.name,
                prop.major, prop.minor,
                static_cast<double>(prop.totalGlobalMem) / (1024.0 * 1024.0 * 1024.0),
                prop.multiProcessorCount);
  return buf;
}

}  // namespace cplab::cuda
