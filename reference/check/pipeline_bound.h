// pipeline_bound.h: `cplab check --precision`: the error a correct implementation with a given
// pipeline has on the check's inputs, as the check's tolerance.
//
// What it is: pipeline_bound runs cplab's own CP (run/experiment.h run_experiment) at the check's
// mode, layout and cp on the check's inputs rounded to inputs=, in the arithmetic accumulate= (fp32
// unless fp64), with the ring's storage partials= / merge= (run/precision.h, modes/ring_p2p.cpp:
// round to nearest even at each stage), rounds its outputs to the dtype each claimed output is
// saved in (a correct implementation saves them so), and takes ITS error against the check's exact
// double reference, per output (the error map's metric, error_map.h). The bound of output t is
//   bound[t] = max(kPipelineMargin x emulated[t], kPipelineFloorUlps x unit roundoff of accumulate, 1e-10)
// kPipelineMargin = 2: another correct implementation rounds in another order (a fold of the
// partials instead of a running sum, another tile order); its error is of the same size, not the
// same value, and the margin covers that (tests/test_check_precision.cpp: an independent fold's
// elements differ from the emulated ring's by up to one bf16 step, its error is 1.0x the emulated
// one at cp 2, 8 and 32: the largest error is the rounding of the largest values, which both make
// alike). The floor keeps the bound of an output the pipeline hardly rounds (an LSE in fp32, a
// double run) above a few ulps of the arithmetic.
// Per output, not per error-map cell: a cell's error is the largest of a few hundred roundings and
// another rounding order moves it by more than the output's largest (the largest over thousands) is
// moved: two correct bf16 rings (cp 32 and cp 8, seq 1024, --backward, mapped at cp 8) differ by up
// to 4.2x in a cell but at most 1.33x per output (docs/check.md); a bound per cell would fail
// correct implementations on their quiet cells. A fault in one head at k x the bound is still k x
// above it in its cells (a per-head plant of 3x is caught: the test plants one).
// pipeline_levels puts the bound first among the check's levels (CheckLevel named "a correct ring
// (inputs=bf16,...) at cp 8"), the dtype levels after it where looser; pipeline_verdict words the
// verdict ("equivalent (within the error a correct ... has on these inputs: O 6.2e-03, ...)" or
// "... (O 3.1x above the error a correct ... has on these inputs)"); pipeline_lines / pipeline_json
// the report's block and its JSON `precision` object.
// What it is not: the ring's rounding (modes/ring_p2p.cpp), --precision's parser (run/precision.h),
// or the command line's rules (app/cmd_check.cpp).
#pragma once

#include <array>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <vector>

#include "check/error_map.h"
#include "run/precision.h"

namespace cplab {

inline constexpr double kPipelineMargin = 2.0;
inline constexpr double kPipelineFloorUlps = 16.0;

struct PipelineBound {
  Precision precision;
  std::string stages;  // to_string(precision): "inputs=bf16,accumulate=fp32,partials=bf16,merge=bf16"
  std::string label;   // "a correct ring (inputs=bf16,...) at cp 8"
  std::string dtype;   // the emulated run's arithmetic: "float" or "double"
  std::array<double, kCheckTensors> emulated{};  // the emulated run's error per output (NaN: not given)
  std::array<double, kCheckTensors> bound{};     // the tolerance it gives (NaN: not given)
  double seconds = 0;                            // the emulated run
};

// spec with p's ring storage (partials=, merge=): cplab::Error naming the rule when the mode has no
// ring steps to round (CpSpec's rule)
CpSpec pipeline_spec(const CpSpec& spec, const Precision& p);
// the emulated run and its bound; ref and scale: the check's reference per output and its
// max|ref| (the error map's), present: the outputs given, saved: their dtypes
PipelineBound pipeline_bound(const CpSpec& spec, const Inputs& in, bool backward, const Precision& p,
                             const std::array<ClaimedTensor, kCheckTensors>& out,
                             const std::array<Tensor3<double>, kCheckTensors>& ref, const std::array<double, kCheckTensors>& scale);
// the bound as the tightest level, then those of dtype_levels (check_levels) that are looser for
// some given output (each tolerance at least the bound)
std::vector<CheckLevel> pipeline_levels(const PipelineBound& b, const std::vector<CheckLevel>& dtype_levels,
                                        const std::array<ClaimedTensor, kCheckTensors>& out);
// the worst err / bound over the given outputs, and which output (O when none is given)
std::pair<double, CheckTensor> pipeline_ratio(const PipelineBound& b, const std::array<double, kCheckTensors>& err);
// check_verdict's line with the bound's words: "equivalent" -> "equivalent (within the error ...:
// O 6.2e-03, LSE 9.5e-07)"; a NOT equivalent one when the outputs are not within the bound gets
// " (O 3.1x above the error ... has on these inputs)"; when no fault but noise explains them, at a
// looser level named noise_level (a dtype's fixed tolerance; "" otherwise): "NOT equivalent: O 3.1x
// above the error ... has on these inputs (within bfloat16's fixed tolerance: no known fault, a
// noisier computation or merge than this pipeline)"
std::string pipeline_verdict(const std::string& verdict, const PipelineBound& b, const std::array<double, kCheckTensors>& err,
                             bool outputs_equivalent, const std::string& noise_level);
// the text report's block: the stages, per output the emulated error, the bound, the claimed error
// and their ratio
std::vector<std::string> pipeline_lines(const PipelineBound& b, const std::array<double, kCheckTensors>& err);
nlohmann::json pipeline_json(const PipelineBound& b, const std::array<double, kCheckTensors>& err);

}  // namespace cplab
