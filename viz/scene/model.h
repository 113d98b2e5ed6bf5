// model.h: what cplab-viz shows, computed once per parameter change by the reference.
//
// What it is: VizParams (everything editable in the app and on the command line), and the models
// the views draw from, each built by the reference and never re-derived here:
//   RunModel    a CP run (RunSpec validated by experiment.h): its Partition (layout.h), Packing
//               (thd.h), and its trace from trace_plan.h plan_trace (the events run_experiment would
//               record, without computing attention, so cp = 64 x 1M tokens is instant), or a trace
//               file written by `cplab run --trace`
//   SchedModel  a DCP batch scheduled by Megatron v1 (dcp_megatron.h) and cplab (dcp_cplab.h), with
//               the lower bound (dcp_bounds.h); the batch comes from --lengths, a distribution in
//               data/dcp (seeded like `cplab schedule --dist`), or a `cplab schedule --json` file
// What it is not: drawing (views.h) or the app.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "dcp_bounds.h"
#include "dcp_schedule.h"
#include "experiment.h"
#include "trace.h"

namespace cplab::viz {

struct VizParams {
  // the CP run (ownership, ring, masks, timeline)
  RunSpec run = default_run();
  std::string trace_file;  // timeline: a trace file instead of the run's planned trace
  // the DCP batch (scheduler)
  std::int64_t ranks = 8, max_per_rank = 4096;
  std::string lengths = "32768,16384,8192,4096,4096,4096,4096,2048";  // seed 000's example
  std::string dist;          // a distribution file: draw one batch (then `lengths` is ignored)
  std::int64_t batch_size = 0;  // with dist: 0 = the file's batch size
  std::uint64_t seed = 0;
  std::string schedule_json;  // a `cplab schedule --json` file: its batch, ranks and M
  std::string cost = "overhead", cost_params;
  static RunSpec default_run();
};

struct RunModel {
  RunSpec spec;
  Partition part{Layout::contiguous, 1, 1};
  Packing packing;
  Trace trace;
  bool from_file = false;
  std::vector<std::pair<Phase, int>> steps;  // (phase, step) in the order the trace first shows them
  // ownership: for each layout that fits the run (unpacked: all three; packed: the run's), every
  // rank's tokens as spans (Partition::spans), computed once; `why_not` holds the rule a layout breaks
  struct LayoutSpans {
    Layout layout;
    std::vector<std::vector<Span>> spans;  // per rank
    std::string why_not;                   // non-empty: not drawable, this is the rule it breaks
  };
  std::vector<LayoutSpans> layouts;
  // the timeline (Trace::timeline): measured tile times if the trace has them, else modelled as
  // FLOPs at kModelTflops (a planned trace records no times); lanes 2r (compute) and 2r+1 (comm)
  // of rank r list their events by start time
  static constexpr double kModelTflops = 100;
  bool modelled_time = false;
  std::vector<Trace::Timed> timed;
  std::vector<std::vector<size_t>> lanes;
  std::vector<int> step_of;  // per event: its index in steps
  // throws cplab::Error naming the broken rule
  static RunModel build(const VizParams& p);
};

struct SchedModel {
  std::vector<std::int64_t> lengths;
  std::int64_t ranks = 0, max_per_rank = 0;
  CostModel cost;
  std::string source;  // where the batch came from, for the title
  DcpSchedule megatron, cplab;
  DcpBound bound;
  static SchedModel build(const VizParams& p);  // throws cplab::Error
};

}  // namespace cplab::viz
