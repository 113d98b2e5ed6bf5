// stream.h: Stream and Event, move-only owners of a cudaStream_t and a cudaEvent_t.
//
// What it is: RAII for the two CUDA objects the CP code juggles per rank: created checked
// (CPLAB_CUDA_CHECK names the call), destroyed in the destructor (errors ignored: destructors must
// not throw); record / wait helpers that are checked too.
// What it is not: a scheduler, or a pool (each rank owns a few of each).
#pragma once

#include <cuda_runtime.h>

#include <utility>

#include "check.h"

namespace cplab::cuda {

class Stream {
 public:
  Stream() { CPLAB_CUDA_CHECK(cudaStreamCreateWithFlags(&s_, cudaStreamNonBlocking)); }
  ~Stream() {
    if (s_) (void)cudaStreamDestroy(s_);
  }
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;
  Stream(Stream&& o) noexcept : s_(std::exchange(o.s_, nullptr)) {}
  Stream& operator=(Stream&& o) noexcept {
    std::swap(s_, o.s_);
    return *this;
  }
  cudaStream_t get() const { return s_; }
  void sync() const { CPLAB_CUDA_CHECK(cudaStreamSynchronize(s_)); }

 private:
  cudaStream_t s_ = nullptr;
};

class Event {
 public:
  Event() { CPLAB_CUDA_CHECK(cudaEventCreateWithFlags(&e_, cudaEventDisableTiming)); }
  ~Event() {
    if (e_) (void)cudaEventDestroy(e_);
  }
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;
  Event(Event&& o) noexcept : e_(std::exchange(o.e_, nullptr)) {}
  Event& operator=(Event&& o) noexcept {
    std::swap(e_, o.e_);
    return *this;
  }
  cudaEvent_t get() const { return e_; }
  void record(cudaStream_t s) { CPLAB_CUDA_CHECK(cudaEventRecord(e_, s)); }
  // work queued on s after this call waits for the last record()
  void wait_on(cudaStream_t s) const { CPLAB_CUDA_CHECK(cudaStreamWaitEvent(s, e_, 0)); }

 private:
  cudaEvent_t e_ = nullptr;
};

}  // namespace cplab::cuda
