// test_check_pairs.cpp: `cplab check` names two faults at once (issue 38, reference/check/pairs.h).
//
// What it is: every pair of one fault on the forward path or the layout (the KV head map i % kv_heads,
// the ranks' buffers concatenated, the causal mask off by one, softmax scale 1/d, every rank
// attending to its own shard only, a ring step missing) and one on the backward or LSE path (dK / dV
// swapped, the public ring package's dK / dV mix-up, LSE in base 2, a KV group's gradient reduced by
// mean, LSE written [tokens, heads] and read flat), injected by the test's own code (tests/check_faults.h,
// tests/check_faults_outputs.h: the second applied to the first's outputs), into correct runs of
// p2p (zigzag and packed), all-gather and a2a with GQA 8 over 2: the first hypothesis must be that
// pair; and the unfaulted runs stay "equivalent". A pair is left out where it cannot be seen (a ring
// step missing leaves the gradients unchecked: only the LSE faults go with it). The table is printed.
// What it is not: the single faults (tests/test_check*.cpp).
#include <doctest/doctest.h>

#include <cstdio>
#include <sstream>

#include "check/check.h"
#include "check_claimed.h"
#include "check_configs.h"
#include "check_faults.h"
#include "check_faults_outputs.h"
#include "core/util.h"

namespace cplab::test {

namespace {

struct Step {
  std::string name, id;
  std::function<Outs(const Outs&)> apply;  // the fault applied to outputs (the first: to correct ones)
  bool forward_only = false;               // it leaves the gradients unchecked (then only LSE faults follow it)
};

}  // namespace

TEST_CASE("check: two faults at once (a forward or layout fault, then a backward or LSE fault) are named as the pair") {
  std::ostringstream table;
  table << "\nconfiguration                        | fault 1 + fault 2                                | first hypothesis\n";
  int cases = 0, named = 0;
  CpFields packed = fields(Mode::p2p, Layout::zigzag, 2, 0, true);
  packed.cu_seqlens = {0, 10, 34, 39};
  packed.pad = true;
  const std::vector<Config> runs = {
      {"p2p zigzag causal cp 4 seq 64", fields(Mode::p2p, Layout::zigzag, 4, 64, true)},
      {"allgather zigzag causal cp 4 seq 64", fields(Mode::allgather, Layout::zigzag, 4, 64, true)},
      {"a2a zigzag causal cp 2 seq 64", fields(Mode::a2a, Layout::zigzag, 2, 64, true)},
      {"p2p zigzag causal cp 2 packed --pad", packed},
  };
  for (const Config& cfg : runs) {
    RunSpec rs;
    rs.cp = CpSpec(cfg.f);
    rs.backward = true;
    rs.seed = 5;
    const CpSpec& s = rs.cp;
    const Inputs in = make_inputs(rs);
    const RunReport run = run_experiment(rs, in);
    const Outs base{run.o, lse_tensor(run.lse), run.dq, run.dk, run.dv};
    const index_t S = s.S(), h = s.h(), G = s.h() / s.hk();
    const double d = static_cast<double>(s.d());
    const std::string scale_id = "scale:" + approx4(1.0 / d);
    std::vector<Step> firsts = {
        {"KV head i % kv_heads", "kv_head_mod", [&](const Outs&) { return rule_outputs(s, in, NaiveRule{s.scale(), 0, true}, true); }},
        {"causal k <= q + 1", "causal_plus_one", [&](const Outs&) { return rule_outputs(s, in, NaiveRule{s.scale(), 1, false}, true); }},
        {"softmax scale 1/d", scale_id, [&](const Outs&) { return rule_outputs(s, in, NaiveRule{1.0 / d, 0, false}, true); }},
        {"own shard only (ring bypassed)", "local_only", [&](const Outs&) { return local_only(s, in); }},
    };
    if (!s.packed())
      firsts.push_back({"zigzag buffers concatenated", "layout_order:zigzag_placed_as_contiguous",
                        [&](const Outs& o) { return layout_order(s, o, Layout::zigzag, Layout::contiguous); }});
    if (s.mode() == Mode::p2p) {
      const index_t last = last_visible_step(s);
      firsts.push_back({"ring step " + num(last) + " missing", "ring_step_missing:" + num(last),
                        [&, last](const Outs& o) { return ring_step(s, in, o, last, 0); }, true});
    }
    const std::vector<Step> seconds = {
        {"dK, dV swapped", "dkv:swapped", [&](const Outs& o) { return dkv_mix(s, o, 0, 1, 0, 1, 0, 0); }},
        {"ring package dK/dV mix-up", "dkv:ring_mixup", [&](const Outs& o) { return dkv_mix(s, o, 1, 1, 0, 1, 1, 1); }},
        {"LSE in base 2", "lse_base2",
         [&](const Outs& o) {
           Outs x = o;
           for (double& v : x[1].data) v /= std::log(2.0);
           return x;
         }},
        {"dK, dV mean over the KV group", "factor",
         [&](const Outs& o) {
           const auto mean = [&](index_t) { return 1.0 / static_cast<double>(G); };
           return scaled(scaled(o, 3, mean), 4, mean);
         }},
        {"LSE [tokens, heads] read flat", "lse_layout:transposed",
         [&](const Outs& o) { return lse_reread(s, o, h * S, 0, [&](index_t i, index_t g) { return g * h + i; }); }},
    };
    {
      const CheckReport r = run_check(s, claimed(in, base, NpyDtype::f8));
      CHECK_MESSAGE(r.verdict == "equivalent", std::string(cfg.name + ": " + r.verdict));
    }
    for (const Step& a : firsts)
      for (const Step& b : seconds) {
        const bool lse_fault = b.id.rfind("lse", 0) == 0;
        if (a.forward_only && !lse_fault) continue;  // the gradients are unchecked under a forward-only fault
        const Outs faulty = b.apply(a.apply(base));
        const CheckReport r = run_check(s, claimed(in, faulty, NpyDtype::f8));
        const HypothesisResult& best = r.hypotheses.front();
        const bool ok = !r.equivalent && best.level >= 0 && best.pair_a == a.id && best.pair_b == b.id;
        std::string got = best.level >= 0 ? (best.pair_a.empty() ? best.id : best.pair_a + " + " + best.pair_b) : "(none explains)";
        CHECK_MESSAGE(ok, std::string(cfg.name + ": " + a.name + " + " + b.name + " -> " + got + "; " + r.verdict));
        ++cases, named += ok ? 1 : 0;
        char line[400];
        std::snprintf(line, sizeof line, "%-36s | %-48s | %s%s\n", cfg.name.c_str(), (a.name + " + " + b.name).c_str(), got.c_str(),
                      ok ? "" : "   [MISSED]");
        table << line;
      }
  }
  table << cases << " pairs, " << named << " named as the pair first\n";
  MESSAGE(table.str());
}

}  // namespace cplab::test
