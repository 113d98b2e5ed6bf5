// attention_bench.cpp: run_attention (attention_bench.h).
//
// What it is: the order of the steps and the PASS / FAIL rules (max error <= tolerance(dtype);
// on the yardstick rows also our error <= kSdpaErrorRatio x SDPA's, when measured).
// What it is not: timing, checking or formatting (attention_run, attention_check, report).
#include "attention_bench.h"

#include <cstdio>
#include <exception>
#include <vector>

#include "attention_check.h"
#include "attention_run.h"
#include "baseline.h"
#include "device.h"  // cuda/
#include "report.h"
#include "sdpa_error.h"

namespace cplab::bench {

int run_attention(const AttentionPlan& plan) {
  const std::string gpu = cuda::device_summary();
  Baseline baseline;
  if (!plan.baseline_cmd.empty()) {
    std::printf("running the baseline first (it prints nothing until it is done): %s ...\n", plan.baseline_cmd.c_str());
    std::fflush(stdout);
    baseline = run_baseline(plan);
  }
  // the yardstick's SDPA runs next, also before our kernels touch the GPU (its files are removed
  // when `sdpa` goes, unless --keep-io)
  SdpaErrorRun sdpa;
  if (!plan.sdpa_error_cmd.empty()) {
    std::printf("measuring SDPA's error on the yardstick shapes first: %s ...\n", plan.sdpa_error_cmd.c_str());
    std::fflush(stdout);
    sdpa = run_sdpa_error(plan);
  }
  print_header(plan, baseline, sdpa, gpu);

  std::vector<Row> rows;
  for (const Shape& x : plan.shapes) {
    std::vector<Pass> passes;
    if (plan.fwd) passes.push_back(Pass::fwd);
    if (plan.bwd) passes.push_back(Pass::bwd);
    GpuSamples samples;
    ShapeTimes times;
    std::string error;
    try {
      times = run_shape(plan, x, samples);
    } catch (const std::exception& e) {
      error = e.what();
    }
    for (const Pass p : passes) {
      Row r;
      r.shape = x;
      r.pass = p;
      r.tolerance = tolerance(plan.dtype);
      r.error = error;
      if (r.error.empty()) {
        r.ms = p == Pass::fwd ? times.fwd_ms : times.bwd_ms;
        try {  // ours and, on a yardstick shape, SDPA's outputs against one reference
          r.check = check_with_yardstick(plan, x, p, samples, sdpa, r.yard);
          r.passed = r.check.max_error() <= r.tolerance;
        } catch (const std::exception& e) {
          r.error = std::string("reference check: ") + e.what();
        }
      }
      if (!r.error.empty() && sdpa.find(x) != nullptr) r.yard = yardstick_not_measured("our run failed: " + r.error);
      r.flash = baseline.find("flash", p, x);
      r.cudnn = baseline.find("cudnn", p, x);
      print_row(r);
      rows.push_back(r);
    }
  }
  print_footer(rows);
  print_yardstick(sdpa, rows);
  if (!plan.json_path.empty()) {
    write_json(plan, baseline, sdpa, gpu, rows);
    std::printf("wrote %s\n", plan.json_path.c_str());
  }
  for (const Row& r : rows)
    if (!r.passed || r.yard.status == "FAIL") return 1;
  return 0;
}

}  // namespace cplab::bench
