// perf_options.h: the performance model's assumptions as a command line gives them, checked once
// for `cplab plan` and `cplab-viz` alike.
//
// What it is: PerfOptions (preset names, GPUs per node, the fixed cost per tile, rate overrides and
// a calibration file, with `cplab plan`'s defaults), perf_assumptions (every rule, each refused with
// a cplab::Error naming the option and the value, then the PerfAssumptions predict() takes),
// check_whole_nodes (the group fills whole nodes) and preset_choices (the names for --help).
// What it is not: the model or its presets (perf_model.h), or the options' registration (each
// tool's own command line, with these defaults).
#pragma once

#include <string>
#include <vector>

#include "plan/perf_model.h"

namespace cplab {

struct PerfOptions {
  std::string gpu = "h100", intra = "nvlink4", inter = "ib-ndr";  // gpu_preset, link_preset names
  index_t gpus_per_node = 8;
  double tau_us = 5;                 // fixed cost per tile (microseconds)
  double tflops = 0, bwd_tflops = 0; // 0: the GPU preset's rates (--tflops sets both, backward 0.85x)
  std::string calibration;           // a `cplab-bench attention --json` file, or empty
};

// The rules, in this order: gpus-per-node in [1, kMaxGpusPerNode] (planner.h); the GPU and link
// presets exist; --tflops and --bwd-tflops 0 or in [0.001, 100000]; --tau-us in [0, 1000000]; the
// calibration file reads (read_calibration). Bytes per element stay bf16's 2.
PerfAssumptions perf_assumptions(const PerfOptions& o);

// `gpus` ranks fill whole nodes of gpus_per_node (or fewer than one node): "gpus 12 must fill
// whole nodes of gpus-per-node = 8"; `what` names the count ("gpus" for cplab plan, "cp" for cplab-viz)
void check_whole_nodes(index_t gpus, index_t gpus_per_node, const std::string& what = "gpus");

// "a | b | c": the names for an option's help
std::string preset_choices(const std::vector<std::string>& names);

}  // namespace cplab
