// 04_causal_balance: the causal mask makes a contiguous ring unbalanced; zigzag makes it equal.
//
// What it is: lesson 4's program. The causal work of each quarter of the queries (mask.h
// visible_pairs), which token each rank owns under contiguous, zigzag and striped (each run's
// CpSpec::partition(), a layout.h Partition), then real causal ring runs (run_experiment, cp 4, 32
// tokens) for the three layouts: per-step tile FLOPs and per-rank FLOPs read from their traces, the
// work ratio, and the lockstep efficiency of the contiguous ring against its bound N/(2N-1), also
// at larger N from planned traces (trace_plan.h).
// What it is not: a model of the ring: the tiles, masks and FLOPs are the reference's; the lesson
// only sums the trace's FLOPs per rank and per step.
#include <algorithm>
#include <cstdio>
#include <string>

#include "run/experiment.h"
#include "lesson.h"
#include "plan/trace_plan.h"

using namespace cplab;
using namespace cplab::lesson;

namespace {

// a causal ring (p2p) of P ranks over S tokens in the given layout, 1 head of dim 4, double
RunSpec causal_ring(Layout layout, index_t P, index_t S) {
  CpFields f;
  f.mode = Mode::p2p, f.layout = layout, f.causal = true;
  f.cp = P, f.seq = S, f.heads = 1, f.kv_heads = 1, f.head_dim = 4;
  return RunSpec{.cp = CpSpec(f)};
}

// each rank's forward tile FLOPs at every step, read from the trace: [step][rank]
std::vector<std::vector<std::int64_t>> step_flops(const Trace& t) {
  std::vector<std::vector<std::int64_t>> f;
  for (const Event& e : t.events()) {
    if (e.kind != EventKind::tile || e.phase != Phase::fwd) continue;
    if (f.size() <= static_cast<size_t>(e.step)) f.resize(static_cast<size_t>(e.step) + 1, std::vector<std::int64_t>(static_cast<size_t>(t.cp()), 0));
    f[static_cast<size_t>(e.step)][static_cast<size_t>(e.rank)] += e.flops;
  }
  return f;
}

// ranks in lockstep: a step lasts as long as its busiest rank; efficiency = useful / (P x time)
double lockstep_efficiency(const Trace& t) {
  std::int64_t useful = 0, time = 0;
  for (const auto& step : step_flops(t)) {
    for (std::int64_t f : step) useful += f;
    time += *std::max_element(step.begin(), step.end());
  }
  return static_cast<double>(useful) / static_cast<double>(t.cp() * time);
}

void print_steps(const RunReport& rep) {
  const index_t P = rep.spec.cp.P();
  std::vector<std::vector<std::string>> rows;
  std::vector<std::vector<std::string>> sec(static_cast<size_t>(P));
  for (const Event& e : rep.trace.events())
    if (e.kind == EventKind::tile && e.phase == Phase::fwd)
      sec[static_cast<size_t>(e.rank)].push_back(e.section + " " + std::to_string(e.flops));
  for (index_t r = 0; r < P; ++r) {
    std::vector<std::string> row = {std::to_string(r)};
    for (const std::string& x : sec[static_cast<size_t>(r)]) row.push_back(x);
    row.push_back(std::to_string(rep.flops_fwd[static_cast<size_t>(r)]));
    rows.push_back(row);
  }
  table({"rank", "step 0", "step 1", "step 2", "step 3", "total"}, rows);
}

}  // namespace

