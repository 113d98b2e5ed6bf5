// arrays.h: Python array objects as the C++ side's TensorSource (run/tensor_source.h).
//
// What it is: ArrayHold, which keeps, for one call, the nanobind views of the caller's arrays and the
// copies some of them needed; hold.source(obj, name, bf16) makes a TensorSource of a CPU array
// object exposing DLPack or the buffer protocol (NumPy, PyTorch CPU tensors, JAX CPU arrays),
// float16 / bfloat16 / float32 / float64:
//   - C-contiguous: the source points at the array's own memory (no copy; float64 is then used in
//     place by the reference, Tensor3::borrow);
//   - any other strides (a transposed or sliced view): one copy, C-ordered, into the hold;
//   - a tuple (uint16 array, True): the array holds bfloat16 bits (ml_dtypes' bfloat16 NumPy arrays
//     reach here as their uint16 view, python/cplab/_arrays.py); torch.bfloat16 arrives through
//     DLPack as is.
// Refused with TypeError naming the argument: not an array, not on the CPU, another dtype (int,
// complex, float8, ...), a byte order other than little-endian; nothing is read before these checks.
// The hold must outlive the call's use of the sources and be destroyed with the GIL held.
// What it is not: shape rules (the C++ commands check shapes, app/embedded.h), or conversion to
// double (TensorSource::values).
#pragma once

#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>

#include <cstddef>
#include <deque>
#include <string>
#include <vector>

#include "run/tensor_source.h"

namespace cplab::py {

namespace nb = nanobind;

class ArrayHold {
 public:
  TensorSource source(nb::handle obj, const std::string& name);

 private:
  std::deque<nb::ndarray<nb::ro>> views_;
  std::deque<std::vector<std::byte>> copies_;
};

}  // namespace cplab::py
