// infer_plan_model.cpp: the inference variants' planned traces priced by the alpha-beta model, the
// paper's rule on the same hardware, and why they differ (see infer_plan_model.h).
#include "plan/infer_plan_model.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <set>

#include "core/error.h"
#include "core/util.h"
#include "infer/infer_plan.h"
#include "layout/layout_index.h"
#include "modes/cp_spec.h"

namespace cplab {

namespace {

void check_range(index_t v, const char* what, index_t lo, index_t hi, const std::string& why) {
  require(v >= lo, std::string(what) + " " + std::to_string(v) + " must be >= " + std::to_string(lo));
  require(v <= hi, std::string(what) + " " + std::to_string(v) + " is more than " + std::to_string(hi) + " (" + why + ")");
}

std::string ms(double us) {
  char b[32];
  std::snprintf(b, sizeof b, "%.3f ms", us / 1e3);
  return b;
}

std::string label_of(InferMode m) {
  switch (m) {
    case InferMode::pass_kv: return "pass-KV (p2p)";
    case InferMode::pass_q: return "pass-Q (pass-q)";
    case InferMode::decode_pass_q: return "decode-pass-q";
    case InferMode::decode_ag: return "decode-ag";
  }
  return "?";
}

InferFields fields_of(const InferPlanProblem& p, InferMode m) {
  InferFields f;
  f.mode = m;
  f.layout = p.layout;
  f.cache_layout = p.cache_layout;
  f.cp = p.gpus;
  f.cached = {p.P};
  f.fresh = {p.T};
  f.heads = p.heads;
  f.kv_heads = p.kv_heads;
  f.head_dim = p.head_dim;
  f.causal = p.causal;
  f.window = p.window;
  f.chunk = p.chunk;
  return f;
}

}  // namespace

void check_infer_plan_problem(const InferPlanProblem& p) {
  check_range(p.gpus, "gpus", 1, kMaxRanks, "a plan traces every rank, as the CPU reference simulates them");
  check_range(p.T, "seq (T, the new tokens)", 1, kMaxPackedTokens, "2^40 tokens, the most cplab takes");
  check_range(p.P, "kv-cache (P, the cached tokens)", 0, kMaxPackedTokens, "2^40 tokens, the most cplab takes");
  require(p.T + p.P <= kMaxPackedTokens, "kv-cache + seq = " + std::to_string(p.T + p.P) +
                                             " tokens is more than 1099511627776 (2^40, the most cplab takes)");
  check_range(p.heads, "heads", 1, kMaxHeads, "cplab's limit on head counts and head dims");
  check_range(p.kv_heads, "kv-heads", 1, kMaxHeads, "cplab's limit on head counts and head dims");
  check_range(p.head_dim, "head-dim", 1, kMaxHeads, "cplab's limit on head counts and head dims");
  // the plan's own bound, before InferSpec lists every row: the ring variants walk N (2T + P) token
  // rows, and the trace's spans grow with them (an interleaved cache: a span per cached row per tile)
  const double rows = static_cast<double>(p.gpus) * (2.0 * static_cast<double>(p.T) + static_cast<double>(p.P));
  require(rows <= kMaxInferPlanRows, "planning this step walks N x (2T + P) = " + approx(rows) +
                                         " token rows, more than the inference planner's " + approx(kMaxInferPlanRows) +
                                         " (its trace's memory; a million tokens on 128 ranks fits)");
  CpFields mask;
  mask.causal = p.causal;
  mask.window = p.window;
  mask.chunk = p.chunk;
  check_mask_rules(mask);
}

const LinkPreset& infer_ring_link(const InferPlanProblem& p, const PerfAssumptions& a) {
  return p.gpus > a.gpus_per_node ? a.inter : a.intra;
}

std::vector<InferPlanOption> infer_plan_options(const InferPlanProblem& p, const PerfAssumptions& a) {
  check_infer_plan_problem(p);
  std::vector<InferPlanOption> out;
  for (const InferInfo& info : infer_table()) {
    InferPlanOption o;
    o.mode = info.mode;
    o.label = label_of(info.mode);
    o.alpha_us = infer_ring_link(p, a).alpha_us;
    try {
      InferRunSpec s{InferSpec(fields_of(p, info.mode)), "float", 0, false};
      const Trace t = infer_plan_trace(s);
      const TraceShape shape{static_cast<double>(s.spec.d()), static_cast<double>(s.spec.dv()), 4.0,
                             static_cast<double>(s.spec.T()), p.causal};
      o.pred = predict(t, shape, a);
      std::set<int> collective;  // the steps of a gather or all-to-all (alone in their step: exposed)
      for (const Event& e : t.events())
        if (e.kind == EventKind::send && e.op != "p2p") collective.insert(e.step);
      for (const StepTime& st : o.pred.steps) {
        o.compute_us += st.compute_us;
        if (collective.count(st.step)) o.collective_us += st.time_us - st.compute_us;
        else o.ring_exposed_us += st.time_us - st.compute_us;
      }
      for (const Event& e : t.events())
        if (e.kind == EventKind::tile) o.flops += static_cast<double>(e.flops);
      if (info.ring) {
        o.message_rows = static_cast<double>(std::string(info.travels) == "KV" ? s.spec.Mkv() : s.spec.Mq());
        for (const Event& e : t.events())
          if (e.kind == EventKind::send && e.step == 0) o.message_bytes = std::max(o.message_bytes, static_cast<double>(e.bytes));
        o.message_bytes *= a.bytes_per_element / shape.trace_bytes_per_element;
      }
    } catch (const Error& e) {
      o.valid = false;
      o.why_not = e.what();
    }
    out.push_back(std::move(o));
  }
  std::stable_sort(out.begin(), out.end(), [](const InferPlanOption& x, const InferPlanOption& y) {
    if (x.valid != y.valid) return x.valid;
    return x.valid && x.pred.fwd_us < y.pred.fwd_us;
  });
  return out;
}

const InferPlanOption& infer_option(const std::vector<InferPlanOption>& v, InferMode m) {
  for (const InferPlanOption& o : v)
    if (o.mode == m) return o;
  throw Error("no inference variant " + to_string(m) + " was planned");
}

PaperRule infer_paper_rule(const InferPlanProblem& p, const PerfAssumptions& a) {
  return paper_rule_pass_kv(p.T, p.P, p.gpus, a.gpu.fwd_tflops * 1e12, p.kv_heads, p.heads, a.bytes_per_element,
                            infer_ring_link(p, a).p2p_GBps * 1e9);
}

std::optional<bool> infer_model_pass_kv(const std::vector<InferPlanOption>& v) {
  const InferPlanOption &kv = infer_option(v, InferMode::pass_kv), &q = infer_option(v, InferMode::pass_q);
  if (!kv.valid || !q.valid) return std::nullopt;
  return kv.pred.fwd_us <= q.pred.fwd_us;
}

namespace {

// what a variant's time is made of, in words: "compute 1.234 ms, 0.100 ms of its ring transfer
// exposed, collectives 0.050 ms"
std::string made_of(const InferPlanOption& o) {
  std::string s = "compute " + ms(o.compute_us);
  if (o.message_rows > 0)
    s += o.ring_exposed_us < 0.5 ? ", its ring transfer hidden" : ", " + ms(o.ring_exposed_us) + " of its ring transfer exposed";
  if (o.collective_us > 0)
    s += std::string(", ") + (o.mode == InferMode::decode_ag ? "gather and all-to-all " : "closing all-to-all ") +
         ms(o.collective_us) + " exposed";
  return s;
}

}  // namespace

std::string infer_plan_choice(const std::vector<InferPlanOption>& v) {
  if (v.empty() || !v.front().valid) return "no variant is possible for this step";
  const InferPlanOption& b = v.front();
  std::string line = ms(b.pred.fwd_us) + " per layer (" + made_of(b) + ")";
  if (v.size() > 1 && v[1].valid) {
    const double more = 100.0 * (v[1].pred.fwd_us / b.pred.fwd_us - 1.0);
    char pct[32];
    std::snprintf(pct, sizeof pct, more >= 1 ? "+%.1f%%" : "+%.2f%%", more);
    line += "; next best " + v[1].label + ": " + ms(v[1].pred.fwd_us) + " (" + pct + ": " + made_of(v[1]) + ")";
  }
  return line;
}

std::string infer_rule_difference(const InferPlanProblem& p, const std::vector<InferPlanOption>& v, const PaperRule& rule, bool brief) {
  const std::optional<bool> model = infer_model_pass_kv(v);
  if (!model || *model == rule.pass_kv) return "";
  const InferPlanOption &kv = infer_option(v, InferMode::pass_kv), &q = infer_option(v, InferMode::pass_q);
  char b[640];
  if (*model) {  // the model takes pass-KV where the rule says pass-Q
    if (brief) {
      std::snprintf(b, sizeof b, "pass-Q's closing all-to-all %s exposed; pass-KV exposes %s", ms(q.collective_us).c_str(),
                    ms(kv.ring_exposed_us).c_str());
      return b;
    }
    std::snprintf(b, sizeof b,
                  "the model takes pass-KV where the rule says pass-Q: below T = %.0f the rule gives up pass-KV as soon as its "
                  "transfer stops hiding, but here it exposes only %s (the part of each step's transfer beyond its compute), "
                  "less than pass-Q's closing all-to-all of the partial outputs, %s exposed (nothing is left to overlap it "
                  "with), which the rule leaves out%s",
                  rule.t_threshold, ms(kv.ring_exposed_us).c_str(), ms(q.collective_us).c_str(),
                  q.ring_exposed_us < 0.5 ? "" : (" (pass-Q's ring exposes " + ms(q.ring_exposed_us) + " more)").c_str());
    return b;
  }
  // the model takes pass-Q where the rule says pass-KV: pass-KV's transfer does not hide as the rule expects
  if (brief) {
    std::snprintf(b, sizeof b, "pass-KV exposes %s; pass-Q %s (all-to-all %s)", ms(kv.ring_exposed_us).c_str(),
                  ms(q.ring_exposed_us + q.collective_us).c_str(), ms(q.collective_us).c_str());
    return b;
  }
  // the rule's picture of a pass-KV step: a full T/N x (T+P)/N tile, a message of (T+P)/N rows, no latency
  const double N = static_cast<double>(p.gpus), L = static_cast<double>(p.T + p.P);
  const double full = static_cast<double>(p.T) * L * 2.0 * static_cast<double>(p.heads) * 2.0 * static_cast<double>(p.head_dim);
  const double padding = kv.message_rows > 0 ? kv.message_rows * N / L - 1.0 : 0.0;
  std::snprintf(b, sizeof b,
                "the model takes pass-Q where the rule says pass-KV: pass-KV exposes %s of its transfer, which the rule counts "
                "as hidden (the mask leaves %.1f%% of the rule's full-tile FLOPs to hide it under, its messages are padded "
                "%.1f%% above (T+P)/N rows, and each of its %lld steps pays %.0f us of latency), more than pass-Q exposes "
                "(%s, its closing all-to-all %s of it)",
                ms(kv.ring_exposed_us).c_str(), 100.0 * kv.flops / full, 100.0 * padding, static_cast<long long>(p.gpus),
                kv.alpha_us, ms(q.ring_exposed_us + q.collective_us).c_str(), ms(q.collective_us).c_str());
  return b;
}

std::vector<double> infer_table_fractions() { return {0.001, 0.003, 0.01, 0.03, 0.1, 0.3, 1.0}; }

std::string infer_rule_table_markdown(const InferPlanProblem& shape, index_t context, const std::vector<double>& fractions,
                                      const PerfAssumptions& a) {
  require(context >= 1 && context <= kMaxPackedTokens, "the table's context (--seq) must be in [1, 2^40]");
  std::string md =
      "| T/(T+P) | T | P | pass-KV (ms) | pass-Q (ms) | decode-pass-q (ms) | decode-ag (ms) | fastest of the four | "
      "model: pass-KV or pass-Q | paper's rule | why they differ |\n"
      "| ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- | --- | --- | --- |\n";
  // the rows: T = f * context for each fraction, and two rows where the model and the rule part, just
  // below and at the rule's T threshold T* (0.95 T* and ceil(T*)), when they fall inside the context
  std::vector<std::pair<index_t, std::string>> rows;
  auto pct = [&](index_t T) {
    char b[32];
    std::snprintf(b, sizeof b, "%.3g%%", 100.0 * static_cast<double>(T) / static_cast<double>(context));
    return std::string(b);
  };
  for (double f : fractions) {
    const index_t T = std::min(context, std::max<index_t>(1, static_cast<index_t>(std::llround(f * static_cast<double>(context)))));
    char b[32];
    std::snprintf(b, sizeof b, "%g%%", 100 * f);
    rows.emplace_back(T, b);
  }
  InferPlanProblem one = shape;
  one.T = 1;
  one.P = 0;
  const double star = infer_paper_rule(one, a).t_threshold;
  for (const auto& [T, name] : {std::pair{static_cast<index_t>(std::llround(0.95 * star)), "0.95 T*"},
                                 std::pair{static_cast<index_t>(std::ceil(star)), "T*"}})
    if (T >= 1 && T < context) rows.emplace_back(T, pct(T) + " (" + name + ")");
  std::stable_sort(rows.begin(), rows.end(), [](const auto& x, const auto& y) { return x.first < y.first; });
  for (const auto& [T, name] : rows) {
    InferPlanProblem p = shape;
    p.T = T;
    p.P = context - T;
    const std::vector<InferPlanOption> v = infer_plan_options(p, a);
    const PaperRule rule = infer_paper_rule(p, a);
    auto t = [&](InferMode m) {
      const InferPlanOption& o = infer_option(v, m);
      if (!o.valid) return std::string("-");
      char b[32];
      std::snprintf(b, sizeof b, "%.3f", o.pred.fwd_us / 1e3);
      return std::string(b);
    };
    const std::optional<bool> model = infer_model_pass_kv(v);
    md += "| " + name + " | " + std::to_string(p.T) + " | " + std::to_string(p.P) + " | " + t(InferMode::pass_kv) +
          " | " + t(InferMode::pass_q) + " | " + t(InferMode::decode_pass_q) + " | " + t(InferMode::decode_ag) + " | " +
          (v.front().valid ? to_string(v.front().mode) : std::string("-")) + " | " + (model ? (*model ? "pass-KV" : "pass-Q") : "-") + " | " + (rule.pass_kv ? "pass-KV" : "pass-Q") +
          (rule.t_holds ? " (T)" : "") + (rule.ratio_holds ? " (ratio)" : "") + " | " +
          infer_rule_difference(p, v, rule, true) + " |\n";
  }
  return md;
}

}  // namespace cplab
