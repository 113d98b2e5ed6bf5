// device_buffer.h: DeviceBuffer<T>, a move-only owner of n elements of cudaMalloc'd GPU memory.
//
// What it is: RAII for a flat device array: allocates in the constructor (checked), frees in the
// destructor, and copies whole buffers to/from host memory with checked, synchronous cudaMemcpy;
// and upload_sync, the one host -> device upload that is complete when it returns.
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

// host -> device (any device: cudaMemcpyDefault), complete when it returns. A plain cudaMemcpy from
// pageable memory may return once the data is staged, before its DMA lands, and cplab's streams
// are non-blocking, so they would not wait for it: the legacy stream is synchronized here. For
// set-up (inputs, masks, index lists), not for timed loops.
inline void upload_sync(void* dst, const void* src, std::size_t bytes) {
  if (bytes == 0) return;
  CPLAB_CUDA_CHECK(cudaMemcpy(dst, src, bytes, cudaMemcpyDefault));
  CPLAB_CUDA_CHECK(cudaStreamSynchronize(cudaStreamLegacy));
}

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

  // host (size() elements) -> device; complete when it returns (upload_sync)
  void copy_from_host(std::span<const T> host) {
    check_size(host.size());
    upload_sync(ptr_, host.data(), n_ * sizeof(T));
  }
  // device -> host (size() elements); blocks until the copy is done. It does not wait for work on
  // cplab's (non-blocking) streams: synchronize the streams that write this buffer first.
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
