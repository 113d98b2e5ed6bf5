// device.h: what CUDA devices this process can see, asked without ever throwing or crashing, and
// the one rule for what a program does when it has none (skip, or fail on a broken GPU machine).
//
// What it is: device_count() (0 on machines with no driver or no GPU), device_unusable_reason()
// (why a device cannot be used, for "skipped: ..." messages), device_summary() (one line
// describing device 0) and no_device_exit() (the skip-or-fail decision of every GPU test and
// program), all built on the CUDA runtime API only, so they work on CPU-only machines.
// What it is not: device selection or multi-GPU management (each probe leaves the calling thread's
// current device as it found it), nor NCCL.
#pragma once

#include <optional>
#include <string>

namespace cplab::cuda {

// Number of CUDA devices; 0 when there is no driver / no device / any runtime error. Never throws.
int device_count() noexcept;

// "" when `device` is usable (visible, and a runtime context can be created on it); otherwise the
// reason, as cudaGetErrorString text (or "no CUDA device found" when the runtime sees none, or
// "CUDA device 3 does not exist (2 visible)"). The calling thread's current device is restored.
std::string device_unusable_reason(int device = 0);

// True when `device` cannot be used although this machine has an NVIDIA driver (/dev/nvidiactl
// exists) and the runtime's error is not "no device" (which CUDA_VISIBLE_DEVICES="" also gives):
// a too-old driver, a GPU held exclusively by another process, a failed context. Such a machine
// must not report GPU tests as skipped. False when the device is usable.
bool device_fault(int device = 0);

// The rule of every program and test that needs a GPU: std::nullopt when device 0 is usable.
// Otherwise prints one line to stdout and returns the exit status: 77 (ctest's SKIP_RETURN_CODE)
// with "<who>skipped: no CUDA device (<reason>)", or, when device_fault(0), 1 with
// "<who>error: this machine has an NVIDIA driver (/dev/nvidiactl) but CUDA cannot use device 0:
// <reason>". `who` is a prefix such as "cplab-bench: " (may be empty).
std::optional<int> no_device_exit(const std::string& who);

// "NVIDIA H100 80GB HBM3, compute capability 9.0, 79.1 GiB, 132 SMs" for device 0,
// or "no CUDA device: <reason>".
std::string device_summary();

}  // namespace cplab::cuda
