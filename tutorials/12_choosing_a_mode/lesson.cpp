// 12_choosing_a_mode: when ring communication hides behind compute, and what the model recommends.
//
// What it is: lesson 12's program. The crossover c* = kappa F / (g B) (compute time of a
// block = its transfer time) with the presets' F and B (perf_model.h gpu_preset, link_preset);
// then the performance model itself (perf_model.h predict on the trace trace_plan.h plans) on one
// forward ring step at tokens per rank below and above c*, over NVLink (nvlink4) and InfiniBand
// (ib-ndr): first with the formula's assumptions (no latency, no per-tile cost), then with the
// presets' latency and per-tile cost, and where the step stops being comm-bound; last the
// planner's table (planner.h plan_options, what `cplab plan` prints) for three shapes.
// What it is not: a measurement, or a model of its own: every time is predict()'s, c* is the
// the closed form evaluated on the presets for comparison.
#include <cstdio>

#include "lesson.h"
#include "plan/planner.h"
#include "plan/trace_plan.h"

using namespace cplab;
using namespace cplab::lesson;

namespace {

const index_t kHeads = 32, kKvHeads = 8, kHeadDim = 128, kCp = 4;  // Llama-3-8B-like attention, a ring of 4

std::string fixed(double x, int digits) {
  char b[32];
  std::snprintf(b, sizeof b, "%.*f", digits, x);
  return b;
}

// the presets of `cplab plan` (h100, nvlink4 inside a node, ib-ndr across); gpus_per_node 1 puts
// every rank on its own node, so every ring hop crosses InfiniBand
PerfAssumptions presets(index_t gpus_per_node) {
  PerfAssumptions a;
  a.gpu = gpu_preset("h100");
  a.intra = link_preset("nvlink4");
  a.inter = link_preset("ib-ndr");
  a.gpus_per_node = gpus_per_node;
  return a;
}

// the formula's assumptions: no latency, no per-tile cost, merges free
PerfAssumptions formula_only(index_t gpus_per_node) {
  PerfAssumptions a = presets(gpus_per_node);
  a.tau_us = 0;
  a.gpu.hbm_TBps = 1e12;
  a.intra.alpha_us = a.inter.alpha_us = 0;
  return a;
}

// the model's forward step 1 (a half-block step of the zigzag ring) at c tokens per rank
StepTime ring_step(index_t c, const PerfAssumptions& a) {
  CpFields f;  // a causal zigzag ring of P = kCp ranks, n = c tokens each
  f.mode = Mode::p2p, f.layout = Layout::zigzag, f.causal = true;
  f.cp = kCp, f.seq = kCp * c;
  f.heads = kHeads, f.kv_heads = kKvHeads, f.head_dim = kHeadDim;
  const RunSpec s{.cp = CpSpec(f), .dtype = "float"};  // forward only, planned (never run)
  return predict(plan_trace(s), s, a).steps.at(1);
}

void step_table(const std::vector<index_t>& cs, const PerfAssumptions& a) {
  std::vector<std::vector<std::string>> rows;
  for (index_t c : cs) {
    const StepTime st = ring_step(c, a);
    rows.push_back({std::to_string(c), fixed(st.compute_us, 2), fixed(st.comm_us, 2), fixed(st.time_us, 2),
                    st.comm_us > st.compute_us ? "comm-bound" : "compute-bound (comm hidden)"});
  }
  table({"tokens/rank", "compute (us)", "comm (us)", "step (us)", ""}, rows);
}

// the smallest even c in [lo, hi] at which the model's step 1 is not comm-bound (bisection)
index_t crossover(const PerfAssumptions& a, index_t lo, index_t hi) {
  auto hidden = [&](index_t c) { const StepTime st = ring_step(c, a); return st.comm_us <= st.compute_us; };
  while (hi - lo > 2) {
    const index_t mid = (lo + hi) / 4 * 2;
    (hidden(mid) ? hi : lo) = mid;
  }
  return hi;
}

void plan_rows(index_t seq, index_t gpus, index_t gpus_per_node) {
  PerfAssumptions a = presets(gpus_per_node);
  const PlanProblem p{seq, kHeads, kKvHeads, kHeadDim, gpus, true, true};
  std::printf("%lld tokens, %lld GPUs, %lld per node (%lld tokens per GPU):\n", static_cast<long long>(seq),
              static_cast<long long>(gpus), static_cast<long long>(gpus_per_node), static_cast<long long>(seq / gpus));
  std::vector<std::vector<std::string>> rows;
  for (const PlanOption& o : plan_options(p, a))
    if (o.valid)
      rows.push_back({o.label, fixed(o.pred.fwd_us / 1e3, 3), fixed(o.pred.bwd_us / 1e3, 3), fixed(o.pred.total_us() / 1e3, 3),
                      fixed(o.pred.efficiency_fwd, 2) + " / " + fixed(o.pred.efficiency_bwd, 2), fixed(o.pred.exposed_comm_us / 1e3, 3), o.note});
  table({"candidate", "fwd (ms)", "bwd (ms)", "total (ms)", "efficiency", "exposed (ms)", "notes"}, rows);
  show("recommended", rows.front()[0]);
}

}  // namespace

