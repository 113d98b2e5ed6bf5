// check.h: CPLAB_CUDA_CHECK(call), the one way cplab checks a CUDA runtime API call.
//
// What it is: evaluates `call` (a cudaError_t expression) once; on anything but cudaSuccess it
// throws std::runtime_error("CUDA error: <call text> at <file>:<line>: <cudaGetErrorString>").
// Usable from host code in .cu and .cpp files.
// What it is not: a device-side assert, or a check for kernel faults that have not surfaced yet
// (after a launch, check cudaGetLastError(); asynchronous faults appear at the next synchronising call).
#pragma once

#include <cuda_runtime.h>

#include <stdexcept>
#include <string>

namespace cplab::cuda::detail {

[[noreturn]] inline void throw_cuda_error(cudaError_t err, const char* call, const char* file,
                                          int line) {
  throw std::runtime_error(std::string("CUDA error: ") + call + " at " + file + ":" +
                           std::to_string(line) + ": " + cudaGetErrorString(err));
}

}  // namespace cplab::cuda::detail

#define CPLAB_CUDA_CHECK(call)                                                           \
  do {                                                                                   \
    const cudaError_t cplab_cuda_check_err_ = (call);                                    \
    if (cplab_cuda_check_err_ != cudaSuccess)                                            \
      ::cplab::cuda::detail::throw_cuda_error(cplab_cuda_check_err_, #call, __FILE__, __LINE__); \
  } while (0)
