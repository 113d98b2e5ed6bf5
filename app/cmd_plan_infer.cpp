// cmd_plan_infer.cpp: `cplab plan` for an inference step: pass-KV, pass-Q and the decode variants
// by the performance model, the paper's rule beside the model's choice (see cmd_plan_infer.h).
//
// What it is: options -> InferPlanProblem + PerfAssumptions (perf_options.h's rules), the variants
// of infer_plan_model.h (each one's planned trace priced by perf_model.h), a table, the
// recommendation with its reason, the model's choice between pass-KV and pass-Q beside the rule of
// Algorithm 1 of arXiv 2411.01783 (paper_rule.h) and why they differ; --json for the same as data;
// --infer-table for docs/plan.md's markdown table (tests/infer_plan_table_check.py).
// What it is not: a measurement; the model is perf_model.h, the rule paper_rule.h.
#include "cmd_plan_infer.h"

#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>

#include "commands.h"
#include "core/error.h"
#include "infer/infer_spec.h"
#include "layout/layout_index.h"
#include "plan/infer_plan_model.h"

namespace cplab::app {

namespace {

std::string mask_words(const InferPlanProblem& p) {
  std::string s = p.causal ? "causal" : "not causal";
  if (p.window) s += ", window " + std::to_string(*p.window);
  if (p.chunk) s += ", chunk " + std::to_string(*p.chunk);
  return s;
}

std::string plural(index_t n, const char* one) { return std::to_string(n) + " " + one + (n == 1 ? "" : "s"); }

nlohmann::json rule_json(const PaperRule& r, const InferPlanProblem& p, const PerfAssumptions& a) {
  return {{"choice", r.pass_kv ? "p2p" : "pass-q"},
          {"t_threshold_tokens", r.t_threshold},
          {"ratio", r.ratio},
          {"ratio_threshold", r.ratio_threshold},
          {"t_holds", r.t_holds},
          {"ratio_holds", r.ratio_holds},
          {"C_flops", a.gpu.fwd_tflops * 1e12},
          {"BW_bytes_per_s", infer_ring_link(p, a).p2p_GBps * 1e9},
          {"e_bytes", a.bytes_per_element},
          {"reason", r.reason()}};
}

int table_action(const PlanInferArgs& o, InferPlanProblem p, const PerfAssumptions& a) {
  require(!o.given_kv_cache,
          "--infer-table sets T and P itself (T/(T+P) from 0.1% to 100% of --seq tokens): drop --kv-cache");
  require(!o.json, "--infer-table prints a markdown table: drop --json");
  require(o.seq >= 1 && o.seq <= kMaxPackedTokens, "--infer-table: --seq " + std::to_string(o.seq) +
                                                      " (the context T + P) must be in [1, 1099511627776 = 2^40]");
  p.T = o.seq;  // the context's other limits (T + P = --seq)
  p.P = 0;
  check_infer_plan_problem(p);
  if (check_only) return 0;
  std::cout << infer_rule_table_markdown(p, o.seq, infer_table_fractions(), a);
  return 0;
}

}  // namespace

int plan_infer_action(const PlanInferArgs& o) {
  InferPlanProblem p;
  p.heads = o.heads;
  p.kv_heads = o.kv_heads;
  p.head_dim = o.head_dim;
  p.gpus = o.gpus;
  p.causal = o.causal;
  p.window = o.window;
  p.chunk = o.chunk;
  p.cache_layout = parse_cache_layout(o.cache_layout);
  const PerfAssumptions a = perf_assumptions(o.perf);  // first: its gpus-per-node rule (>= 1) guards the next line
  check_whole_nodes(o.gpus, o.perf.gpus_per_node);
  if (o.table) return table_action(o, p, a);
  const std::vector<index_t> cached = parse_kv_cache(o.kv_cache, 1);  // cplab run's spelling, one request
  p.T = o.seq;
  p.P = cached.at(0);
  check_infer_plan_problem(p);
  if (check_only) return 0;
  const std::vector<InferPlanOption> v = infer_plan_options(p, a);
  const PaperRule rule = infer_paper_rule(p, a);
  const std::optional<bool> model = infer_model_pass_kv(v);
  const std::string differ = infer_rule_difference(p, v, rule);
  const index_t nodes = (p.gpus + o.perf.gpus_per_node - 1) / o.perf.gpus_per_node;
  if (o.json) {
    nlohmann::json rows = nlohmann::json::array();
    for (const InferPlanOption& x : v) {
      nlohmann::json r{{"mode", to_string(x.mode)}, {"label", x.label}, {"valid", x.valid}};
      if (x.valid)
        r.update({{"time_ms", x.pred.fwd_us / 1e3}, {"compute_ms", x.compute_us / 1e3},
                  {"ring_exposed_ms", x.ring_exposed_us / 1e3}, {"collectives_ms", x.collective_us / 1e3},
                  {"message_rows", x.message_rows}, {"message_bytes", x.message_bytes},
                  {"efficiency", x.pred.efficiency_fwd}});
      else
        r["why_not"] = x.why_not;
      rows.push_back(r);
    }
    std::cout << nlohmann::json{{"T", p.T}, {"P", p.P}, {"ratio", static_cast<double>(p.T) / static_cast<double>(p.T + p.P)},
                                {"heads", p.heads}, {"kv_heads", p.kv_heads}, {"head_dim", p.head_dim}, {"gpus", p.gpus},
                                {"gpus_per_node", o.perf.gpus_per_node}, {"causal", p.causal},
                                {"cache_layout", to_string(p.cache_layout)}, {"variants", rows},
                                {"recommended", v.front().valid ? to_string(v.front().mode) : ""},
                                {"reason", infer_plan_choice(v)},
                                {"model_pass_kv_or_pass_q", model ? nlohmann::json(*model ? "p2p" : "pass-q") : nlohmann::json(nullptr)},
                                {"paper_rule", rule_json(rule, p, a)},
                                {"agree", model ? nlohmann::json(*model == rule.pass_kv) : nlohmann::json(nullptr)},
                                {"why_they_differ", differ},
                                {"assumptions", a.to_json()}}
                     .dump(2)
              << "\n";
    return 0;
  }
  std::printf("cplab plan: one inference step, T = %lld new token%s over P = %lld cached (T/(T+P) = %.3g%%), %s, %s, head dim %lld, %s, bf16\n"
              "on %lld GPUs (%lld per node, %s), one layer's attention, predicted by the model of reference/plan/perf_model.h\n"
              "on each variant's planned trace (reference/infer/infer_plan.h)\n\n",
              static_cast<long long>(p.T), p.T == 1 ? "" : "s", static_cast<long long>(p.P), 100.0 * static_cast<double>(p.T) / static_cast<double>(p.T + p.P),
              plural(p.heads, "query head").c_str(), plural(p.kv_heads, "KV head").c_str(), static_cast<long long>(p.head_dim),
              mask_words(p).c_str(), static_cast<long long>(p.gpus), static_cast<long long>(o.perf.gpus_per_node),
              plural(nodes, "node").c_str());
  std::printf("%-17s %-8s %14s %10s %12s %13s %12s %10s\n", "variant", "travels", "message (MB)", "time (ms)", "compute (ms)",
              "ring exposed", "collectives", "efficiency");
  for (const InferPlanOption& x : v) {
    if (!x.valid) continue;
    const InferInfo& info = infer_info(x.mode);
    char msg[32] = "-";
    if (x.message_rows > 0) std::snprintf(msg, sizeof msg, "%.3f", x.message_bytes / 1e6);
    std::printf("%-17s %-8s %14s %10.3f %12.3f %10.3f ms %9.3f ms %10.2f\n", x.label.c_str(), info.travels, msg, x.pred.fwd_us / 1e3,
                x.compute_us / 1e3, x.ring_exposed_us / 1e3, x.collective_us / 1e3, x.pred.efficiency_fwd);
  }
  for (const InferPlanOption& x : v)
    if (!x.valid) std::printf("%-17s not possible: %s\n", x.label.c_str(), x.why_not.c_str());
  if (v.front().valid)
    std::printf("\nrecommended: %s: %s\n", v.front().label.c_str(), infer_plan_choice(v).c_str());
  else
    std::printf("\nno variant is possible for this step\n");
  const LinkPreset& link = infer_ring_link(p, a);
  std::printf("\nthe paper's rule (Algorithm 1 of arXiv 2411.01783: pass-KV if T >= N*C*NKV*e / (2*NH*BW) or T/(T+P) >= 2*NKV/NH,\n"
              "else pass-Q), on the model's hardware (C = %.0f TFLOP/s, BW = %.0f GB/s of %s, e = %.0f bytes, N = %lld):\n  %s\n",
              a.gpu.fwd_tflops, link.p2p_GBps, link.name.c_str(), a.bytes_per_element, static_cast<long long>(p.gpus),
              rule.reason().c_str());
  if (model) {
    const InferPlanOption &kv = infer_option(v, InferMode::pass_kv), &q = infer_option(v, InferMode::pass_q);
    std::printf("the model, between the same two: %s (pass-KV %.3f ms, pass-Q %.3f ms): %s\n", *model ? "pass-KV" : "pass-Q",
                kv.pred.fwd_us / 1e3, q.pred.fwd_us / 1e3, *model == rule.pass_kv ? "they agree" : "they differ:");
    if (!differ.empty()) std::printf("  %s\n", differ.c_str());
  }
  std::printf("\n");
  print_plan_assumptions(a);
  return 0;
}

}  // namespace cplab::app
