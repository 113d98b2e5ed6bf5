// report.h: what `cplab-bench attention` prints and writes: the header, the table, the JSON file.
//
// What it is: the header (GPU, commit at configure time, FLOP convention, batch convention,
// timing, check, baseline and yardstick descriptions), one table line per (shape, pass) printed as
// soon as it is measured, a footer, the yardstick table (SDPA's error vs ours, sdpa_error.h), and
// write_json (every row with its shape, ms, TFLOP/s, errors, baseline numbers and ratios, yardstick,
// plus the GPU and the commit). Ratios are ours / SDPA in speed, i.e. SDPA ms
// divided by our ms (> 1: ours is faster).
// What it is not: a measurement or a check (the rows arrive filled in).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "attention_check.h"
#include "attention_config.h"
#include "baseline.h"
#include "sdpa_error.h"

namespace cplab::bench {

struct Row {
  Shape shape;
  Pass pass = Pass::fwd;
  double ms = 0.0;
  CheckResult check;
  double tolerance = 0.0;
  bool passed = false;
  std::string error;  // a run error (CUDA error, out of memory, refused shape): the row failed
  std::optional<BaselineEntry> flash, cudnn;
  Yardstick yard;  // SDPA's error as the yardstick (selected only on the yardstick shapes)
};

std::string commit_id();  // `git rev-parse --short HEAD` at configure time (+ "-dirty"), or "unknown"

void print_header(const AttentionPlan& plan, const Baseline& baseline, const SdpaErrorRun& sdpa,
                  const std::string& gpu);
void print_row(const Row& r);  // also prints the column heads before the first row
void print_footer(const std::vector<Row>& rows);
// the second table: per yardstick row and tensor, ours, SDPA's errors, the ratio, PASS / FAIL
void print_yardstick(const SdpaErrorRun& sdpa, const std::vector<Row>& rows);
void write_json(const AttentionPlan& plan, const Baseline& baseline, const SdpaErrorRun& sdpa, const std::string& gpu,
                const std::vector<Row>& rows);  // to plan.json_path, whole (core/output_file.h); throws
                                                // cplab::Error naming the path if it cannot

}  // namespace cplab::bench