int main(int argc, char** argv) {
  Lesson L(argc, argv, "Lesson 12: choosing a mode: when the ring's communication hides",
           "A ring step overlaps sending KV with computing on the KV it holds; it is free when the compute is longer.");

  L.step("the crossover c* = kappa F / (g B) (Ring Attention, arXiv 2310.01889; bf16)");
  const GpuPreset gpu = gpu_preset("h100");
  const LinkPreset nvl = link_preset("nvlink4"), ib = link_preset("ib-ndr");
  const double g = static_cast<double>(kHeads) / static_cast<double>(kKvHeads);
  std::printf("A ring step: c local queries x c keys of the KV block held, 4 H_q c^2 d / kappa FLOPs,\n"
              "while the block (K and V: 2 H_kv c d e bytes) goes to the next rank. Hidden when\n"
              "FLOPs / F >= bytes / B, i.e. c >= kappa (F / B) (e / 2) / g; with bf16 (e = 2): kappa F / (g B).\n"
              "kappa = 1 for full blocks, 2 for the causal zigzag's half blocks; g = H_q / H_kv.\n");
  show("F, attention forward TFLOP/s (preset h100)", gpu.fwd_tflops);
  show("g = 32 query heads / 8 KV heads", g);
  std::vector<std::vector<std::string>> rows;
  for (const LinkPreset& l : {nvl, ib})
    rows.push_back({l.name, fmt(l.p2p_GBps), fmt(gpu.fwd_tflops * 1e12 / (g * l.p2p_GBps * 1e9)),
                    fmt(2 * gpu.fwd_tflops * 1e12 / (g * l.p2p_GBps * 1e9))});
  table({"link", "B (GB/s)", "c* full blocks", "c* causal zigzag"}, rows);
  std::printf("Head dim and head count cancel; only g survives. A faster kernel (larger F) needs more tokens.\n");

  L.step("the model on one ring step, with the formula's assumptions (no latency, no per-tile cost)");
  std::printf("forward step 1 of a causal zigzag ring of 4 (half blocks), 32 heads (8 KV) of 128, bf16;\n"
              "NVLink: the 4 ranks in one node; InfiniBand: each rank on its own node\n");
  std::printf("nvlink4:\n");
  step_table({236, 472, 474, 946}, formula_only(8));
  std::printf("ib-ndr:\n");
  step_table({1902, 3804, 3806, 7608}, formula_only(1));
  std::printf("The model's step turns from comm-bound to hidden between the two even token counts around c*.\n");

  L.step("the same step with the presets' latency alpha, 5 us per tile and the (O, LSE) merges");
  show("alpha nvlink4 (us)", nvl.alpha_us);
  show("alpha ib-ndr (us)", ib.alpha_us);
  std::printf("nvlink4:\n");
  step_table({256, 512, 1024, 2048}, presets(8));
  std::printf("ib-ndr:\n");
  step_table({2048, 4096, 8192, 16384}, presets(1));
  std::printf("smallest even tokens/rank at which the model's step is not comm-bound:\n");
  rows.clear();
  for (index_t gpn : {8, 1}) {
    PerfAssumptions alpha_only = formula_only(gpn);  // the formula's model plus the links' latency
    alpha_only.intra.alpha_us = nvl.alpha_us, alpha_only.inter.alpha_us = ib.alpha_us;
    rows.push_back({gpn == 8 ? "nvlink4" : "ib-ndr", std::to_string(crossover(formula_only(gpn), 2, 65536)),
                    std::to_string(crossover(alpha_only, 2, 65536)), std::to_string(crossover(presets(gpn), 2, 65536))});
  }
  table({"link", "formula's assumptions", "+ alpha", "+ alpha, 5 us per tile, merges (presets)"}, rows);

  L.step("what `cplab plan` recommends (plan_options: every mode's planned trace through the model)");
  plan_rows(32768, 8, 8);
  plan_rows(32768, 32, 8);
  plan_rows(131072, 32, 8);
  std::printf("Predictions of the model with the presets above (h100 350/300 TFLOP/s, nvlink4 inside a node,\n"
              "ib-ndr across), not measurements: no GPU run has checked them yet.\n");

  L.finish(12,
           {"cplab plan --seq 32768 --heads 32 --kv-heads 8 --head-dim 128 --gpus 32 --gpus-per-node 8   (the second table, with its assumptions)",
            "cplab plan --seq 32768 --heads 32 --kv-heads 8 --head-dim 128 --gpus 8 --gpus-per-node 8 --tflops 600   (a faster kernel)"});
  return 0;
}
