// inputs.h: the benchmark's input values, the same on the GPU and in the CPU reference.
//
// What it is: input_uniform(tensor, i), a stateless hash (splitmix64) of the element index giving
// uniform(-1, 1), and input_value(), that value rounded to the dtype (round_to): exactly what
// the kernels read. The device arrays are filled from input_uniform (attention_run.cpp), and the
// reference rebuilds any element it needs from its index alone (attention_check.cpp), so no
// host copy of a whole tensor is kept. Element i of a tensor is its batch-wide token-major index
// ((token * heads + head) * head_dim + e), token in [0, b*s); sequence j owns tokens [j*s, (j+1)*s).
// What it is not: a random-number generator with state, or a statistically strong one.
#pragma once

#include <cstdint>

#include "dtype.h"

namespace cplab::bench {

enum class Input : std::uint64_t { q = 1, k = 2, v = 3, dout = 4 };

inline double input_uniform(Input t, std::uint64_t i) {
  std::uint64_t z = (static_cast<std::uint64_t>(t) << 56) + i + 0x9e3779b97f4a7c15ULL;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  z ^= z >> 31;
  return static_cast<double>(z >> 11) * 0x1.0p-52 - 1.0;  // [0, 2^53) * 2^-52 - 1 = [-1, 1)
}

inline double input_value(Input t, std::uint64_t i, DType dtype) { return round_to(input_uniform(t, i), dtype); }

}  // namespace cplab::bench
