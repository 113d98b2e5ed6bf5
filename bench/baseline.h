// baseline.h: the PyTorch SDPA baseline of `cplab-bench attention`, run as a child process.
//
// What it is: run_baseline() runs the --baseline command (default: python3 bench/sdpa_baseline.py)
// through popen with the plan's shapes appended (--dtype, --pass, --warmup, --iters and one
// --shape b,h,hk,s,d,causal per shape), reads its JSON lines (sdpa_baseline.py documents them) and
// keeps, per (backend, pass, d, s, causal), the milliseconds or the reason that entry failed.
// Anything going wrong (no python3, no torch, no GPU for torch, a crash, no JSON) ends up as
// Baseline::error, never as an exception: the benchmark then prints why and goes on without ratios.
// What it is not: a timer of its own (the child times SDPA with cudaEvents), or FLOP accounting
// (the caller recomputes TFLOP/s from the child's ms with attention_flops, so both sides share one formula).
#pragma once

#include <functional>
#include <map>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>

#include "attention_config.h"

namespace cplab::bench {

struct BaselineEntry {
  double ms = 0.0;    // per iteration, all b sequences; valid when error is empty
  std::string error;  // why this backend could not run this shape (e.g. no kernel for it)
};

struct Baseline {
  std::string command;  // the full command line run ("" = no baseline asked for)
  std::string error;    // "" when the child produced results
  std::string info;     // the child's self-description (torch version, device, layout, bwd timing)
  std::map<std::string, BaselineEntry> entries;
  // backend: "flash" | "cudnn"; nullopt when the child printed nothing for it
  std::optional<BaselineEntry> find(const std::string& backend, Pass p, const Shape& x) const;
};

Baseline run_baseline(const AttentionPlan& plan);

// The child-process part, shared with the yardstick's sdpa_error.py (sdpa_error.h): runs `command`
// through popen (stderr merged into stdout) and hands every line that parses as a JSON object to
// `take` (true: one of the documented objects). failure: "" or why the child failed (could not be
// started, exit status != 0, killed) with its last other lines; tail: those lines. Never throws.
struct ChildRun {
  std::string failure, tail;
};
ChildRun run_json_child(const std::string& command, const std::function<bool(const nlohmann::json&)>& take);
// text quoted for a POSIX shell ('...'), for paths handed to a child command
std::string shell_quote(const std::string& text);

}  // namespace cplab::bench
