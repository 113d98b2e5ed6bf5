// embedded.h: `cplab run`, `cplab check` and the other commands called from another front end (the
// Python binding, python/src/) instead of a shell: the same option registration, defaults, rules and
// messages as the command line, with tensors given in memory instead of .npy files.
//
// What it is:
//   run_embedded(args, arrays)     `cplab run ARGS` with Q, K, V (and dO) from memory (or, without
//                                  them, the seeded random inputs); returns the run's report (outputs
//                                  in global order, errors, trace) instead of printing it. args are
//                                  run's options as the command line spells them ("--mode", "p2p",
//                                  "--causal", ...); file options (--q, --out-dir, --trace, ...) and
//                                  --kv-cache are refused. A run whose result is not finite throws
//                                  RunFailed with the command line's message (its exit 1).
//   check_embedded(args, sources)  `cplab check ARGS` on tensors from memory (check/check_inputs.h's
//                                  CheckSources); returns the report (check_text, check_json)
//   cli_capture(args, out)         `cplab layout|schedule|plan ARGS` run in this process, its
//                                  standard output captured in out; returns its exit status (the
//                                  Python layer adds --json). Bad input throws cplab::Error (not exit 2).
// Every bad input throws cplab::Error naming the option or the argument and the rule.
// What it is not: the binding (python/src/), or a second implementation of any command.
#pragma once

#include <array>
#include <stdexcept>
#include <string>
#include <vector>

#include "check/check.h"
#include "check/check_inputs.h"
#include "run/experiment.h"
#include "run/tensor_source.h"

namespace cplab::app {

// the run's check failed (an output not finite): the message is the command line's (it exits 1)
struct RunFailed : std::runtime_error {
  RunReport report;
  RunFailed(const std::string& what, RunReport r) : std::runtime_error(what), report(std::move(r)) {}
};

struct RunArrays {
  const TensorSource* q = nullptr;     // (seq, heads, head_dim); q, k, v given together or not at all
  const TensorSource* k = nullptr;     // (seq, kv_heads, head_dim)
  const TensorSource* v = nullptr;     // (seq, kv_heads, v_head_dim)
  const TensorSource* dout = nullptr;  // (seq, heads, v_head_dim), needs --backward
  const TensorSource* sinks = nullptr;  // (heads,) the sink logits (with --sinks; --sink-logits' values)
};

// what the run read its inputs from (tests of zero-copy): the address of each of Q, K, V, dO as the
// Inputs handed to run_experiment held them, and whether that was the caller's memory (borrowed)
struct InputsSeen {
  std::array<const void*, 4> address{};
  std::array<bool, 4> borrowed{};
};

RunReport run_embedded(const std::vector<std::string>& args, const RunArrays& arrays, InputsSeen* seen = nullptr);
// max_flops > 0: the front end's own limit on the check's attention work (cpu_flops_estimate of the
// CP run + dense oracle), checked before any data is read, `where` naming the front end in the message
CheckReport check_embedded(const std::vector<std::string>& args, const CheckSources& sources, double max_flops = 0,
                           const std::string& where = "");
int cli_capture(const std::vector<std::string>& args, std::string& out);

// the long option names of `cplab COMMAND` (without dashes) and whether each is a flag (no value)
std::vector<std::pair<std::string, bool>> command_options(const std::string& command);

}  // namespace cplab::app
