// infer_plan.h: the trace an inference step would record, built without computing attention.
//
// What it is: infer_plan_trace(s), the Trace run_infer(s, ...) records, event by event in the
// same order with the same values (messages: phase, step, rank, peer, op, tensor, bytes; tiles:
// step, rank, peer, section, mask, rows, cols, pairs, flops), dur_us = 0, the same meta. It repeats
// the variants' loop skeletons (infer_pass_kv.cpp, infer_pass_q.cpp, infer_decode_ag.cpp) and
// SimComm's message order; tests/test_infer.cpp proves the equality for every variant. It
// allocates no tensor, so `cplab plan` can price a 405B-like step at a million tokens.
// What it is not: a run (nothing is computed or checked).
#pragma once

#include "infer/infer_run.h"
#include "sim/trace.h"

namespace cplab {

// work bound as trace_plan.h's kMaxPlanWork (about one unit per token row walked)
double infer_plan_work_estimate(const InferRunSpec& s);
// validates the dtype and the planner's work bound (not the CPU reference's limits), cplab::Error
Trace infer_plan_trace(const InferRunSpec& s);

}  // namespace cplab
