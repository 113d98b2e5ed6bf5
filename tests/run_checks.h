// run_checks.h: the checks every exact (double) CP run must pass, shared by the mode tests.
// What it is not: used by the library. Tests only.
#pragma once

#include <doctest/doctest.h>

#include <cstdint>

#include "run/experiment.h"

namespace cplab {

// O, LSE and (when measured) dQ, dK, dV and the sinks' gradient within 1e-10 of dense attention, and
// every useful FLOP of dense attention computed exactly once (the ranks' FLOPs sum to the dense count)
inline void check_exact_run(const RunReport& r) {
  CHECK(*r.err_o <= 1e-10);
  CHECK(*r.err_lse <= 1e-10);
  if (r.err_dq) CHECK(*r.err_dq <= 1e-10);
  if (r.err_dk) CHECK(*r.err_dk <= 1e-10);
  if (r.err_dv) CHECK(*r.err_dv <= 1e-10);
  if (r.err_dsinks) CHECK(*r.err_dsinks <= 1e-10);
  std::int64_t sum = 0;
  for (auto f : r.flops) sum += f;
  CHECK(sum == r.dense_flops);
}

}  // namespace cplab
