// cp_work.cpp: TileTimes and Nvtx (see cp_work.h).
#include "cp_work.h"

#include <stdexcept>

#include <nvtx3/nvToolsExt.h>

#include "check.h"

namespace cplab::cuda {

std::size_t TileTimes::index(std::int64_t step, std::size_t i) const {
  if (step < 0 || i >= ranks_ || static_cast<std::size_t>(step) * ranks_ + i >= used_.size())
    throw std::out_of_range("TileTimes: step " + std::to_string(step) + ", rank index " + std::to_string(i) +
                            " is outside the " + std::to_string(ranks_ == 0 ? 0 : used_.size() / ranks_) + " steps x " +
                            std::to_string(ranks_) + " ranks of reset()");
  return static_cast<std::size_t>(step) * ranks_ + i;
}

void TileTimes::reset(std::int64_t steps, std::size_t ranks) {
  ranks_ = ranks;
  const std::size_t n = static_cast<std::size_t>(steps) * ranks;
  while (start_.size() < n) {
    cudaEvent_t a = nullptr, b = nullptr;
    CPLAB_CUDA_CHECK(cudaEventCreate(&a));
    CPLAB_CUDA_CHECK(cudaEventCreate(&b));
    start_.push_back(a);
    stop_.push_back(b);
  }
  used_.assign(n, 0);
}

void TileTimes::start(std::int64_t step, std::size_t i, cudaStream_t s) {
  CPLAB_CUDA_CHECK(cudaEventRecord(start_[index(step, i)], s));
}

void TileTimes::stop(std::int64_t step, std::size_t i, cudaStream_t s) {
  const std::size_t k = index(step, i);
  CPLAB_CUDA_CHECK(cudaEventRecord(stop_[k], s));
  used_[k] = 1;
}

double TileTimes::ms(std::int64_t step, std::size_t i) const {
  if (step < 0 || i >= ranks_) return 0;
  const std::size_t k = static_cast<std::size_t>(step) * ranks_ + i;
  if (k >= used_.size() || !used_[k]) return 0;
  CPLAB_CUDA_CHECK(cudaEventSynchronize(stop_[k]));
  float ms = 0;
  CPLAB_CUDA_CHECK(cudaEventElapsedTime(&ms, start_[k], stop_[k]));
  return ms;
}

TileTimes::~TileTimes() {
  for (cudaEvent_t e : start_) (void)cudaEventDestroy(e);
  for (cudaEvent_t e : stop_) (void)cudaEventDestroy(e);
}

Nvtx::Nvtx(const std::string& name) { nvtxRangePushA(name.c_str()); }
Nvtx::~Nvtx() { nvtxRangePop(); }

}  // namespace cplab::cuda
