// sdpa_error.h: the accuracy yardstick of `cplab-bench attention`: PyTorch SDPA's own error against
// the same CPU reference. The rule: our error must be no worse than kSdpaErrorRatio (1.5)
// times SDPA's, per tensor (attention_config.h).
//
// What it is, in the order run_attention uses it:
//   run_sdpa_error: for each yardstick shape (is_yardstick_shape), sequence 0's exact inputs as
//     float32 .npy (write_case_inputs) in a case directory of a temporary directory (mkdtemp, removed
//     when the last copy of the result goes; or --keep-io DIR, kept), then the sdpa_error.py child
//     (popen, like the baseline: before our kernels touch the GPU) runs SDPA's flash and cuDNN
//     backends on them and writes their O, dQ, dK, dV beside them as float32 .npy;
//   check_with_yardstick: a row's check of our outputs (attention_check.h) with the backends' outputs
//     (load_sdpa_samples: the same rows and heads as ours, no LSE) against ONE reference, then judge:
//     per tensor, ours / min over the backends that ran -> PASS (<= 1.5), FAIL, or not measured.
// Anything going wrong on SDPA's side (no torch, a refused shape, a missing file) makes the yardstick
// "not measured" with the reason: never an exception, never a failure of our kernels.
// What it is not: a check of SDPA (its error is the yardstick, whatever it is), or a timer.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "attention_check.h"
#include "attention_config.h"
#include "attention_run.h"

namespace cplab::bench {

inline const std::vector<std::string> kSdpaBackends = {"flash", "cudnn"};

// One yardstick shape: its files and what each backend did with them.
struct SdpaCase {
  Shape shape;        // as benchmarked; SDPA runs sequence 0 alone (b = 1), the sequence we check
  std::string dir;    // q.npy, k.npy, v.npy (, dout.npy) in, <backend>_{o,dq,dk,dv}.npy out
  std::string error;  // its inputs could not be written: not given to the child
  std::map<std::string, std::string> backend_error;  // backend -> "" ran, else why not
};

struct SdpaErrorRun {
  std::string command;  // the full command line run ("" = no yardstick, --no-sdpa-error)
  std::string dir;      // where the files are
  bool kept = false;    // --keep-io: the files stay
  std::string error;    // the whole step failed (no torch, no CUDA, ...): every yardstick not measured
  std::string info;     // the child's self-description (torch version, device)
  std::vector<SdpaCase> cases;
  std::shared_ptr<const void> cleanup;  // removes dir (unless kept) when the last copy goes
  const SdpaCase* find(const Shape& x) const;  // nullptr: not a yardstick shape (or not asked for)
};

// Writes sequence 0's inputs of x to dir (created): q.npy (s, h, d), k.npy and v.npy (s, hk, d) and,
// if bwd, dout.npy (s, h, d), float32 holding exactly input_value(..., dtype). Throws on I/O errors.
void write_case_inputs(const std::string& dir, const Shape& x, DType dtype, bool bwd);

// Everything up to the child's JSON lines; never throws (failures end up in error / backend_error).
SdpaErrorRun run_sdpa_error(const AttentionPlan& plan);

// The sampled part of a backend's outputs in dir, as GpuSamples for pass p (fwd: O, no LSE; bwd: dQ
// at the sampled rows and, if s <= kFullBackwardMaxSeq, the whole heads). Throws cplab::Error on a
// missing or malformed file.
GpuSamples load_sdpa_samples(const std::string& dir, const std::string& backend, const Shape& x, Pass p);

// --- judging ---------------------------------------------------------------------------------
struct TensorYardstick {
  std::string name;                                  // "O", "LSE", "dQ", "dK", "dV"
  double ours = 0.0;                                 // our error on it
  std::vector<std::pair<std::string, double>> sdpa;  // backend -> its error on it (backends that ran)
  double ratio = 0.0;                                // ours / min finite SDPA error (when measured)
  std::string status;                                // "PASS" | "FAIL" | "not measured"
  std::string note;                                  // why not measured
};

struct Yardstick {
  bool selected = false;  // a yardstick row (the rest is empty otherwise)
  std::string status;     // "PASS" | "FAIL" (any tensor) | "not measured" (no tensor measured)
  std::string reason;     // why not measured
  std::vector<TensorYardstick> tensors;
  std::vector<std::pair<std::string, std::string>> backend_errors;  // backends that did not run, and why
};

// Per tensor of ours: the backends' errors on it, ratio = ours / min of the finite ones (0 / 0 = 0,
// e / 0 = inf), PASS if ratio <= kSdpaErrorRatio.
Yardstick judge(const CheckResult& ours, const std::vector<std::pair<std::string, CheckResult>>& sdpa,
                const std::vector<std::pair<std::string, std::string>>& backend_errors);

// A not-measured yardstick (e.g. our own run failed).
Yardstick yardstick_not_measured(const std::string& reason);

// Our check of pass p (returned; what check_forward / check_backward give) and, when x is a yardstick
// shape of `sdpa`, SDPA's errors against the same reference, judged, in `yard` (else unselected).
// Throws only what the check of our outputs throws.
CheckResult check_with_yardstick(const AttentionPlan& plan, const Shape& x, Pass p, const GpuSamples& ours,
                                 const SdpaErrorRun& sdpa, Yardstick& yard);

}  // namespace cplab::bench
