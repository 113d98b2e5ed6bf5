// planner.cpp: candidates, their planned traces and predictions (see planner.h).
#include "plan/planner.h"

#include <algorithm>

#include "core/error.h"
#include "plan/trace_plan.h"

namespace cplab {

namespace {

void check_range(index_t v, const char* what, index_t hi, const std::string& why) {
  require(v >= 1, std::string(what) + " " + std::to_string(v) + " must be >= 1");
  require(v <= hi,
          std::string(what) + " " + std::to_string(v) + " is more than " + std::to_string(hi) + " (" + why + ")");
}

}  // namespace

void check_gpus_per_node(index_t gpus_per_node) {
  check_range(gpus_per_node, "gpus-per-node", kMaxGpusPerNode, "more than any NVLink domain");
}

void check_plan_problem(const PlanProblem& p, index_t gpus_per_node) {
  check_range(p.gpus, "gpus", kMaxRanks, "a plan traces every rank, as the CPU reference simulates them");
  check_gpus_per_node(gpus_per_node);
  check_range(p.seq, "seq", kMaxPackedTokens, "2^40 tokens, the most cplab takes");
  check_range(p.heads, "heads", kMaxHeads, "cplab's limit on head counts and head dims");
  check_range(p.kv_heads, "kv-heads", kMaxHeads, "cplab's limit on head counts and head dims");
  check_range(p.head_dim, "head-dim", kMaxHeads, "cplab's limit on head counts and head dims");
}

std::vector<PlanOption> plan_options(const PlanProblem& p, const PerfAssumptions& a) {
  check_plan_problem(p, a.gpus_per_node);
  CpFields base;
  base.cp = p.gpus;
  base.seq = p.seq;
  base.heads = p.heads;
  base.kv_heads = p.kv_heads;
  base.head_dim = p.head_dim;
  base.causal = p.causal;
  std::vector<PlanOption> out;
  auto add = [&](CpFields f, std::string label, std::string note) {
    PlanOption o{f, std::move(label), std::move(note), true, "", {}};
    try {
      RunSpec s;
      s.cp = CpSpec(f);  // the candidate's rules
      s.backward = p.backward;
      s.dtype = "float";
      o.pred = predict(plan_trace(s), s, a);
    } catch (const Error& e) {
      o.valid = false;
      o.why_not = e.what();
    }
    out.push_back(std::move(o));
  };
  for (Layout l : {Layout::zigzag, Layout::striped, Layout::contiguous}) {
    CpFields s = base;
    s.mode = Mode::p2p;
    s.layout = l;
    add(s, "p2p " + to_string(l), l == Layout::contiguous && p.causal ? "naive ring: causal work piles up on the last ranks" : "");
  }
  {
    CpFields s = base;
    s.mode = Mode::allgather;
    add(s, "allgather zigzag", "KV of the whole sequence held by every rank");
  }
  auto replicate = [&](CpFields& s, index_t a2a, std::string& note) {
    if (p.kv_heads % a2a != 0 && a2a % p.kv_heads == 0) {
      s.replicate_kv = true;
      note = "KV heads replicated " + std::to_string(a2a / p.kv_heads) + "x (fewer KV heads than the a2a size)";
    }
  };
  {
    CpFields s = base;
    s.mode = Mode::a2a;
    std::string note;
    replicate(s, p.gpus, note);
    add(s, "a2a (Ulysses) " + std::to_string(p.gpus), note);
  }
  for (index_t icp = 2; icp < p.gpus; icp *= 2) {
    if (p.gpus % icp != 0 || icp > a.gpus_per_node) continue;
    CpFields s = base;
    s.mode = Mode::a2a_p2p;
    s.icp = icp;
    s.ocp = p.gpus / icp;
    std::string note = "a2a " + std::to_string(icp) + " inside, ring " + std::to_string(s.ocp) + " across";
    std::string rep;
    replicate(s, icp, rep);
    add(s, "a2a+p2p " + std::to_string(icp) + "x" + std::to_string(s.ocp), rep.empty() ? note : note + "; " + rep);
  }
  std::stable_sort(out.begin(), out.end(), [](const PlanOption& x, const PlanOption& y) {
    if (x.valid != y.valid) return x.valid;
    return x.valid && x.pred.total_us() < y.pred.total_us();
  });
  return out;
}

}  // namespace cplab
