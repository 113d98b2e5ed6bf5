// planner.cpp: candidates, their planned traces and predictions (see planner.h).
#include "plan/planner.h"

#include <algorithm>
#include <cstdio>

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
  CpFields mask;
  mask.causal = p.causal;
  mask.window = p.window;
  mask.chunk = p.chunk;
  check_mask_rules(mask);
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
  base.window = p.window;
  base.chunk = p.chunk;
  const bool plain = !p.window && !p.chunk;
  std::vector<PlanOption> out;
  auto add = [&](CpFields f, std::string label, std::string note) {
    PlanOption o{f, std::move(label), std::move(note), true, "", {}};
    try {
      RunSpec s;
      s.cp = CpSpec(f);  // the candidate's rules
      s.backward = p.backward;
      s.dtype = "float";
      o.pred = predict(plan_trace(s), s, a);
      o.ring_hops = s.cp.ring_hops();
      o.ring_size = f.mode == Mode::a2a_p2p ? f.ocp : f.cp;
      if (!plain && o.ring_hops >= 0)  // what the window or chunk did to the ring
        o.note += std::string(o.note.empty() ? "" : "; ") +
                  (o.ring_hops < o.ring_size - 1 ? "ring stops after " + std::to_string(o.ring_hops) + " of " +
                                                       std::to_string(o.ring_size - 1) + " hops"
                                                 : o.ring_size == 2 ? "its 1 ring hop"
                                                                    : "all " + std::to_string(o.ring_size - 1) + " ring hops");
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
    add(s, "p2p " + to_string(l), l == Layout::contiguous && p.causal && plain ? "naive ring: causal work piles up on the last ranks" : "");
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

namespace cplab {

namespace {

std::string ms(double us) {
  char b[32];
  std::snprintf(b, sizeof b, "%.3f ms", us / 1e3);
  return b;
}

// "window 4096" / "chunks of 512" / "the causal mask" / "the full mask": what the rule is, in words
std::string rule_words(const PlanProblem& p) {
  if (p.window) return "window " + std::to_string(*p.window);
  if (p.chunk) return "chunks of " + std::to_string(*p.chunk);
  return p.causal ? "the causal mask" : "the full mask";
}

}  // namespace

std::string plan_choice(const PlanProblem& p, const std::vector<PlanOption>& v) {
  if (v.empty() || !v.front().valid) return "no candidate is possible for this shape";
  const PlanOption& b = v.front();
  char head[128];
  if (p.backward)
    std::snprintf(head, sizeof head, "%s per layer, efficiency %.2f forward / %.2f backward", ms(b.pred.total_us()).c_str(),
                  b.pred.efficiency_fwd, b.pred.efficiency_bwd);
  else
    std::snprintf(head, sizeof head, "%s per layer, efficiency %.2f", ms(b.pred.total_us()).c_str(), b.pred.efficiency_fwd);
  std::string line = head;
  const PlanOption* next = v.size() > 1 && v[1].valid ? &v[1] : nullptr;
  if (b.ring_hops >= 0 && b.ring_hops < b.ring_size - 1) {  // the window or chunk let its ring stop
    const index_t n = p.seq / (b.cp.mode == Mode::a2a_p2p ? b.cp.ocp : b.cp.cp);
    line += "; its ring stops after " + std::to_string(b.ring_hops) + " of " + std::to_string(b.ring_size - 1) + " hops (" +
            rule_words(p) + ", " + std::to_string(n) + " tokens per ring rank: no farther tile has a visible pair)";
  } else {
    line += b.pred.exposed_comm_us < 0.5 ? ", no communication exposed" : ", " + ms(b.pred.exposed_comm_us) + " of communication exposed";
  }
  if (next) {
    const double more = 100.0 * (next->pred.total_us() / b.pred.total_us() - 1.0);
    char pct[32];
    std::snprintf(pct, sizeof pct, more >= 1 ? "+%.1f%%" : "+%.2f%%", more);
    line += "; next best " + next->label + ": " + ms(next->pred.total_us()) + " (" + pct;
    if (next->ring_hops >= 0 && (p.window || p.chunk))
      line += next->ring_hops < next->ring_size - 1 ? ", " + std::to_string(next->ring_hops) + " of " +
                                                         std::to_string(next->ring_size - 1) + " ring hops"
                                                   : ", all " + std::to_string(next->ring_size - 1) + " ring hops";
    line += ")";
  }
  return line;
}

}  // namespace cplab
