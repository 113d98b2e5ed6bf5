// perf_model.h: an alpha-beta performance model of a CP run, evaluated on the run's own trace.
//
// What it is: predict(trace, spec, assumptions) walks the trace plan_trace (trace_plan.h) or a real
// run recorded (every tile with its FLOPs, every message with its bytes and peer, per (phase,
// step)) and gives each step a time:
//   compute(rank)  = sum over its tiles of  flops / F  + tau  (+ the (O, LSE) merge of every forward
//                    tile after a rank's first: rows * heads * (dv (e + 8) + 12) bytes / HBM)
//   comm(rank)     = over the link classes its sends use (intra-node, inter-node; independent
//                    links): alpha + bytes / B(op), B per op (p2p, all-gather / reduce-scatter,
//                    all-to-all) from the link preset; bytes as the trace records them, rescaled
//                    from the run's dtype to bytes_per_element (bf16: K, V and dK, dV travel in
//                    the input dtype, as in Transformer Engine)
//   step           = max over ranks of max(compute, comm): what a step posts it overlaps with its
//                    own compute (the reference's convention: a ring step's KV transfer runs beside
//                    its tiles; a collective alone in its step is exposed)
// The prediction keeps every rank's compute and comm per step and every tile's time, so that a
// timeline (cplab-viz) draws this model's numbers rather than a second copy of it.
// Ranks are numbered node-major: rank r lives on node r / gpus_per_node. The efficiency is the
// useful (dense, single-device) FLOPs over N * F * time: 1 means every rank computed its share at
// the kernel's rate with nothing exposed. F comes from a GPU preset, a --tflops override, or a
// calibration file of measured single-GPU throughput (cplab-bench attention --json), looked up
// per tile by pass, causal-ness and the tile's query rows.
// The presets are published figures (nccl-tests results, vendor talks, FA2-class kernel rates): they are
// stated by `cplab plan` with every prediction, and they are assumptions, not measurements.
// What it is not: a simulator of NCCL, of SM contention between kernels and communication, or of
// kernel efficiency below the calibration's smallest shape.
#pragma once

#include <map>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <vector>

#include "run/experiment.h"
#include "sim/trace.h"

namespace cplab {

struct LinkPreset {
  std::string name, source;
  double p2p_GBps = 0, allgather_GBps = 0, a2a_GBps = 0;  // achieved per-direction bandwidth per GPU
  double alpha_us = 0;                                    // per-step latency of one transfer
};
LinkPreset link_preset(const std::string& name);  // "nvlink4" | "ib-ndr" | "pcie5" | "h800-nvlink" | "eth100"
std::vector<std::string> link_preset_names();

struct GpuPreset {
  std::string name, source;
  double fwd_tflops = 0, bwd_tflops = 0;  // achieved attention throughput (FA convention, bf16)
  double hbm_TBps = 0;                    // for the memory-bound merges
};
GpuPreset gpu_preset(const std::string& name);  // "h100" | "h200" | "h800"
std::vector<std::string> gpu_preset_names();

// measured single-GPU attention throughput: (pass, causal, query rows) -> TFLOP/s
struct Calibration {
  struct Point {
    Phase pass = Phase::fwd;
    bool causal = false;
    double rows = 0, tflops = 0;
  };
  std::vector<Point> points;
  std::string source;
  bool empty() const { return points.empty(); }
  // the measured rate of the nearest shape (log distance in rows) with the same pass and
  // causal-ness (either causal-ness if none); 0 if no point has this pass
  double tflops(Phase pass, bool causal, double rows) const;
};
// reads `cplab-bench attention --json` output: rows with "pass" ("fwd" | "bwd"), "causal" (a
// bool), "s" (query rows, a number in (0, 2^40]) and "tflops" (in (0, 1e6]: far above any GPU), in
// a file of at most kMaxCalibrationFileBytes; throws cplab::Error naming the file, the row and the field
inline constexpr std::int64_t kMaxCalibrationFileBytes = 16 << 20;
inline constexpr double kMaxCalibrationRows = 1099511627776.0, kMaxCalibrationTflops = 1e6;
Calibration read_calibration(const std::string& path);

struct PerfAssumptions {
  GpuPreset gpu = gpu_preset("h100");
  LinkPreset intra = link_preset("nvlink4"), inter = link_preset("ib-ndr");
  index_t gpus_per_node = 8;
  double bytes_per_element = 2;  // bf16
  double tau_us = 5;             // fixed cost per tile (kernel launch and tail)
  Calibration calibration;       // when not empty, F per tile comes from it
  nlohmann::json to_json() const;
};

struct StepTime {
  Phase phase = Phase::fwd;
  int step = 0;
  double compute_us = 0, comm_us = 0, time_us = 0;  // slowest rank's compute and comm, the step
  // per rank r: its compute (its tiles' tile_us summed, to rounding) and its comm (over the link
  // classes it sends on, the slowest of alpha + bytes / B; 0 if it sends nothing); compute_us and
  // comm_us above are their maxima, time_us the max of both
  std::vector<double> rank_compute_us, rank_comm_us;
};

struct PerfPrediction {
  double fwd_us = 0, bwd_us = 0;
  double exposed_comm_us = 0;           // sum over steps of (step - slowest compute)
  double efficiency_fwd = 0, efficiency_bwd = 0;
  std::vector<StepTime> steps;          // in the order of trace.steps()
  std::vector<double> tile_us;          // per trace event: a tile's modelled time (flops / F + tau + its merge); 0 for messages and skipped tiles
  double total_us() const { return fwd_us + bwd_us; }
};

// bytes on the wire per byte a trace message records: the trace carries the run's dtype (float or
// double), the model sends a.bytes_per_element per element (bf16: 2), dK and dV included
double wire_scale(const RunSpec& spec, const PerfAssumptions& a);

PerfPrediction predict(const Trace& trace, const RunSpec& spec, const PerfAssumptions& a);

// What predict reads of a run besides its trace, so that a trace of another kind of step (an
// inference step: infer/infer_plan.h, priced by plan/infer_plan_model.h) goes through the same
// model: the head dims (the merges' bytes), the trace's bytes per element (float 4, double 8: the
// wire rescales them to a.bytes_per_element), and for the efficiency's rate lookup the query rows
// of all ranks (divided by the trace's N) and the causal-ness. predict(trace, spec, a) is predict(trace, trace_shape(spec), a).
struct TraceShape {
  double d = 0, dv = 0;
  double trace_bytes_per_element = 4;
  double query_rows = 0;
  bool causal = true;
};
TraceShape trace_shape(const RunSpec& spec);
PerfPrediction predict(const Trace& trace, const TraceShape& shape, const PerfAssumptions& a);

}  // namespace cplab
