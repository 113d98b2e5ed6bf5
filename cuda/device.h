// device.h: what CUDA devices this process can see, asked without ever throwing or crashing.
//
// What it is: device_count() (0 on machines with no driver or no GPU), device_unusable_reason()
// (why device 0 cannot be used, for "skipped: ..." messages) and device_summary() (one line
// describing device 0), all built on the CUDA runtime API only, so they work on CPU-only machines.
// What it is not: device selection or multi-GPU management (cplab uses device 0), nor NCCL.
#pragma once

#include <string>

namespace cplab::cuda {

// Number of CUDA devices; 0 when there is no driver / no device / any runtime error. Never throws.
int device_count() noexcept;

// "" when device 0 is usable (visible, and a runtime context can be created on it); otherwise the
// reason, as cudaGetErrorString text (or "no CUDA device found" when the runtime sees none).
std::string device_unusable_reason();

// "NVIDIA H100 80GB HBM3, compute capability 9.0, 79.1 GiB, 132 SMs" for device 0,
// or "no CUDA device: <reason>".
std::string device_summary();

}  // namespace cplab::cuda
