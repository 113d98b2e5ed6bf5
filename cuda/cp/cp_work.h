// cp_work.h: what every GPU context-parallel mode shares for running and timing: CpWork (all work,
// compute only or transfers only), TileTimes (per step and rank GPU times of the compute) and Nvtx
// (a named range for Nsight Systems).
//
// What it is: the benchmark hooks of ring_gpu.h, allgather_gpu.h, ulysses_gpu.h and hcp_gpu.h.
// cplab-bench cp reads the share of communication hidden behind compute from the times of the
// three CpWork runs, and exports TileTimes into the reference's trace (steps numbered as the
// reference's trace numbers them: trace_plan.h).
// What it is not: a profiler (Nsight Systems reads the NVTX ranges), or thread-safe.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <string>
#include <vector>

namespace cplab::cuda {

// What a run does, for benchmarks: everything, or only its attention tiles (and merges), or only
// its transfers (with the packing and unpacking around them). Only `all` computes attention; the
// others leave the outputs meaningless.
enum class CpWork { all, compute_only, comm_only };
inline bool does_compute(CpWork w) { return w != CpWork::comm_only; }
inline bool does_comm(CpWork w) { return w != CpWork::compute_only; }

// Optional GPU timing of the compute of every (step, driven rank): start/stop are recorded on the
// rank's compute stream around the step's tiles (all of them when a step has several); after the
// run, ms(step, i) is the i-th driven rank's time at that step (0 where nothing was recorded).
// Events are created on first use and reused.
class TileTimes {
 public:
  TileTimes() = default;
  TileTimes(const TileTimes&) = delete;
  TileTimes& operator=(const TileTimes&) = delete;
  ~TileTimes();
  void reset(std::int64_t steps, std::size_t ranks);  // forgets earlier records
  void start(std::int64_t step, std::size_t i, cudaStream_t s);
  void stop(std::int64_t step, std::size_t i, cudaStream_t s);
  double ms(std::int64_t step, std::size_t i) const;  // synchronizes on the stop event

 private:
  std::size_t index(std::int64_t step, std::size_t i) const;  // throws std::out_of_range
  std::size_t ranks_ = 0;
  std::vector<cudaEvent_t> start_, stop_;
  std::vector<char> used_;
};

// An NVTX range (Nsight Systems), closed at the end of the scope.
class Nvtx {
 public:
  explicit Nvtx(const std::string& name);
  ~Nvtx();
  Nvtx(const Nvtx&) = delete;
  Nvtx& operator=(const Nvtx&) = delete;
};

}  // namespace cplab::cuda
