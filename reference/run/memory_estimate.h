// memory_estimate.h: how much memory `cplab run` (run_experiment) will need, before it allocates.
//
// What it is: estimate_memory(spec), the peak resident memory of one run of the CPU reference,
// derived from what the code allocates (run/memory_estimate.cpp lists every term and where it comes
// from): the double inputs, the dtype-rounded per-rank shards and their copies in CpState, each
// mode's saved state, messages in flight and buffers (the ring's KV blocks, all-gather's gathered K
// and V on every rank, the all-to-alls' send and receive buffers), the gradients, the per-thread
// score blocks of the attention kernel, the results converted to double, the dense oracle with its
// own copies, and the trace's events. The peak is the largest of the run's phases (the CP forward,
// the CP backward, the conversion of the results, the dense oracle); message buffers that were
// freed are counted once more, because the C library may keep their pages (small blocks stay on
// its heap). tests/memory_check.py compares this estimate with the measured peak RSS of real runs.
// validate() (experiment.h) refuses a run whose estimate is above kMaxRunMemory.
// What it is not: a measurement, or a bound for other programs (cplab-bench, the tutorials). The
// .npy files' own transient (one file's values while it is read) is below every run's peak.
#pragma once

#include <string>

#include "run/experiment.h"

namespace cplab {

inline constexpr double kMaxRunMemory = 16.0 * 1024 * 1024 * 1024;  // bytes: the CPU reference's limit

struct MemoryEstimate {
  double bytes = 0;      // the peak, in bytes (a double: absurd sizes must not overflow before they are refused)
  std::string phase;     // where it peaks: "the CP forward", "the CP backward", "the results", "the dense oracle"
  double inputs = 0;     // of which: the double Q, K, V (and dO) the run starts from
};

// the peak resident memory of run_experiment(s, inputs), with omp_get_max_threads() threads
MemoryEstimate estimate_memory(const RunSpec& s);

}  // namespace cplab
