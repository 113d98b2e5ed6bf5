// infer_bench.h: the inference rows of `cplab-cpu-bench` (issue 37): one inference CP step (T new
// tokens over a persistent KV cache of P tokens, reference/infer/) timed on simulated ranks, and
// checked against the dense oracle with the offset.
//
// What it is:
//   time_infer<T>(spec, reps)   infer_forward (reference/infer/infer_attention.h) on SimComm ranks,
//                               the inputs sharded beforehand (infer_shard), as run_infer times its
//                               variant; best of reps, with the useful FLOPs of core/flops.h over
//                               the visible (query, key) pairs of every request (infer_request_pairs)
//   check_infer(spec, dtype)    run_infer (reference/infer/infer_run.h) on the fast kernel route the
//                               timings run: the max error of O and LSE against infer_dense_reference
// What it is not: a test (nothing asserts on a time), or the training rows (cpu_bench.h).
#pragma once

#include <string>

#include "infer/infer_spec.h"

namespace cplab::cpubench {

struct InferTime {
  double fwd_s = 0;      // best of the reps
  double fwd_flops = 0;  // useful FLOPs of the step (forward only: serving has no backward)
};
template <class T>
InferTime time_infer(const InferSpec& spec, int reps);

// max relative error over O and LSE of run_infer on spec in dtype ("double" | "float")
double check_infer(const InferSpec& spec, const std::string& dtype);

}  // namespace cplab::cpubench
