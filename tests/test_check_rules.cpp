// test_check_rules.cpp: `cplab check` names the faults of the attention rule (issue 38), and says
// when the outputs are correct for another spec.
//
// What it is: for CP runs of p2p (zigzag, contiguous), all-gather and a2a, causal and not, with a
// sliding window, chunks, packed sequences with padding and a custom --scale, all GQA (8 heads over
// 2), the run's own outputs are checked unfaulted ("equivalent") and then with each fault of the
// rule injected alone (tests/check_faults.h: the ring bypassed, the diagonal tile unmasked, a mask
// dropped or causal added, THD padding attended or sequence bounds shifted, a custom scale ignored
// or applied twice): the diagnosis must name it first, and a fault that is another spec must say
// which. The table of cases and verdicts is printed (MESSAGE). Then correct outputs checked under the
// wrong spec (without --causal, another --layout's shards, another --scale): the verdict names the
// spec they are correct for.
// What it is not: the other faults (test_check.cpp) or the command line (tests/check_cli.py).
#include <doctest/doctest.h>

#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <sstream>

#include "check/check.h"
#include "check_claimed.h"
#include "check_configs.h"
#include "check_faults.h"
#include "check_table.h"
#include "naive_ring.h"
#include "core/util.h"

namespace cplab::test {

namespace {

std::vector<Config> rule_configs() {
  CpFields packed = fields(Mode::p2p, Layout::zigzag, 2, 0, true);
  packed.cu_seqlens = {0, 10, 34, 39};
  packed.pad = true;
  CpFields packed_full = packed;
  packed_full.causal = false;
  CpFields scaled = fields(Mode::p2p, Layout::zigzag, 4, 64, true);
  scaled.scale = 0.1;
  return {
      {"p2p zigzag causal cp 4 seq 64", fields(Mode::p2p, Layout::zigzag, 4, 64, true)},
      {"p2p contiguous causal cp 4 seq 64", fields(Mode::p2p, Layout::contiguous, 4, 64, true)},
      {"allgather zigzag causal cp 4 seq 64", fields(Mode::allgather, Layout::zigzag, 4, 64, true)},
      {"a2a zigzag causal cp 2 seq 64", fields(Mode::a2a, Layout::zigzag, 2, 64, true)},
      {"p2p zigzag non-causal cp 4 seq 64", fields(Mode::p2p, Layout::zigzag, 4, 64, false)},
      {"p2p zigzag causal window 9 cp 4 seq 64", windowed(fields(Mode::p2p, Layout::zigzag, 4, 64, true), 9)},
      {"p2p contiguous causal chunk 12 cp 4 seq 64", chunked(fields(Mode::p2p, Layout::contiguous, 4, 64, true), 12)},
      {"p2p zigzag causal cp 2 packed 0,10,34,39 --pad", packed},
      {"p2p zigzag non-causal cp 2 packed 0,10,34,39 --pad", packed_full},
      {"p2p zigzag causal --scale 0.1 cp 4 seq 64", scaled},
  };
}

struct RuleFault {
  std::string name;
  std::function<Outs()> make;
  std::string expect_id;    // the first hypothesis's id ("" : the verdict must be "equivalent")
  std::string expect_hint;  // a text the verdict must hold ("" : none)
};


}  // namespace

TEST_CASE("check: every fault of the attention rule (issue 38) is named first, and correct outputs are equivalent") {
  FaultTable table("injected fault");
  for (const Config& cfg : rule_configs()) {
    const Run run = correct_run(cfg.f);
    const CpSpec& s = run.spec;
    const Inputs& in = run.in;
    const PositionRule pr = s.rule();
    // a faulted rule's outputs: from the naive ring (tests/naive_ring.h) for p2p, the naive dense loops otherwise
    const bool ring = s.mode() == Mode::p2p && !s.sinks();
    auto rule = [&](NaiveRule r) {
      return [&s, &in, r, ring] { return ring ? naive_ring(s, in, RingBugs{.rule = r}) : rule_outputs(s, in, r, true); };
    };
    const double X = s.scale(), def = 1.0 / std::sqrt(static_cast<double>(s.d()));
    std::vector<RuleFault> faults = {{"none", [&] { return run.out; }, "", ""}};
    if (s.P() > 1)
      faults.push_back({"ring bypassed (own shard's keys only)",
                        [&, ring] { return ring ? naive_ring(s, in, RingBugs{.local_only = true}) : local_only(s, in); }, "local_only", ""});
    if (s.causal() && s.P() > 1 && s.mode() == Mode::p2p)
      faults.push_back({"diagonal tile unmasked", rule({.scale = X, .own_unmasked = true}), "diagonal_unmasked", ""});
    if (s.hk() > 1)
      faults.push_back({"KV head count 1 (only the first KV head)", rule({.scale = X, .kv_heads = 1}), "kv_heads:1", "--kv-heads 1"});
    if (!s.causal()) faults.push_back({"causal mask added", rule({.scale = X, .causal = 1}), "causal_added", "correct for --causal"});
    if (s.causal() && pr.plain())
      faults.push_back({"causal mask dropped", rule({.scale = X, .causal = 0}), "causal_dropped", "correct for the spec without --causal"});
    if (pr.window > 0)
      faults.push_back({"window dropped", rule({.scale = X, .no_window = true}), "window_dropped", "without --window 9"});
    if (pr.chunk > 0) faults.push_back({"chunk mask dropped", rule({.scale = X, .no_chunk = true}), "chunk_dropped", "without --chunk 12"});
    if (s.causal() && !pr.plain())
      faults.push_back({"every mask dropped", rule({.scale = X, .causal = 0, .no_window = true, .no_chunk = true}), "all_masks_dropped",
                        "without --causal and --"});
    if (s.packing().has_padding()) {
      faults.push_back({"padding attended (padded offsets)", rule({.scale = X, .bounds = 1}), "thd_padding_attended", ""});
      faults.push_back({"bounds shifted (cu_seqlens as offsets)", rule({.scale = X, .bounds = 2}), "thd_bounds_shifted", ""});
    }
    if (s.fields().scale != 0) {
      faults.push_back({"custom scale ignored (1/sqrt(d))", rule({.scale = def}), "scale:" + approx4(def), "correct for the spec without --scale"});
      faults.push_back({"scale applied twice (X^2)", rule({.scale = X * X}), "scale:" + approx4(X * X), "correct for --scale " + approx4(X * X)});
    }
    for (const RuleFault& fault : faults) {
      CAPTURE(cfg.name);
      CAPTURE(fault.name);
      const CheckReport r = run_check(s, claimed(in, fault.make(), NpyDtype::f8));
      const HypothesisResult& best = r.hypotheses.front();
      table.row(cfg.name, fault.name, r, fault.expect_id,
                best.level == 0 && (fault.expect_hint.empty() ? best.spec_hint.empty() : r.verdict.find(fault.expect_hint) != std::string::npos));
    }
  }
  table.finish();
}

TEST_CASE("check: correct outputs under the wrong spec name the spec they are correct for") {
  // correct causal outputs checked without --causal
  const Run causal = correct_run(fields(Mode::p2p, Layout::zigzag, 4, 64, true));
  const CpSpec full(fields(Mode::p2p, Layout::zigzag, 4, 64, false));
  const CheckReport r1 = run_check(full, claimed(causal.in, causal.out, NpyDtype::f8));
  CHECK(r1.verdict == "NOT equivalent: causal mask applied to a non-causal spec: query q sees keys k <= q only "
                      "(these outputs are correct for --causal: the spec given lacks it)");
  CHECK(check_json(r1)["spec_hint"] == "--causal: the spec given lacks it");
  CHECK(r1.exit_status() == 1);

  // a striped run's rank{r} shards checked as zigzag's
  const Run striped = correct_run(fields(Mode::p2p, Layout::striped, 4, 64, true));
  const CpSpec zigzag(fields(Mode::p2p, Layout::zigzag, 4, 64, true));
  CheckData d = claimed(striped.in, layout_order(zigzag, striped.out, Layout::striped, Layout::zigzag), NpyDtype::f8);
  for (ClaimedTensor& t : d.out) t.source = "out/rank{0..3}/x.npy", t.shards = true;
  const CheckReport r2 = run_check(zigzag, d);
  CHECK(r2.hypotheses.front().id == "layout_order:striped_placed_as_zigzag");
  CHECK(r2.verdict.find("(these outputs are correct for --layout striped)") != std::string::npos);

  // a --scale 0.0625 run checked with the default scale (1/sqrt(16) = 0.25), and the reverse
  CpFields f = fields(Mode::p2p, Layout::zigzag, 4, 64, true);
  f.scale = 0.0625;
  const Run scaled = correct_run(f);
  const CheckReport r3 = run_check(zigzag, claimed(scaled.in, scaled.out, NpyDtype::f8));
  CHECK(r3.verdict.find("(these outputs are correct for --scale 0.0625)") != std::string::npos);
  const CheckReport r4 = run_check(scaled.spec, claimed(causal.in, causal.out, NpyDtype::f8));
  CHECK(r4.verdict == "NOT equivalent: custom softmax scale 0.0625 ignored: the default 1/sqrt(d) = 0.25 used "
                      "(these outputs are correct for the spec without --scale: its default 1/sqrt(d) = 0.25)");
  MESSAGE("\n" << r1.verdict << "\n" << r2.verdict << "\n" << r3.verdict << "\n" << r4.verdict);
}

}  // namespace cplab::test