int main(int argc, char** argv) {
  Lesson L(argc, argv, "Lesson 4: causal masks and load imbalance",
           "Under a causal mask later tokens do more work: who owns which token decides who waits.");
  const index_t P = 4, S = 32, n = S / P;

  L.step("causal work is a triangle: query a sees keys 0..a");
  std::printf("visible (query, key) pairs of each quarter of the 32 queries (mask.h visible_pairs):\n");
  std::vector<std::int64_t> quarter;
  for (index_t r = 0; r < P; ++r) quarter.push_back(visible_pairs(Mask::causal(r * n), n, S));  // rows r*n.. vs all keys
  show("pairs of queries 0-7, 8-15, 16-23, 24-31", list(quarter));
  show("all 32 queries (the dense causal mask)", visible_pairs(Mask::causal(), S, S));

  L.step("who owns which token (layout.h Partition, layout_index.h)");
  for (Layout lay : {Layout::contiguous, Layout::zigzag, Layout::striped}) {
    const RunSpec s = causal_ring(lay, P, S);
    const Partition& part = s.cp.partition();
    std::string owners;
    for (index_t g = 0; g < S; ++g) owners += static_cast<char>('0' + part.owner(g).rank);
    std::printf("%-10s token 0..31 -> rank %s\n", to_string(lay).c_str(), owners.c_str());
    for (index_t r = 0; r < P; ++r) std::printf("             rank %lld: %s\n", static_cast<long long>(r), list(part.indices(r)).c_str());
  }

  L.step("contiguous ring, causal: each rank's tile (section, FLOPs) at every step, from the trace");
  const RunSpec con_spec = causal_ring(Layout::contiguous, P, S);
  const RunReport con = run_experiment(con_spec, make_inputs(con_spec));
  print_steps(con);
  show("contiguous per-rank fwd FLOPs", list(con.flops_fwd));
  show("contiguous work ratio (max / min)", con.work_ratio);
  std::printf("Rank 0 skips every block of a later rank; rank 3 computes every earlier block in full.\n");

  L.step("the naive ring's efficiency: every step waits for its busiest rank");
  const auto cf = step_flops(con.trace);
  std::vector<std::int64_t> busiest;
  for (const auto& st : cf) busiest.push_back(*std::max_element(st.begin(), st.end()));
  show("busiest rank's FLOPs at steps 0..3", list(busiest));
  show("efficiency = useful FLOPs / (P x sum of busiest)", lockstep_efficiency(con.trace));
  show("bound N/(2N-1) for N = 4", static_cast<double>(P) / static_cast<double>(2 * P - 1));
  std::printf("Above the bound by the diagonal: a causal n x n tile has n(n+1)/2 pairs, not n^2/2.\n");
  std::printf("planned traces (trace_plan.h), 64 tokens per rank:\n");
  std::vector<std::vector<std::string>> rows;
  for (index_t N : {2, 4, 8, 16}) {
    char e1[32], e2[32];
    std::snprintf(e1, sizeof e1, "%.4f", lockstep_efficiency(plan_trace(causal_ring(Layout::contiguous, N, 64 * N))));
    std::snprintf(e2, sizeof e2, "%.4f", static_cast<double>(N) / static_cast<double>(2 * N - 1));
    rows.push_back({std::to_string(N), e1, e2});
  }
  table({"N", "efficiency", "N/(2N-1)"}, rows);

  L.step("zigzag ring, causal: the same steps, equal work");
  const RunSpec zz_spec = causal_ring(Layout::zigzag, P, S);
  const RunReport zz = run_experiment(zz_spec, make_inputs(zz_spec));
  print_steps(zz);
  show("zigzag per-rank fwd FLOPs", list(zz.flops_fwd));
  show("zigzag work ratio (max / min)", zz.work_ratio);
  show("zigzag efficiency", lockstep_efficiency(zz.trace));
  std::printf("Each rank holds one early and one late chunk, so every rank gets the same share of the triangle.\n");

  L.step("all three layouts side by side (real runs, checked against dense attention)");
  const RunSpec st_spec = causal_ring(Layout::striped, P, S);
  const RunReport st = run_experiment(st_spec, make_inputs(st_spec));
  rows.clear();
  for (const RunReport* r : {&con, &zz, &st}) {
    std::int64_t sum = 0;
    for (std::int64_t f : r->flops_fwd) sum += f;
    char ratio[32], eff[32];
    std::snprintf(ratio, sizeof ratio, "%.3f", r->work_ratio);
    std::snprintf(eff, sizeof eff, "%.3f", lockstep_efficiency(r->trace));
    rows.push_back({to_string(r->spec.cp.layout()), list(r->flops_fwd), std::to_string(sum), ratio, eff,
                    r->max_error() < 1e-12 ? "yes" : "no"});
  }
  table({"layout", "fwd FLOPs per rank", "sum", "max/min", "efficiency", "exact (1e-12)"}, rows);
  show("dense causal attention needs", con.dense_flops);
  show("striped per-rank fwd FLOPs", list(st.flops_fwd));

  L.finish(4,
           {"cplab run --mode p2p --cp 4 --seq 32 --heads 1 --kv-heads 1 --head-dim 4 --causal --layout contiguous   (this lesson's contiguous run)",
            "cplab run --mode p2p --cp 8 --seq 8192 --heads 8 --kv-heads 2 --head-dim 64 --causal --layout contiguous --plan-only   (cp 8: work ratio near 2N-1)"});
  return 0;
}
