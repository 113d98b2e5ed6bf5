// infer_check.h: `cplab check --kv-cache P`: another implementation's inference outputs against the
// reference, and what it got wrong (issue 37 item 5).
//
// What it is: the files of an inference step and the check of them, in the form of check.h's
// CheckReport (its `infer` set), so the report's text and JSON are those of every cplab check:
//   --inputs DIR    q.npy (T, heads, head-dim): the new tokens; k.npy (P+T, kv-heads, head-dim) and
//                   v.npy (P+T, kv-heads, v-head-dim): per request its P_b cached tokens then its
//                   T_b new ones, requests in order (infer_spec.h's KV space); sinks.npy (heads,)
//                   with --sinks unless --sink-logits names the file. No do.npy: inference has no
//                   backward.
//   --outputs DIR   o.npy (T, heads, v-head-dim) and optionally lse.npy (heads, T), the new tokens in
//                   global order (no per-rank shards, no gradients)
// run_infer_check computes the reference (infer_run.h infer_dense_reference, in double), compares
// (an error per output x owner rank of the new token x head; tolerances by dtype as error_map.h)
// and, when they differ, tests the inference hypotheses (faults_infer.cpp) and the training check's
// "no fault" levels; the verdict and ranking are check.h's.
// What it is not: the training check (check.h run_check, a CpSpec) or the command line
// (app/cmd_check_infer.cpp).
#pragma once

#include <string>
#include <vector>

#include "check/check.h"
#include "infer/infer_run.h"

namespace cplab {

struct InferCheckData {
  InferInputs in;  // q (T, h, d), k (P+T, hk, d), v (P+T, hk, dv), sinks (h) with --sinks
  std::string inputs_dir, outputs_dir;
  std::array<NpyDtype, 4> input_dtypes{};        // q, k, v (the 4th unused: no dO)
  std::array<ClaimedTensor, kCheckTensors> out;  // o (T, h, dv), lse (T, h, 1); no gradients
};

// Reads and checks every file for spec (cplab::Error naming the file and the rule), headers first;
// the sink logits with spec.sinks() are the spec's (InferFields::sink_logits)
InferCheckData load_infer_check_data(const InferSpec& spec, const std::string& inputs_dir,
                                     const std::string& outputs_dir);

// the context the inference hypotheses read (faults_infer.cpp)
struct InferCheckContext {
  const InferSpec& spec;
  const InferCheckData& data;
  std::array<Tensor3<double>, kCheckTensors> ref;  // o (T, h, dv), lse (T, h, 1) of the reference (with sinks)
  std::array<double, kCheckTensors> scale{}, base_err{};
  std::vector<CheckLevel> levels;
  std::vector<HypothesisResult> results;
  bool present(CheckTensor t) const { return data.out[idx(t)].present; }
  HypothesisResult& add(const Hypothesis& h) {
    return results.emplace_back(evaluate_hypothesis(h, data.out, ref, scale, base_err, levels, nullptr));
  }
};

// the inference faults (faults_infer.cpp): positions from 0 / off by one, partials summed or
// averaged without LSE weights, one rank's cache shard missing, the new tokens' KV not appended,
// partials returned to the wrong owner
void infer_hypotheses(InferCheckContext& c);

CheckReport run_infer_check(const InferSpec& spec, const InferCheckData& data, const CheckOptions& options = {});

}  // namespace cplab
