// test_bytes.h: byte-level test data for the GPU copy kernels' tests (layout and THD).
//
// What it is: random_bytes (splitmix64 of the byte index and a seed), random_elems<T> (any bit
// pattern, compared as bytes, never as values) and bytes_of (a vector's raw bytes).
// What it is not: used by the library; tests only.
#pragma once

#include <cstdint>
#include <cstring>
#include <vector>

namespace cplab::cuda::test {

// n pseudo-random bytes: rows of >= 2 bytes differ
inline std::vector<unsigned char> random_bytes(std::size_t n, std::uint64_t seed) {
  std::vector<unsigned char> v(n);
  for (std::size_t i = 0; i < n; ++i) {
    std::uint64_t z = (i + 1) * 0x9E3779B97F4A7C15ull + seed;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    v[i] = static_cast<unsigned char>(z ^ (z >> 31));
  }
  return v;
}

template <typename T>
std::vector<T> random_elems(std::size_t n, std::uint64_t seed) {
  const std::vector<unsigned char> b = random_bytes(n * sizeof(T), seed);
  std::vector<T> v(n);
  std::memcpy(static_cast<void*>(v.data()), b.data(), b.size());
  return v;
}

template <typename T>
std::vector<unsigned char> bytes_of(const std::vector<T>& v) {
  std::vector<unsigned char> b(v.size() * sizeof(T));
  std::memcpy(b.data(), static_cast<const void*>(v.data()), b.size());
  return b;
}

}  // namespace cplab::cuda::test
