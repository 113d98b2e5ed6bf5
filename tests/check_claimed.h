// check_claimed.h: correct or faulty outputs handed to cplab check's library as "claimed" outputs.
//
// What it is: claimed(in, outs, dtype), the CheckData (check_inputs.h) a `cplab check` run would read
// from files: the inputs, and outs (o, lse (S, h, 1), dq, dk, dv in global order; an empty tensor =
// not given) as if saved in dtype. Shared by tests/test_check.cpp and lesson 15.
// What it is not: the faults (check_faults.h) or file reading (load_check_data).
#pragma once

#include <array>

#include "check/check_inputs.h"

namespace cplab::test {

inline CheckData claimed(const Inputs& in, const std::array<Tensor3<double>, 5>& outs, NpyDtype dtype) {
  CheckData d;
  d.in = in;
  d.inputs_dir = d.outputs_dir = "(in memory)";
  for (int t = 0; t < kCheckTensors; ++t) {
    ClaimedTensor& c = d.out[static_cast<size_t>(t)];
    c.present = outs[static_cast<size_t>(t)].n > 0, c.dtype = dtype, c.source = "(in memory)";
    c.x = outs[static_cast<size_t>(t)];
  }
  return d;
}

}  // namespace cplab::test
