// paper_rule.h: the paper's own rule for which tensor travels in an inference step, pass-KV or
// pass-Q (Algorithm 1 of Yang et al., "Context Parallelism for Scalable Million-Token Inference",
// arXiv 2411.01783, MLSys 2025), as one function that `cplab plan`, the docs table
// (docs/plan.md) and the lesson all call.
//
// What it is: T new tokens over P cached ones on N CP ranks; C a rank's peak compute (FLOP/s),
// BW its link bandwidth (bytes/s), e bytes per element, NKV / NH the KV / query heads:
//   pass-KV  if  T >= N·C·NKV·e / (2·NH·BW)     (pass-KV's ring transfer hides under its compute)
//            or  T/(T+P) >= 2·NKV/NH            (the KV block is no larger than the Q block)
//   pass-Q   otherwise.
// Where the thresholds come from (the paper's Section 3): a pass-KV ring step sends a rank's K and
// V, 2·(T+P)/N·NKV·D·e bytes, while it computes T/N queries against (T+P)/N keys, 4·(T/N)·((T+P)/N)
// ·NH·D FLOPs (no mask); the transfer hides when 2·(T+P)·NKV·D·e / (N·BW) <= 4·T·(T+P)·NH·D /
// (N²·C), that is T >= N·C·NKV·e / (2·NH·BW). Pass-Q sends T/N·NH·D·e per step instead, smaller
// than the KV block when T·NH < 2·(T+P)·NKV. The ratio test is made exactly, in 64-bit integers
// (T·NH >= 2·NKV·(T+P)), so that its boundary is the boundary; the T test in double, as written.
// The rule assumes full overlap of the ring's transfers, no latency, no padding, no causal mask
// and no cost for pass-Q's closing all-to-all; the performance model (infer_plan_model.h) prices
// all of those, which is why the two can differ.
// What it is not: the performance model, or a choice among the decode variants (the rule only
// weighs pass-KV against pass-Q).
#pragma once

#include <cstdint>
#include <string>

namespace cplab {

struct PaperRule {
  bool pass_kv = true;            // the rule's choice (false: pass-Q)
  std::int64_t T = 0;             // the new tokens it was given
  double t_threshold = 0;         // N·C·NKV·e / (2·NH·BW), tokens
  double ratio = 0;               // T / (T+P)
  double ratio_threshold = 0;     // 2·NKV / NH
  bool t_holds = false;           // T >= t_threshold
  bool ratio_holds = false;       // T/(T+P) >= 2·NKV/NH (exact: T·NH >= 2·NKV·(T+P))
  // one line: which condition decided, with the numbers ("pass-KV: T = 4096 >= 1902 tokens ...")
  std::string reason() const;
};

// T >= 1, P >= 0, N >= 1 (each <= 2^40), NKV, NH in [1, 2^20]; C, e, BW finite and > 0; otherwise
// cplab::Error naming the argument and the rule
PaperRule paper_rule_pass_kv(std::int64_t T, std::int64_t P, std::int64_t N, double C, std::int64_t NKV, std::int64_t NH,
                             double e, double BW);

}  // namespace cplab
