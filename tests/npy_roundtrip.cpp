// npy_roundtrip.cpp: test helper for tests/npy_numpy_check.py.
//
// What it is: `npy_roundtrip IN.npy OUT.npy` reads IN with cplab::npy_read and writes 2*values to OUT
// with the same dtype ('<f4' or '<f8') and shape; a float16 or bfloat16 input is written as '<f8'
// (cplab writes float32 and float64 only). On a cplab::Error it prints
// "npy_roundtrip: error: <msg>" to stderr and exits 2; on bad usage it exits 1.
// What it is not: a user-facing tool; it exists so NumPy can check our files both ways.
#include <cstdio>
#include <exception>
#include <vector>

#include "run/npy.h"

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: npy_roundtrip IN.npy OUT.npy\n");
    return 1;
  }
  try {
    const cplab::NpyArray a = cplab::npy_read(argv[1]);
    if (a.dtype == cplab::NpyDtype::f4) {
      std::vector<float> out(a.values.size());
      for (std::size_t i = 0; i < out.size(); ++i) out[i] = static_cast<float>(2.0 * a.values[i]);
      cplab::npy_write(argv[2], a.shape, out.data());
    } else {
      std::vector<double> out(a.values.size());
      for (std::size_t i = 0; i < out.size(); ++i) out[i] = 2.0 * a.values[i];
      cplab::npy_write(argv[2], a.shape, out.data());
    }
  } catch (const cplab::Error& e) {
    std::fprintf(stderr, "npy_roundtrip: error: %s\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "npy_roundtrip: internal error: %s\n", e.what());
    return 3;
  }
  return 0;
}
