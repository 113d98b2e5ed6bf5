// infer_plan_model.h: which tensor travels in an inference step, by the performance model, with the
// paper's own rule beside it (issue 37, item 2).
//
// What it is: for one request of T new tokens over P cached ones, a model shape and N ranks,
// infer_plan_options plans the trace of every inference variant of infer_table.h (pass-KV `p2p`,
// `pass-q`, `decode-pass-q`, `decode-ag`) with infer_plan_trace (infer/infer_plan.h: the schedule
// the reference runs, nothing computed) and prices it with perf_model.h's alpha-beta model, the
// same one `cplab plan` uses for training: per step, compute = the slowest rank's tiles at the
// kernel's rate (plus tau per tile and the (O, LSE) merges), comm = its messages through the link
// (alpha + bytes / B; the trace's messages are padded as the variants pad them), the step = the
// larger of the two, so a ring's transfer hides under its tiles and a collective alone in its step
// (pass-Q's closing all-to-all, decode-ag's gather and all-to-all) is exposed.
// infer_paper_rule evaluates paper_rule.h's rule (Algorithm 1 of arXiv 2411.01783) on the same
// hardware the model assumes: C the GPU's forward attention rate, BW the p2p bandwidth of the link
// the ring crosses (across nodes when the ranks span nodes), e bf16's 2 bytes.
// infer_rule_difference says, from the model's own numbers, why the model's choice between pass-KV
// and pass-Q differs from the rule's when it does. infer_rule_table_markdown writes docs/plan.md's
// table of both over T/(T+P) (`cplab plan --infer-table`; tests/infer_plan_table_check.py checks
// the committed copy).
// What it is not: a measurement, a run (nothing is computed or checked), or a batch of requests
// (one request; the variants' own tests cover packed batches).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "infer/infer_spec.h"
#include "plan/paper_rule.h"
#include "plan/perf_model.h"

namespace cplab {

struct InferPlanProblem {
  index_t T = 1024, P = 0;  // new and cached tokens of the one request
  index_t heads = 16, kv_heads = 1, head_dim = 128;
  index_t gpus = 4;         // N, the CP ranks
  bool causal = true;
  std::optional<index_t> window = {}, chunk = {};
  Layout layout = Layout::zigzag;                  // the prefill variants' split of the new tokens
  CacheLayout cache_layout = CacheLayout::zigzag;  // how the cache is sharded
};

// The limits, before anything is derived (cplab::Error naming the rule): gpus in [1, 256], T in
// [1, 2^40], P in [0, 2^40], T + P <= 2^40, N (2T + P) <= kMaxInferPlanRows (the rows the ring
// variants' plans walk, and a bound on their traces' memory), heads, kv-heads, head-dim in
// [1, 65536], the mask rules.
// Each variant then meets InferSpec's rules and the planner's work bound, or is listed with the rule.
inline constexpr double kMaxInferPlanRows = 268435456.0;  // 2^28
void check_infer_plan_problem(const InferPlanProblem& p);

struct InferPlanOption {
  InferMode mode = InferMode::pass_kv;
  std::string label;             // "pass-KV (p2p)", "pass-Q (pass-q)", ...
  bool valid = true;
  std::string why_not;           // the rule an invalid variant breaks
  PerfPrediction pred;           // forward only: pred.fwd_us is the step's time
  double compute_us = 0;         // sum over steps of the slowest rank's compute
  double flops = 0;              // the trace's tile FLOPs (the mask's visible pairs only)
  double collective_us = 0;      // exposed time of the gather and all-to-all steps (no tile beside them)
  double ring_exposed_us = 0;    // exposed communication of the ring's steps
  double message_rows = 0;       // rows of one ring message (Mkv or Mq, padded as the paper does); 0: no ring
  double message_bytes = 0;      // bytes of one ring message on the wire (bf16)
  double alpha_us = 0;           // the latency of the ranks' link, per transfer
};

// every variant of infer_table(), valid ones first by predicted time
std::vector<InferPlanOption> infer_plan_options(const InferPlanProblem& p, const PerfAssumptions& a);
// the one with the given mode (it is always in the list)
const InferPlanOption& infer_option(const std::vector<InferPlanOption>& v, InferMode m);

// the rule on the model's hardware: C = a.gpu.fwd_tflops (the preset or --tflops; with a calibration
// file the model's tiles take measured rates, the rule keeps this one), BW = the ranks' link p2p
// bandwidth, e = a.bytes_per_element (bf16: 2)
PaperRule infer_paper_rule(const InferPlanProblem& p, const PerfAssumptions& a);
// the link the ring crosses: a.inter when the N ranks span nodes, else a.intra
const LinkPreset& infer_ring_link(const InferPlanProblem& p, const PerfAssumptions& a);

// The recommendation and its reason in one line: the fastest variant, what its time is made of
// (compute, exposed transfer, collectives) and the next best for comparison.
std::string infer_plan_choice(const std::vector<InferPlanOption>& sorted);

// The model's choice between pass-KV and pass-Q alone (the rule's two candidates): true if pass-KV
// is no slower; nullopt when either is invalid.
std::optional<bool> infer_model_pass_kv(const std::vector<InferPlanOption>& v);

// Why the model and the rule agree or differ, from the model's numbers: empty when they agree, else
// a sentence naming what the rule leaves out and its size (pass-Q's closing all-to-all, pass-KV's
// exposed transfer with its latency, padding and causal share). brief: the table's short form.
std::string infer_rule_difference(const InferPlanProblem& p, const std::vector<InferPlanOption>& v, const PaperRule& rule,
                                  bool brief = false);

// docs/plan.md's table: for each fraction f of fractions (T = max(1, round(f * context)), P =
// context - T), and at T = round(0.95 T*) and ceil(T*) (T* the rule's T threshold, where the two
// part), the four variants' times, the model's choice between pass-KV and pass-Q, the rule's (with
// the condition that held: (T), (ratio)), and why they differ. shape: its heads, kv-heads,
// head-dim, gpus, mask and layouts.
std::string infer_rule_table_markdown(const InferPlanProblem& shape, index_t context, const std::vector<double>& fractions,
                                      const PerfAssumptions& a);
// the docs table's fractions: 0.1%, 0.3%, 1%, 3%, 10%, 30%, 100%
std::vector<double> infer_table_fractions();

}  // namespace cplab
