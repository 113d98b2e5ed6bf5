// device_buffer.h: DeviceBuffer<T>, a move-only owner of n elements of cudaMalloc'd GPU memory.
//
// What it is: RAII for a flat device array: allocates in the constructor (checked), frees in the
// destructor, and copies whole buffers to/from host memory with checked, synchronous cudaMemcpy.
// What it is not: a tensor (no shape; callers document shapes), a stream-ordered or pooled
// allocator, or something that can be copied (move it instead).
#pragma once

#include "check.h"

#include <cuda_runtime.h>

#include <cstddef>
#include <span>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>

namespace cplab::cuda {

template <typename T>
class DeviceBuffer {
  static_assert(std::is_trivially_copyable_v<T>, "DeviceBuffer<T> holds raw bytes: T must be trivially copyable");

 public:
  DeviceBuffer() = default;
  explicit DeviceBuffer(std::size_t n) : n_(n) {
    if (n_ > 0) CPLAB_CUDA_CHECK(cudaMalloc(reinterpret_cast<void**>(&ptr_), n_ * sizeof(T)));
  }
  ~DeviceBuffer() { reset(); }

  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  DeviceBuffer(DeviceBuffer&& other) noexcept
      : ptr_(std::exchange(other.ptr_, nullptr)), n_(std::exchange(other.n_, 0)) {}
  DeviceBuffer& operator=(DeviceBuffer&& other) noexcept {
    if (this != &other) {
      reset();
      ptr_ = std::exchange(other.ptr_, nullptr);
      n_ = std::exchange(other.n_, 0);
    }
    return *this;
  }

  T* data() noexcept { return ptr_; }              // device pointer, n elements
  const T* data() const noexcept { return ptr_; }  // device pointer, n elements
  std::size_t size() const noexcept { return n_; }

  // host (size() elements) -> device; blocks until done
  void copy_from_host(std::span<const T> host) {
    check_size(host.size());
    if (n_ > 0) CPLAB_CUDA_CHECK(cudaMemcpy(ptr_, host.data(), n_ * sizeof(T), cudaMemcpyHostToDevice));
  }
  // device -> host (size() elements); blocks until done (so it also surfaces earlier kernel faults)
  void copy_to_host(std::span<T> host) const {
    check_size(host.size());
    if (n_ > 0) CPLAB_CUDA_CHECK(cudaMemcpy(host.data(), ptr_, n_ * sizeof(T), cudaMemcpyDeviceToHost));
  }

  // free now (errors are ignored: destructors must not throw)
  void reset() noexcept {
    if (ptr_ != nullptr) (void)cudaFree(ptr_);
    ptr_ = nullptr;
    n_ = 0;
  }

 private:
  void check_size(std::size_t host_n) const {
    if (host_n != n_)
      throw std::invalid_argument("DeviceBuffer: host span has " + std::to_string(host_n) +
                                  " elements, device buffer has " + std::to_string(n_));
  }

  T* ptr_ = nullptr;
  std::size_t n_ = 0;
};

}  // namespace cplab::cuda
