// overflow.h: values outside the range a run can check, named instead of compared.
//
// What it is: the checks run_experiment makes so that an overflow is never reported as "error 0"
// (core/rel_error.h counts matching -inf as equal, and nothing else non-finite):
//   check_float_range       the inputs of a --dtype float run must be within float's range (a 1e300
//                           would round to inf): cplab::Error naming the tensor, element and value
//   check_reference_finite  the dense oracle's O, LSE, dQ, dK, dV must be finite, except the
//                           LSE = -inf (and O = 0) of a padding token, the only row that sees no key
//                           (every real token sees at least itself under both masks); otherwise
//                           cplab::Error "the dense reference overflows: ..." naming the tensor, the
//                           place and what overflowed, with the scale and the inputs' largest values
//   first_non_finite        where a tensor first holds a NaN or an infinity (for the report)
// What it is not: a bound on the scores before the run (a sufficient bound would refuse inputs
// that do not overflow); the oracle's own result is the definition of "overflows".
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "core/tensor.h"
#include "layout/thd.h"
#include "run/experiment.h"

namespace cplab {

// cplab::Error if a --dtype float run's input has an element beyond float's range
void check_float_range(const Inputs& in);

struct ReferenceResult {  // the dense oracle's outputs (dq, dk, dv null without backward)
  const Tensor3<double>* o = nullptr;
  const Rows<double>* lse = nullptr;
  const Tensor3<double>* dq = nullptr;
  const Tensor3<double>* dk = nullptr;
  const Tensor3<double>* dv = nullptr;
};
// cplab::Error "the dense reference overflows: ..." unless ref is finite where it must be
void check_reference_finite(const RunSpec& s, const Inputs& in, const ReferenceResult& ref);

// the index of the first NaN or infinity of x[0..n), if any
std::optional<std::int64_t> first_non_finite(const double* x, std::int64_t n);

}  // namespace cplab
