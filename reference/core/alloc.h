// alloc.h: big allocations that fail with a message instead of an anonymous std::bad_alloc.
//
// What it is: alloc_vector<T>(n, what), a zero-initialised std::vector<T> of n elements whose
// std::bad_alloc (or a length past what the vector can hold) becomes cplab::Error
// "out of memory allocating 3.2 GiB for <what>"; `what` is a callable returning the description, so
// no string is built unless the allocation fails. bytes_text(2.5e9) = "2.3 GiB", the one way sizes
// are printed in memory messages (run/memory_estimate.h uses it too).
// Used where the reference allocates its big buffers: Tensor3 (core/tensor.h), the .npy reader's
// data (run/npy.cpp). Anything else that runs out of memory inside a run is caught by
// run_experiment (run/experiment.cpp), which names the run's estimated peak.
// What it is not: a memory limit (run/memory_estimate.h checks the estimate before a run starts),
// or an allocator.
#pragma once

#include <cstddef>
#include <cstdio>
#include <new>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/error.h"

namespace cplab {

// "812 B", "4.0 KiB", "320.0 MiB", "2.3 GiB"
inline std::string bytes_text(double bytes) {
  const char* unit[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  int u = 0;
  while (bytes >= 1024.0 && u < 6) bytes /= 1024.0, ++u;
  char b[48];
  std::snprintf(b, sizeof b, u == 0 ? "%.0f %s" : "%.1f %s", bytes, unit[u]);
  return b;
}

[[noreturn]] inline void throw_out_of_memory(double bytes, const std::string& what) {
  throw Error("out of memory allocating " + bytes_text(bytes) + " for " + what);
}

template <class T, class What>
std::vector<T> alloc_vector(std::size_t n, What&& what) {
  try {
    return std::vector<T>(n, T(0));
  } catch (const std::bad_alloc&) {
    throw_out_of_memory(static_cast<double>(n) * sizeof(T), what());
  } catch (const std::length_error&) {
    throw_out_of_memory(static_cast<double>(n) * sizeof(T), what());
  }
}

}  // namespace cplab
