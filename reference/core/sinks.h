// sinks.h: attention sinks (gpt-oss), exact under context parallelism.
//
// What it is: the two rules that make a sink one more partial result of the (O, LSE) merge.
// A sink is one learnable logit s_h per query head that joins every row's softmax denominator and
// adds nothing to the output (its value row is 0):
//   forward   LSE' = log(exp(LSE) + exp(s_h)) = logaddexp(LSE, s_h),   O' = O exp(LSE - LSE')
//             i.e. the merge (merge.h) of the row's (O, LSE) with the partial (0, s_h). Applied
//             once per row, to its final merged result, it is exact whichever mode and merge made
//             (O, LSE): apply_sinks.
//   backward  with the FINAL (O', LSE') the usual backward is already the gradient of the extended
//             softmax: P = exp(S - LSE'), Delta' = rowsum(dO' * O') (the sink's dP is dO' . 0 = 0),
//             dS = P (dP - Delta'). The sink's own gradient is its dS:
//               d s_h = sum over rows of p_sink (0 - Delta') = -sum_rows exp(s_h - LSE') (dO' . O')
//             sink_grad adds it up for a block of rows; ranks add their rows' partials as they add
//             any parameter's gradient (the data-parallel all-reduce, outside the attention).
// A row that sees no key (LSE = -inf: padding) stays O = 0, LSE = -inf and adds nothing to d s_h;
// under cplab's masks every real token sees at least itself, so these are exactly the padding
// rows. The dense oracle does not use apply_sinks: attention_kernel.h puts exp(s_h) into the
// softmax denominator itself, an independent route the tests compare with (and finite differences).
// What it is not: the choice of the values (run/experiment.h: --sink-logits or drawn from the seed).
#pragma once

#include "core/attention_kernel.h"

namespace cplab {

// o (n, h, dv) and lse (h, n) of rows with their final (O, LSE); sinks[i] is head i's logit
template <class T>
void apply_sinks(View3<T> o, RowsView<T> lse, const T* sinks);

// ADDS -sum_rows exp(s_h - LSE') (dO' . O') to ds[i] for every head i, over the rows of o, dout
// (n, h, dv) and lse (h, n), the FINAL (sink-corrected) results
template <class T>
void sink_grad(CView3<T> o, CView3<T> dout, RowsView<const T> lse, const T* sinks, T* ds);

}  // namespace cplab
