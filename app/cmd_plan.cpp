// cmd_plan.cpp: `cplab plan`: which CP mode for an attention shape on N GPUs, by the performance model.
//
// What it is: options -> PlanProblem + PerfAssumptions (presets, --tflops, --calibration, checked
// by plan/perf_options.h, which cplab-viz's timeline shares; --window / --chunk from
// mask_options.h; --cp is --gpus, as cplab run names it), the candidates of planner.h, a table
// (predicted forward / backward time per layer, efficiency, exposed communication), the
// recommendation with its reason in one line (planner.h plan_choice), and every assumption the
// numbers rest on (print_plan_assumptions). With --kv-cache P (an inference step of --seq T new
// tokens) or --infer-table, the options go to cmd_plan_infer.cpp instead.
// What it is not: a measurement; the model is perf_model.h.
#include <cstdio>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>

#include "cmd_plan_infer.h"
#include "commands.h"
#include "core/error.h"
#include "mask_options.h"
#include "plan/perf_options.h"
#include "plan/planner.h"

namespace cplab::app {

namespace {

struct PlanOptions {
  index_t seq = 131072, heads = 32, kv_heads = 8, head_dim = 128, gpus = 8;
  bool no_causal = false, forward_only = false, json = false;
  std::string kv_cache;                       // --kv-cache P: an inference step (cmd_plan_infer.cpp)
  bool infer_table = false;                   // --infer-table: docs/plan.md's table of model and rule
  std::string cache_layout;                   // --cache-layout (inference only)
  CLI::Option *kv_cache_opt = nullptr, *cache_layout_opt = nullptr;  // given or not (an empty value is refused, not ignored)
  PerfOptions perf;  // --gpu, --intra, --inter, --gpus-per-node, --tau-us, --tflops, --bwd-tflops, --calibration
  MaskOptions mask;  // --window, --chunk (mask_options.h)
};

std::string sizes_of(const PlanOption& o) {
  const CpFields& s = o.cp;
  if (s.mode == Mode::a2a_p2p) return "a2a " + std::to_string(s.icp) + " x ring " + std::to_string(s.ocp);
  return mode_info(s.mode).short_name + (" " + std::to_string(s.cp));
}

int plan_action(const PlanOptions& o) {
  CpFields mask;  // --window / --chunk, when given
  mask.causal = !o.no_causal;
  apply_mask_options(o.mask, mask);
  const bool given_kv_cache = o.kv_cache_opt && o.kv_cache_opt->count() > 0;
  const bool given_cache_layout = o.cache_layout_opt && o.cache_layout_opt->count() > 0;
  if (given_kv_cache || o.infer_table) {  // an inference step: T = --seq new tokens over P cached
    PlanInferArgs x;
    x.seq = o.seq;
    x.kv_cache = o.kv_cache;
    x.given_kv_cache = given_kv_cache;
    x.table = o.infer_table;
    x.heads = o.heads, x.kv_heads = o.kv_heads, x.head_dim = o.head_dim, x.gpus = o.gpus;
    x.causal = mask.causal;
    x.window = mask.window;
    x.chunk = mask.chunk;
    if (given_cache_layout) x.cache_layout = o.cache_layout;
    x.perf = o.perf;
    x.json = o.json;
    return plan_infer_action(x);
  }
  require(!given_cache_layout, "--cache-layout needs --kv-cache (an inference step) or --infer-table");
  const PlanProblem p{o.seq, o.heads, o.kv_heads, o.head_dim, o.gpus, mask.causal, !o.forward_only, mask.window, mask.chunk};
  const index_t gpus_per_node = o.perf.gpus_per_node;
  check_plan_problem(p, gpus_per_node);  // the sizes' limits, before anything is derived from them
  check_whole_nodes(o.gpus, gpus_per_node);
  const PerfAssumptions a = perf_assumptions(o.perf);  // presets, rates, tau, calibration (shared with cplab-viz)
  if (check_only) return 0;  // tests/fuzz: the inputs are checked
  const std::vector<PlanOption> opts = plan_options(p, a);
  const index_t nodes = (o.gpus + gpus_per_node - 1) / gpus_per_node;
  if (o.json) {
    nlohmann::json rows = nlohmann::json::array();
    for (const PlanOption& x : opts) {
      nlohmann::json r{{"label", x.label}, {"mode", to_string(x.cp.mode)}, {"layout", to_string(x.cp.layout)}, {"sizes", sizes_of(x)},
                       {"valid", x.valid}, {"note", x.note}};
      if (x.valid)
        r.update({{"fwd_ms", x.pred.fwd_us / 1e3}, {"bwd_ms", x.pred.bwd_us / 1e3}, {"total_ms", x.pred.total_us() / 1e3},
                  {"efficiency_fwd", x.pred.efficiency_fwd}, {"efficiency_bwd", x.pred.efficiency_bwd},
                  {"exposed_comm_ms", x.pred.exposed_comm_us / 1e3},
                  {"ring_hops", x.ring_hops >= 0 ? nlohmann::json(x.ring_hops) : nlohmann::json(nullptr)}});
      else
        r["why_not"] = x.why_not;
      rows.push_back(r);
    }
    std::cout << nlohmann::json{{"seq", o.seq}, {"heads", o.heads}, {"kv_heads", o.kv_heads}, {"head_dim", o.head_dim},
                                {"gpus", o.gpus}, {"gpus_per_node", gpus_per_node}, {"causal", p.causal}, {"backward", p.backward},
                                {"window", p.window ? nlohmann::json(*p.window) : nlohmann::json(nullptr)},
                                {"chunk", p.chunk ? nlohmann::json(*p.chunk) : nlohmann::json(nullptr)},
                                {"options", rows}, {"recommended", opts.front().valid ? opts.front().label : ""},
                                {"reason", plan_choice(p, opts)},
                                {"assumptions", a.to_json()}}
                     .dump(2)
              << "\n";
    return 0;
  }
  std::string mask_text = p.causal ? "causal" : "not causal";
  if (p.window) mask_text += ", window " + std::to_string(*p.window);
  if (p.chunk) mask_text += ", chunk " + std::to_string(*p.chunk);
  std::printf("cplab plan: attention of %lld tokens, %lld query heads, %lld KV heads, head dim %lld, %s, bf16, %s\n"
              "on %lld GPUs (%lld per node, %lld node%s), one layer, predicted by the model of reference/plan/perf_model.h\n\n",
              static_cast<long long>(o.seq), static_cast<long long>(o.heads), static_cast<long long>(o.kv_heads),
              static_cast<long long>(o.head_dim), mask_text.c_str(), p.backward ? "forward + backward" : "forward only",
              static_cast<long long>(o.gpus), static_cast<long long>(gpus_per_node), static_cast<long long>(nodes), nodes == 1 ? "" : "s");
  std::printf("%-22s %-22s %9s %9s %10s %11s %12s  %s\n", "candidate", "sizes", "fwd (ms)", "bwd (ms)", "total (ms)", "efficiency", "exposed comm", "notes");
  for (const PlanOption& x : opts) {
    if (!x.valid) continue;
    char eff[32];
    std::snprintf(eff, sizeof eff, p.backward ? "%.2f / %.2f" : "%.2f", x.pred.efficiency_fwd, x.pred.efficiency_bwd);
    std::printf("%-22s %-22s %9.3f %9.3f %10.3f %11s %9.3f ms  %s\n", x.label.c_str(), sizes_of(x).c_str(), x.pred.fwd_us / 1e3,
                x.pred.bwd_us / 1e3, x.pred.total_us() / 1e3, eff, x.pred.exposed_comm_us / 1e3, x.note.c_str());
  }
  for (const PlanOption& x : opts)
    if (!x.valid) std::printf("%-22s not possible: %s\n", x.label.c_str(), x.why_not.c_str());
  if (opts.front().valid) {  // the choice and its reason, one line (planner.h plan_choice)
    const PlanOption& b = opts.front();
    std::printf("\nrecommended: %s (%s): %s\n", b.label.c_str(), sizes_of(b).c_str(), plan_choice(p, opts).c_str());
  } else {
    std::printf("\nno candidate is possible for this shape\n");
  }
  std::printf("\n");
  print_plan_assumptions(a);
  return 0;
}

}  // namespace

void print_plan_assumptions(const PerfAssumptions& a) {
  std::printf("assumptions (presets are published figures, not measurements of this machine):\n"
              "  GPU %s: attention %.0f TFLOP/s forward, %.0f backward%s; HBM %.1f TB/s for the (O, LSE) merges\n"
              "    (%s)\n"
              "  inside a node, %s: p2p %.0f GB/s, all-gather %.0f, all-to-all %.0f, alpha %.0f us\n    (%s)\n"
              "  across nodes, %s: p2p %.0f GB/s, all-gather %.0f, all-to-all %.0f, alpha %.0f us\n    (%s)\n"
              "  %.0f us per tile (launch and tail); bf16 inputs; ranks numbered node-major (rank r on node r / %lld)\n"
              "  a step lasts max(compute, communication) on its slowest rank: a ring step's KV transfer overlaps its\n"
              "  tiles, a collective alone in its step is exposed; efficiency = useful FLOPs / (GPUs x rate x time)\n",
              a.gpu.name.c_str(), a.gpu.fwd_tflops, a.gpu.bwd_tflops, a.calibration.empty() ? "" : (" (per tile from " + a.calibration.source + ")").c_str(),
              a.gpu.hbm_TBps, a.gpu.source.c_str(), a.intra.name.c_str(), a.intra.p2p_GBps, a.intra.allgather_GBps, a.intra.a2a_GBps,
              a.intra.alpha_us, a.intra.source.c_str(), a.inter.name.c_str(), a.inter.p2p_GBps, a.inter.allgather_GBps,
              a.inter.a2a_GBps, a.inter.alpha_us, a.inter.source.c_str(), a.tau_us, static_cast<long long>(a.gpus_per_node));
}

void setup_plan(CLI::App& app, int& status) {
  auto o = std::make_shared<PlanOptions>();
  CLI::App* sub = app.add_subcommand(
      "plan", "Recommend a CP mode (and hierarchical sizes) for an attention shape on N GPUs, with predicted times\n"
              "from an alpha-beta model evaluated on each mode's own schedule. Examples:\n"
              "  cplab plan --seq 131072 --heads 32 --kv-heads 8 --head-dim 128 --gpus 16 --gpus-per-node 8\n"
              "  cplab plan --window 4096 --seq 131072 --cp 8\n"
              "  cplab plan --kv-cache 129761 --seq 1311 --heads 16 --kv-heads 1 --head-dim 128 --gpus 4 --gpus-per-node 1");
  sub->add_option("--seq", o->seq, "tokens of the sequence (global)")->capture_default_str();
  sub->add_option("--heads", o->heads, "query heads (per GPU after tensor parallelism)")->capture_default_str();
  sub->add_option("--kv-heads", o->kv_heads, "KV heads")->capture_default_str();
  sub->add_option("--head-dim", o->head_dim, "head dim")->capture_default_str();
  sub->add_option("--gpus,--cp", o->gpus, "GPUs in the CP group (--cp: the same, as cplab run names it)")->capture_default_str();
  sub->add_option("--gpus-per-node", o->perf.gpus_per_node, "GPUs per node (NVLink inside, the inter-node link across)")->capture_default_str();
  sub->add_flag("--no-causal", o->no_causal, "full (bidirectional) attention instead of causal");
  add_mask_options(sub, o->mask, false);  // --window --chunk: the candidates' tiles and ring hops follow them
  sub->add_flag("--forward-only", o->forward_only, "predict the forward pass only (inference prefill)");
  sub->add_option("--gpu", o->perf.gpu, "GPU preset: " + preset_choices(gpu_preset_names()))->capture_default_str();
  sub->add_option("--intra", o->perf.intra, "link inside a node: " + preset_choices(link_preset_names()))->capture_default_str();
  sub->add_option("--inter", o->perf.inter, "link across nodes: " + preset_choices(link_preset_names()))->capture_default_str();
  sub->add_option("--tflops", o->perf.tflops, "override the forward attention TFLOP/s (backward: 0.85x unless --bwd-tflops)");
  sub->add_option("--bwd-tflops", o->perf.bwd_tflops, "override the backward attention TFLOP/s");
  sub->add_option("--calibration", o->perf.calibration, "measured single-GPU throughput: `cplab-bench attention --json FILE` output");
  sub->add_option("--tau-us", o->perf.tau_us, "fixed cost per tile in microseconds")->capture_default_str();
  o->kv_cache_opt = sub->add_option("--kv-cache", o->kv_cache,
                  "an inference step: P tokens already cached, --seq T new tokens attending to them and to themselves;\n"
                  "predicts pass-KV (p2p), pass-Q and the decode variants and prints the paper's rule beside the model");
  sub->add_flag("--infer-table", o->infer_table,
                "print the markdown table of the model's choice and the paper's rule over T/(T+P) from 0.1% to 100%\n"
                "of a context of --seq tokens (docs/plan.md)");
  o->cache_layout_opt = sub->add_option("--cache-layout", o->cache_layout, "inference: how the cache is sharded: zigzag (default) | interleaved");
  sub->add_flag("--json", o->json, "print JSON");
  sub->callback([o, &status] { status = plan_action(*o); });
}

}  // namespace cplab::app
