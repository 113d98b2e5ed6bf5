// precision.h: --precision, the storage a GPU implementation's pipeline uses, for a run to emulate.
//
// What it is: Precision, parsed from "inputs=bf16,accumulate=fp32,partials=bf16,merge=fp32" (any
// subset, in any order): the dtype the inputs Q, K, V, dO are rounded to before anything runs (as
// the GPU sees them), the arithmetic (accumulate: fp32 = `--dtype float`, fp64 = double), and the
// ring's storage between steps (partials: each step's kernel outputs; merge: the running sums
// across steps), which CpFields::partials_dtype / merge_dtype carry to the ring (cp_spec.h). Every
// rounding is to nearest even, through float (core/dtype.h round_in_place).
// What it is not: the ring's rounding itself (modes/ring_p2p.cpp), or a tolerance: a run prints
// its errors against the exact oracle, and cplab check turns an emulated run into a bound.
#pragma once

#include <optional>
#include <string>

#include "core/dtype.h"
#include "modes/cp_spec.h"
#include "run/experiment.h"

namespace cplab {

struct Precision {
  std::optional<DType> inputs, partials, merge;
  std::optional<std::string> accumulate;  // the run's dtype it asks for: "float" (fp32) or "double" (fp64)
  bool empty() const { return !inputs && !partials && !merge && !accumulate; }
};

// cplab::Error naming the rule: "--precision 'x': ..." (an unknown stage, a repeated one, a dtype
// not among fp32, fp16, bf16 (accumulate: fp32, fp64), an empty text)
Precision parse_precision(const std::string& text);
// "inputs=bf16,accumulate=fp32,partials=bf16,merge=fp32" (the stages given, in that order)
std::string to_string(const Precision& p);
// f with the ring's storage of p (partials, merge) set
void apply_storage(const Precision& p, CpFields& f);
// q, k, v and dout (when present) rounded to t in place; the sink logits stay (parameters, fp32)
void round_inputs(Inputs& in, DType t);

}  // namespace cplab
