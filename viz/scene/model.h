// model.h: what cplab-viz shows, computed once per parameter change by the reference.
//
// What it is: VizParams (everything editable in the app and on the command line: the CpFields of
// the run as given, not yet validated), and the models the views draw from, each built by the
// reference and never re-derived here:
//   RunModel    a CP run: the RunSpec whose CpSpec (modes/cp_spec.h) was constructed, and so
//               validated, once from VizParams; its Partition and Packing are the CpSpec's own. Its
//               trace comes from trace_plan.h plan_trace (the events run_experiment would record,
//               without computing attention, so cp = 64 x 1M tokens is instant), or from a trace
//               file written by `cplab run --trace` or `cplab-bench cp --trace` (then there is no
//               spec). A planned trace's timeline is cplab plan's model (plan/perf_model.h predict,
//               under the assumptions plan/perf_options.h checks); a file's keeps its measured times
//   SchedModel  a DCP batch scheduled by Megatron v1 (dcp_megatron.h) and cplab (dcp_cplab.h), with
//               the lower bound (dcp_bounds.h); the batch comes from --lengths, a distribution in
//               data/dcp (seeded like `cplab schedule --dist`), or a `cplab schedule --json` file
// What it is not: drawing (views.h), the app, or a second copy of the spec's fields or rules.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "dcp/dcp_bounds.h"
#include "infer_model.h"
#include "dcp/dcp_schedule.h"
#include "plan/perf_options.h"
#include "run/experiment.h"
#include "sim/trace.h"

namespace cplab::viz {

// The trace files cplab-viz reads (--trace), refused above with the limit named: at most 128 MB and
// 2^19 events, what it reads and draws in seconds (every event costs about 1.7 KB of memory and
// 7-18 us here; 2^20 events took 18 s). The p2p ring at cp 256 x 1M tokens, causal, with the
// backward (`cplab run --plan-only --cp 256 --seq 1048576 --causal --backward --trace`) is 88 MB of
// 392,704 events, drawn in about 4 s; a2a at that size (1,044,992 events, 160 MB) is refused: its
// view is drawn from the run's options instead (without --trace).
inline constexpr std::int64_t kMaxVizTraceBytes = std::int64_t{128} << 20;
inline constexpr std::int64_t kMaxVizTraceEvents = std::int64_t{1} << 19;

struct VizParams {
  // the CP run (ownership, ring, masks, timeline), as the options and controls give it. `seq` is the
  // token count of an unpacked run: with cu_seqlens the spec takes their packed total (seq 0)
  CpFields cp = default_fields();
  bool backward = true;    // trace the backward too
  std::string dtype = "float";  // the elements' type, which sets the bytes of every message (float | double)
  std::string trace_file;  // timeline: a trace file instead of the run's planned trace
  // timeline of a planned trace: the model's assumptions, with cplab plan's defaults and rules
  // (--gpu, --intra, --inter, --gpus-per-node, --tau-us; bf16 on the wire)
  PerfOptions perf;
  // the DCP batch (scheduler)
  std::int64_t ranks = 8, max_per_rank = 4096;
  std::string lengths = "32768,16384,8192,4096,4096,4096,4096,2048";  // the 8-sample example of cplab schedule
  std::string dist;          // a distribution file: draw one batch (then `lengths` is ignored)
  std::int64_t batch_size = 0;  // with dist: 0 = the file's batch size
  std::uint64_t seed = 0;
  std::string schedule_json;  // a `cplab schedule --json` file: its batch, ranks and M
  std::string cost = "l2", cost_params;  // as cplab schedule
  // an inference step (issue 37; infer_model.h) instead of a training run, when kv_cache is given:
  // --kv-cache P (one cache length, or one per request), --mode's inference name (p2p = pass-KV,
  // pass-q, decode-pass-q, decode-ag) and --cache-layout (zigzag | interleaved), as cplab run takes them
  std::string kv_cache, infer_mode = "p2p", cache_layout = "zigzag";
  bool inference() const { return !kv_cache.empty(); }
  // p2p, zigzag, cp 4, 32 tokens, 8 query heads over 2 KV heads of dim 64, causal
  static CpFields default_fields();
  // the run drawn: constructs the CpSpec from `cp` (cplab::Error naming the rule it breaks), the
  // harness of a planned float trace around it
  RunSpec run_spec() const;
};

struct RunModel {
  std::optional<RunSpec> spec;  // the run drawn; empty when the trace came from a file or for inference
  Trace trace;
  // an inference step (VizParams::inference()): its model; the views draw it with views_infer.h, and
  // trace / steps / step_of are its planned trace's (no timeline model, no layouts)
  std::shared_ptr<const InferModel> infer;
  bool from_file() const { return !spec.has_value() && !infer; }
  // the run's CP layer (not from_file()): its partition() and packing() are what the views draw;
  // where cu_seqlens were given (thd(), even one unpadded sequence) the views draw the sequences
  const CpSpec& cp() const { return spec.value().cp; }
  std::vector<std::pair<Phase, int>> steps;  // (phase, step) in the order the trace first shows them
  // ownership: for each layout that fits the run (one sequence: all three; THD: the run's), every
  // rank's tokens as spans (Partition::spans), computed once; `why_not` holds the rule a layout breaks
  struct LayoutSpans {
    Layout layout;
    std::vector<std::vector<Span>> spans;  // per rank
    std::string why_not;                   // non-empty: not drawable, this is the rule it breaks
  };
  std::vector<LayoutSpans> layouts;
  // the timeline, per event [t0, t1) in microseconds; lanes 2r (compute) and 2r+1 (comm) of rank r
  // list their events by start time. Its times (`timing`):
  //   model         a planned trace, by cplab plan's model: pred = predict(trace, spec, assumptions).
  //                 Step k starts where step k-1 ends (the sum of the earlier steps' time_us); rank
  //                 r's tiles run back to back from there (each its tile_us, so they end at its
  //                 rank_compute_us); a message lasts its sender's rank_comm_us, on both ranks'
  //                 lanes. The part of a step after its slowest compute is exposed communication
  //   measured_cpu  a `cplab run --trace` file: the reference's tile times (Trace::timeline, dur_us)
  //   measured_gpu  a `cplab-bench cp --trace` file (meta "measured_on"): the GPU's tile times, alike
  //   flops         a file with no times: tiles drawn as FLOPs at kFileTflops, a placeholder
  enum class Timing { model, measured_cpu, measured_gpu, flops };
  static constexpr double kFileTflops = 100;
  Timing timing = Timing::model;
  PerfAssumptions assumptions;          // model: the checked PerfOptions
  std::optional<PerfPrediction> pred;   // model: empty when why_no_model says which rule it breaks
  std::string why_no_model;             // model: cp does not fill whole nodes of gpus-per-node
  std::vector<Trace::Timed> timed;
  std::vector<Trace::Timed> step_span;  // per step: where it begins and ends on the time axis
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
