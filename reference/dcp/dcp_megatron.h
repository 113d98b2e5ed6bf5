// dcp_megatron.h: Megatron-Core's dynamic-CP scheduler v1 (BalancedCPScheduler), reproduced step
// by step, with its tie-breaking, so that its placements (and its flaws) can be studied.
//
// What it is: the algorithm of megatron/core/pipeline_parallel/hybrid_cp_schedule.py as specified in
// docs/sources.md ("Megatron's dynamic CP"): samples sorted by length (stable), then rounds; per
// round equal-work buckets of the list, greedy placement (a new group on the lowest free ranks
// whenever enough are free, else the least-loaded group of the size, earliest created on ties),
// the 5% balance stop once a smaller CP size has been placed, trim_overload (the first max rank's
// group gives its last sample back to the END of the list, which the next round does not re-sort),
// and fill_empty_gpus (double the earliest smallest group, shifting the groups to its right).
// Megatron balances on its own workload L^2 / cp whatever the hardware really costs, so every
// decision here (buckets, placement, the 5% stop, trim, fill) reads L^2 / cp under every cost
// model: the placement is Megatron's real one. Only evaluate() uses the chosen cost (loads,
// makespan): what Megatron's placement would really take under that cost.
// Schedules it produces may contain groups that are not aligned process groups: dcp_schedule.h
// evaluate() reports them (docs/sources.md, defect 1).
// What it is not: Megatron's v2 (dev branch) scheduler, or its data path.
#pragma once

#include "dcp/dcp_schedule.h"

namespace cplab {

DcpSchedule schedule_megatron_v1(const std::vector<std::int64_t>& lengths, std::int64_t N, std::int64_t M,
                                 const CostModel& cost);

}  // namespace cplab
