// check.h: `cplab check`: another CP implementation's outputs against the reference, and what it
// got wrong.
//
// What it is: run_check, which computes the reference outputs in double (run/experiment.h's dense
// oracle, one packed sequence at a time), compares the claimed outputs with them (error_map.h: an
// error per output x rank x chunk x head, against the tolerance of each output's dtype) and, when
// they differ, tests the hypotheses of hypotheses.h against the numbers; then the verdict:
//   "equivalent"                                   every output within its dtype's tolerance
//   "NOT equivalent: <the best hypothesis>"        the most specific fault that explains every
//                                                  checked output (at the tightest level one does)
//   "NOT equivalent: two faults: (1) <A>; then (2) <B>"   when no single fault explains them at the
//                                                  tightest level, a pair does (pairs.h)
//   "NOT equivalent: equivalent within float32's tolerance only ..."   no fault, but the errors are
//                                                  those of a float32 / float16 / bfloat16
//                                                  computation or merge
//   "NOT equivalent: no known fault explains it"   and where the error lives (where_lines)
//   "NOT equivalent: d s_h ..."                    O ... dV right, dsinks.npy (--sinks) wrong
//   "NOT equivalent: dQ holds 64 NaN (rank 2, chunk 2, heads 0-3); the finite values: <the above>"
//                                                  claimed NaN / inf first (error_map.h's map), then
//                                                  what explains the finite values (or ", as
//                                                  predicted by: <h>" when the best one holds them)
// CheckReport holds all of it; check_text prints it (the verdict first), check_json gives the same
// with the full error map. With a pipeline (CheckOptions::precision, `--precision`) the tightest
// level is the error a correct implementation with that pipeline has on these inputs
// (pipeline_bound.h), and the verdict says it: "equivalent (within the error a correct ring (...) at
// cp 8 has on these inputs: O 6.2e-03, ...)", or "... (O 3.1x above the error ...)".
// Exit status: 0 equivalent, 1 not (2, bad input, is the caller's). The
// inference check (infer_check.h, `cplab check --kv-cache P`) fills the same report, `infer` set.
// What it is not: the file reading (check_inputs.h) or a command line (app/cmd_check.cpp).
#pragma once

#include <memory>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>
#include <vector>

#include "check/hypotheses.h"
#include "check/pairs.h"
#include "check/pipeline_bound.h"
#include "infer/infer_spec.h"

namespace cplab {

struct CheckOptions {
  std::optional<double> tolerance;  // every output's tolerance (default: by its dtype)
  index_t samples_per_chunk = 16;   // sampled rows (and keys) per rank chunk for recomputed hypotheses
  double pair_budget_seconds = 4;   // the pair search beyond the suggested pairs stops after this (pairs.h)
  std::optional<Precision> precision;  // the pipeline whose error is the tolerance (excludes `tolerance`)
};

// d s_h (dsinks.npy) against the reference's, with --sinks and the gradients: one vector (heads), so
// one error, with the gradients' tolerance of its dtype; a wrong one is named when it is the
// reference's with the wrong sign, cp times it, or one rank's rows only (the ranks' parts never
// added up), else "no known fault"
struct SinkGradCheck {
  bool present = false;
  NpyDtype dtype = NpyDtype::f8;
  std::string source;
  double err = 0, tol = 0;
  std::string fault;  // what explains a wrong one ("" : none known, or right)
  bool ok() const { return !present || err <= tol; }
};

struct CheckReport {
  CpSpec spec;                          // a training check's spec (unused when `infer` is set)
  std::shared_ptr<const InferSpec> infer;  // an inference check's spec (infer_check.h), else null
  std::string inputs_dir, outputs_dir;
  bool arrays = false;  // checked from memory (CheckData::arrays): the text names arrays, not folders
  std::array<ClaimedTensor, kCheckTensors> out;  // what was given (x emptied: the values are not kept)
  std::array<NpyDtype, 4> input_dtypes{};
  bool has_do = false;
  std::vector<CheckLevel> levels;
  std::optional<PipelineBound> pipeline;  // with a precision: the emulated run and its bound (levels[0])
  std::vector<double> sink_logits;  // (h) with --sinks
  SinkGradCheck dsinks;
  std::array<double, kCheckTensors> err{};  // claimed vs reference, max|x - ref| / max|ref| (NaN: not given)
  ErrorMap map;
  Chunks chunks;
  std::vector<HypothesisResult> hypotheses;  // every one tested, those that explain first (best first)
  std::vector<std::string> skipped;          // families not tested: every output they change matches the reference
  PairSearch pairs;                          // two faults at once, when no single one explains (pairs.h)
  std::vector<std::string> where;           // where the error lives (outputs above tolerance)
  bool equivalent = false;
  bool outputs_equivalent = false;  // O, LSE, dQ, dK, dV (all but d s_h) within their tolerances
  std::string verdict;  // the report's first line
  index_t sampled_rows = 0, sampled_keys = 0;
  double reference_seconds = 0, hypotheses_seconds = 0;
  int exit_status() const { return equivalent ? 0 : 1; }
  // the explaining hypotheses (a prefix of `hypotheses`)
  std::vector<const HypothesisResult*> explaining() const;
};

CheckReport run_check(const CpSpec& spec, const CheckData& data, const CheckOptions& options = {});

// the steps of run_check every check shares (the inference check, infer_check.h, runs them too):
// "no fault" at the tightest level the errors fit; the ranking (those that explain first, at the
// tightest level, fewest outputs unchecked, most specific, smallest error / tolerance); the verdict
// line of a report whose outputs_equivalent, dsinks, levels and ranked hypotheses are set
HypothesisResult no_fault_hypothesis(const std::array<ClaimedTensor, kCheckTensors>& out,
                                     const std::array<double, kCheckTensors>& base_err, const std::vector<CheckLevel>& levels);
void rank_hypotheses(std::vector<HypothesisResult>& results, const std::vector<CheckLevel>& levels);
std::string check_verdict(const CheckReport& rep);

std::string check_text(const CheckReport& r);
nlohmann::json check_json(const CheckReport& r);

}  // namespace cplab
