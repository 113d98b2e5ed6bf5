// perf_options.cpp: the checked assumptions of `cplab plan` and `cplab-viz` (see perf_options.h).
#include "plan/perf_options.h"

#include <utility>

#include "core/error.h"
#include "core/util.h"
#include "plan/planner.h"

namespace cplab {

PerfAssumptions perf_assumptions(const PerfOptions& o) {
  check_gpus_per_node(o.gpus_per_node);
  PerfAssumptions a;
  a.gpu = gpu_preset(o.gpu);
  a.intra = link_preset(o.intra);
  a.inter = link_preset(o.inter);
  a.gpus_per_node = o.gpus_per_node;
  a.tau_us = o.tau_us;
  // rates and costs a GPU can have: a prediction from 1e300 us per tile or 1e-300 TFLOP/s is noise
  for (const auto& [name, v] : {std::pair<const char*, double>{"--tflops", o.tflops}, {"--bwd-tflops", o.bwd_tflops}})
    require(v == 0 || (v >= 1e-3 && v <= 1e5), std::string(name) + " " + approx(v) + " must be 0 (the preset) or in [0.001, 100000] TFLOP/s");
  require(o.tau_us >= 0 && o.tau_us <= 1e6, "--tau-us " + approx(o.tau_us) + " must be in [0, 1000000] microseconds per tile");
  if (o.tflops > 0) a.gpu.fwd_tflops = o.tflops, a.gpu.bwd_tflops = o.bwd_tflops > 0 ? o.bwd_tflops : 0.85 * o.tflops;
  else if (o.bwd_tflops > 0) a.gpu.bwd_tflops = o.bwd_tflops;
  if (!o.calibration.empty()) a.calibration = read_calibration(o.calibration);
  return a;
}

void check_whole_nodes(index_t gpus, index_t gpus_per_node, const std::string& what) {
  require(gpus % gpus_per_node == 0 || gpus < gpus_per_node,
          what + " " + std::to_string(gpus) + " must fill whole nodes of gpus-per-node = " + std::to_string(gpus_per_node));
}

std::string preset_choices(const std::vector<std::string>& names) {
  std::string t;
  for (const std::string& n : names) t += (t.empty() ? "" : " | ") + n;
  return t;
}

}  // namespace cplab
