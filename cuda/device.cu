// device.cu: device_count / device_unusable_reason / device_fault / no_device_exit /
// device_summary (see device.h).
//
// What it is: thin wrappers over cudaGetDeviceCount / cudaSetDevice + cudaFree(0) /
// cudaGetDeviceProperties that turn every failure into a count of 0 or a reason string, and the
// skip-or-fail rule built on them.
// What it is not: a place that throws; every error is reported, then cleared with cudaGetLastError.
#include "device.h"

#include <cuda_runtime.h>

#include <cstdio>
#include <sys/stat.h>

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

struct Probe {
  cudaError_t err = cudaSuccess;  // cudaErrorNoDevice also when the device index is out of range
  std::string reason;             // "" when usable
};

// Creates a context on `device` (cudaFree(0)) and puts the thread's current device back.
Probe probe(int device) {
  int n = 0;
  if (const cudaError_t err = query_count(n); err != cudaSuccess) return {err, cudaGetErrorString(err)};
  if (n == 0) return {cudaErrorNoDevice, "no CUDA device found"};
  if (device < 0 || device >= n)
    return {cudaErrorNoDevice, "CUDA device " + std::to_string(device) + " does not exist (" + std::to_string(n) + " visible)"};
  int prev = -1;
  if (cudaGetDevice(&prev) != cudaSuccess) {
    prev = -1;
    (void)cudaGetLastError();
  }
  cudaError_t err = cudaSetDevice(device);
  if (err == cudaSuccess) err = cudaFree(nullptr);  // forces context creation on the device
  if (err != cudaSuccess) (void)cudaGetLastError();
  if (prev >= 0 && prev != device) (void)cudaSetDevice(prev);
  if (err != cudaSuccess) return {err, cudaGetErrorString(err)};
  return {};
}

bool nvidia_driver_present() {
  struct stat st {};
  return stat("/dev/nvidiactl", &st) == 0;
}

bool is_fault(const Probe& p) { return !p.reason.empty() && p.err != cudaErrorNoDevice && nvidia_driver_present(); }

}  // namespace

int device_count() noexcept {
  int n = 0;
  (void)query_count(n);
  return n;
}

std::string device_unusable_reason(int device) { return probe(device).reason; }

bool device_fault(int device) { return is_fault(probe(device)); }

std::optional<int> no_device_exit(const std::string& who) {
  const Probe p = probe(0);
  if (p.reason.empty()) return std::nullopt;
  if (is_fault(p)) {
    std::printf("%serror: this machine has an NVIDIA driver (/dev/nvidiactl) but CUDA cannot use device 0: %s\n", who.c_str(),
                p.reason.c_str());
    std::fflush(stdout);
    return 1;
  }
  std::printf("%sskipped: no CUDA device (%s)\n", who.c_str(), p.reason.c_str());
  std::fflush(stdout);
  return 77;
}

std::string device_summary() {
  const std::string reason = device_unusable_reason(0);
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
