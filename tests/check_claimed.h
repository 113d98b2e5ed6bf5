// check_claimed.h: correct or faulty outputs handed to cplab check's library as "claimed" outputs.
//
// What it is: claimed(in, outs, dtype), the CheckData (check_inputs.h) a `cplab check` run would read
// from files: the inputs, and outs (o, lse (S, h, 1), dq, dk, dv in global order; an empty tensor =
// not given) as if saved in dtype; correct_run, the correct run whose outputs they start from. Shared
// by the check tests and lesson 15.
// What it is not: the faults (check_faults.h) or file reading (load_check_data).
#pragma once

#include <array>

#include "check/check_inputs.h"
#include "run/experiment.h"

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

// a correct CP run under CpSpec(f), forward and backward, on the seeded inputs: its spec, inputs and
// outputs (o, lse (S, h, 1), dq, dk, dv in global order), the correct "claimed" outputs the check
// tests fault
struct Run {
  CpSpec spec;
  Inputs in;
  std::array<Tensor3<double>, 5> out;
};
inline Run correct_run(const CpFields& f, std::uint64_t seed = 11) {
  RunSpec rs;
  rs.cp = CpSpec(f);
  rs.backward = true;
  rs.seed = seed;
  Run r{rs.cp, make_inputs(rs), {}};
  const RunReport run = run_experiment(rs, r.in);
  r.out = {run.o, lse_tensor(run.lse), run.dq, run.dk, run.dv};
  return r;
}

}  // namespace cplab::test
