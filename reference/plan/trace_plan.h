// trace_plan.h: the trace a run would record, built without computing attention.
//
// What it is: plan_trace(s), the Trace that run_experiment(s, make_inputs(s)) records, event by
// event in the same order with the same values (every send / recv: phase, step, rank, peer, op,
// tensor, bytes; every tile: phase, step, rank, peer, section, mask, rows, cols, pairs, flops),
// with dur_us = 0 and the same meta. It reads the modes' own step tables (ring_schedule.h,
// allgather_tiles, ulysses_mask, hcp_ring_members, cp_tile_event / tile_shape) and repeats only
// their loop skeletons and SimComm's message order; tests/test_trace_plan.cpp proves the equality
// for every mode, layout and option. It allocates no tensor, so it can show configurations far too
// large for the CPU reference (cp 64, a million tokens, 32 heads of 128) in about a second.
// What it is not: a run. Nothing is computed or checked, durations are zero, and the timeline of
// the Chrome form (trace.h) is then a picture of the steps only.
#pragma once

#include "run/experiment.h"
#include "sim/trace.h"

namespace cplab {

// The planner's own limits. Work: about one unit per token position it walks (index lists, spans,
// per-row masks of packed tiles and all-gather tiles); kMaxPlanWork is about a minute, lifted by
// allow_long. Memory: the trace itself (events, spans) must fit in about 16 GiB. FLOP counts must
// fit in 64-bit integers.
inline constexpr double kMaxPlanWork = 2e10;
double plan_work_estimate(const RunSpec& s);

// Validates s like validate(s) (run/experiment.h validate_rules) but without the CPU reference's limits
// (memory, kMaxCpuFlops), then the planner's own; throws cplab::Error naming the broken rule.
Trace plan_trace(const RunSpec& s);

}  // namespace cplab
