// attention_check.h: the GPU's sampled outputs against the CPU reference, in double.
//
// What it is: check_forward (O and LSE at the sampled rows of head 0) and check_backward (dQ, dK,
// dV of sequence 0's first KV-head group when s <= kFullBackwardMaxSeq, else dQ at the sampled
// rows), each giving error = max |gpu - ref| / max |ref| per tensor (core/rel_error.h, with its
// convention: a NaN or an infinity the reference does not have makes the error infinite; so does
// an output of the wrong size). The reference is reference/core/attention_kernel.h on the inputs
// rebuilt from inputs.h: the sampled query rows alone with a Mask::ranges giving each its causal
// key range, or dense attention on whole heads. Several outputs of the same inputs (ours and
// SDPA's, for the yardstick) can be compared against one reference computed once.
// What it is not: the PASS / FAIL rule (attention_config.h tolerance, applied by the caller).
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "attention_config.h"
#include "attention_run.h"

namespace cplab::bench {

struct CheckResult {
  std::vector<std::pair<std::string, double>> errors;  // e.g. {"O", 1e-3}, {"LSE", 2e-4}
  std::string checked;                                 // what was compared, e.g. "32 rows"
  double max_error() const;
  std::string worst() const;  // the tensor with max_error()
};

CheckResult check_forward(const AttentionPlan& plan, const Shape& x, const GpuSamples& gpu);
CheckResult check_backward(const AttentionPlan& plan, const Shape& x, const GpuSamples& gpu);

// The same for several outputs of the same inputs (ours, then SDPA's for the yardstick) against ONE
// reference, computed once: result i is outs[i]'s. A sample without LSE (has_lse false) has no
// "LSE" entry. The backward compares whole heads or the sampled rows as outs[0].full says.
std::vector<CheckResult> check_forward(const AttentionPlan& plan, const Shape& x,
                                       const std::vector<const GpuSamples*>& outs);
std::vector<CheckResult> check_backward(const AttentionPlan& plan, const Shape& x,
                                        const std::vector<const GpuSamples*>& outs);

}  // namespace cplab::bench
