// inputs.h: the benchmark's input values, the same on the GPU and in the CPU reference.
//
// What it is: input_uniform(tensor, i), a stateless hash (splitmix64) of the element index giving
// uniform(-1, 1), and input_value(), that value rounded to the dtype (round_to): exactly what
// the kernels read. The device arrays are filled through input_bytes / input_rows (attention_run.cpp,
// cp_bench.cpp): the same bits as to_dtype of input_value's numbers (a value of the dtype rounds to
// itself), from one to_dtype per run of elements instead of a round_to (two heap vectors) per
// element. The reference rebuilds any element it needs from its index alone (attention_check.cpp),
// so no host copy of a whole tensor is kept. Element i of a tensor is its batch-wide token-major index
// ((token * heads + head) * head_dim + e), token in [0, b*s); sequence j owns tokens [j*s, (j+1)*s).
// What it is not: a random-number generator with state, or a statistically strong one.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "core/dtype.h"

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

// elements [i0, i0 + n) of tensor t as the bytes of a device array of dtype (n * dtype_size(dtype)
// bytes at out): to_dtype of input_value(t, i, dtype) for each i, bit for bit
inline void input_bytes(Input t, std::uint64_t i0, std::size_t n, DType dtype, std::byte* out) {
  std::vector<double> x(n);
  for (std::size_t i = 0; i < n; ++i) x[i] = input_uniform(t, i0 + i);
  const std::vector<std::byte> b = to_dtype(x, dtype);
  std::memcpy(out, b.data(), b.size());
}

// the tokens tokens[0, count) of tensor t, `width` elements each (element token * width + c), in
// that order: count * width elements of dtype at out. Rows in parallel (OpenMP).
inline void input_rows(Input t, const std::int64_t* tokens, std::size_t count, std::int64_t width, DType dtype, std::byte* out) {
  const auto w = static_cast<std::size_t>(width);
#pragma omp parallel for schedule(static)
  for (std::int64_t i = 0; i < static_cast<std::int64_t>(count); ++i)
    input_bytes(t, static_cast<std::uint64_t>(tokens[i] * width), w, dtype, out + static_cast<std::size_t>(i) * w * dtype_size(dtype));
}

}  // namespace cplab::bench
