// test_masks.cpp: sliding windows and chunks (--window, --chunk; with and without attention sinks)
// in every CP mode x layout x packing, forward + backward in double, against the dense oracle
// (<= 1e-10), with the mode table's closed-form messages and bytes (ring hops included) equal to the
// trace; the ring's early stop (one hop for contiguous with a window of at most n tokens); ring_hops
// against the tile table and its closed forms; token_mask and PositionRule against brute force.
// What it is not: the sinks' own arithmetic and finite differences (test_sinks.cpp), or the planned
// trace's equality with the recorded one (test_trace_plan.cpp covers the masks there too).
#include <doctest/doctest.h>

#include <cstdio>
#include <map>
#include <random>

#include "core/error.h"
#include "modes/ring_schedule.h"
#include "run/experiment.h"
#include "run_checks.h"

using namespace cplab;

namespace {

struct MaskCase {
  std::string name;
  bool causal;
  std::optional<index_t> window, chunk;
};

constexpr index_t kP = 4, kS = 128;  // unpacked: n = 32 tokens per rank
const std::vector<index_t> kCu = {0, 37, 100, 101, 150};  // packed: lengths 37, 63, 1, 49, padded

// the windows 1, 7, 64, S/cp, S+3 (causal, and two without --causal) and chunks 16, 100
std::vector<MaskCase> mask_cases() {
  std::vector<MaskCase> m;
  for (index_t w : {index_t{1}, index_t{7}, index_t{64}, kS / kP, kS + 3}) m.push_back({"W" + std::to_string(w), true, w, {}});
  for (index_t w : {index_t{7}, kS / kP}) m.push_back({"W" + std::to_string(w) + " full", false, w, {}});
  for (index_t c : {index_t{16}, index_t{100}}) m.push_back({"C" + std::to_string(c), true, {}, c});
  return m;
}

struct ModeCase {
  std::string name;
  Mode mode;
  Layout layout;
  index_t heads, kv_heads, icp = 0, ocp = 0;
};

std::vector<ModeCase> mode_cases() {
  std::vector<ModeCase> m;
  for (Mode mode : {Mode::p2p, Mode::allgather, Mode::a2a})
    for (Layout l : {Layout::contiguous, Layout::zigzag, Layout::striped})
      m.push_back({to_string(mode) + " " + to_string(l), mode, l, 4, mode == Mode::a2a ? 4 : 2});
  m.push_back({"a2a+p2p 2x2", Mode::a2a_p2p, Layout::zigzag, 4, 2, 2, 2});
  return m;
}

CpFields fields_of(const ModeCase& mc, const MaskCase& k, bool packed, bool sinks) {
  CpFields f;
  f.mode = mc.mode;
  f.layout = mc.layout;
  f.cp = kP;
  f.icp = mc.icp;
  f.ocp = mc.ocp;
  f.heads = mc.heads;
  f.kv_heads = mc.kv_heads;
  f.head_dim = 8;
  f.v_head_dim = 6;
  f.causal = k.causal;
  f.window = k.window;
  f.chunk = k.chunk;
  f.sinks = sinks;
  if (packed) {
    f.cu_seqlens = kCu;
    f.pad = true;
  } else {
    f.seq = kS;
  }
  return f;
}

// the run against the oracle (errors, FLOPs, padding) and its trace against the mode table's closed
// forms (ring hops included); returns the largest error
double check_masked_run(const CpFields& f) {
  RunSpec s{CpSpec(f), true};
  s.seed = 11;
  const CpSpec& cp = s.cp;
  const RunReport r = run_experiment(s, make_inputs(s));
  double worst = r.max_error();
  if (cp.window() == 1 && !cp.sinks()) {
    // every query sees only itself: P = 1, dS = dP - Delta = 0, so dQ and dK are exactly 0 and both
    // sides hold only rounding noise (~1e-17), which the relative metric would divide by itself
    double dqk = 0;
    for (const Tensor3<double>* x : {&r.dq, &r.dk})
      for (double e : x->data) dqk = std::max(dqk, std::abs(e));
    CHECK(dqk <= 1e-13);
    CHECK(*r.err_o <= 1e-10);
    CHECK(*r.err_lse <= 1e-10);
    CHECK(*r.err_dv <= 1e-10);
    worst = std::max({*r.err_o, *r.err_lse, *r.err_dv});
  } else {
    check_exact_run(r);
  }
  std::int64_t flops = 0;
  for (auto x : r.flops) flops += x;
  CHECK(flops == r.dense_flops);
  CHECK(r.padding_max_abs == 0.0);
  CHECK(r.err_dsinks.has_value() == cp.sinks());
  const CommPerRank c = cp.comm_per_rank(8);
  const Phase fw = Phase::fwd, bw = Phase::bwd;
  int last[2] = {-1, -1};
  for (const Event& e : r.trace.events()) last[e.phase == fw ? 0 : 1] = std::max(last[e.phase == fw ? 0 : 1], e.step);
  if (cp.mode() == Mode::p2p || cp.mode() == Mode::a2a_p2p) {  // the ring's steps: H + 1 (+ the two all-to-alls)
    CHECK(last[0] + 1 == cp.fwd_steps());
    CHECK(last[1] + 1 == cp.bwd_steps());
  }
  for (size_t k = 0; k < static_cast<size_t>(cp.P()); ++k) {
    CHECK(r.trace.messages_sent_per_rank(&fw)[k] == c.fwd_msgs);
    CHECK(r.trace.messages_sent_per_rank(&bw)[k] == c.bwd_msgs);
    CHECK(r.trace.bytes_sent_per_rank(&fw)[k] == c.fwd_bytes);
    CHECK(r.trace.bytes_sent_per_rank(&bw)[k] == c.bwd_bytes);
    CHECK(r.bytes_recv[k] == r.bytes_sent[k]);
  }
  return worst;
}

std::string sci(double x) {
  char b[16];
  std::snprintf(b, sizeof b, "%8.1e", x);
  return b;
}

}  // namespace

namespace {

// every mask x packing x sinks for these modes; MESSAGEs their rows of the table of max errors
void sweep(const std::vector<ModeCase>& modes) {
  const std::vector<MaskCase> masks = mask_cases();
  std::map<std::string, std::map<std::string, double>> worst;  // mode -> mask -> max error
  int runs = 0;
  for (const ModeCase& mc : modes)
    for (const MaskCase& k : masks)
      for (bool packed : {false, true})
        for (bool sinks : {false, true}) {
          if (packed && mc.mode == Mode::a2a_p2p) continue;  // refused (hierarchical_cp.h)
          CAPTURE(mc.name);
          CAPTURE(k.name);
          CAPTURE(packed);
          CAPTURE(sinks);
          const double e = check_masked_run(fields_of(mc, k, packed, sinks));
          double& cell = worst[mc.name][k.name];
          cell = std::max(cell, e);
          ++runs;
        }
  std::string table = "max error vs dense (O, LSE, dQ, dK, dV, dsinks; sinks on and off, packed or not; W1 without sinks: "
                      "dQ = dK = 0 exactly, checked to 1e-13 absolute), " +
                      std::to_string(runs) + " runs, cp 4, seq 128 or cu_seqlens 0,37,100,101,150 (--pad):\n" +
                      "mode                  ";
  for (const MaskCase& k : masks) table += " " + std::string(9 - std::min<size_t>(9, k.name.size()), ' ') + k.name;
  for (const ModeCase& mc : modes) {
    table += "\n" + mc.name + std::string(22 - std::min<size_t>(22, mc.name.size()), ' ');
    for (const MaskCase& k : masks) table += " " + sci(worst[mc.name][k.name]);
  }
  MESSAGE(table);
}

std::vector<ModeCase> of_mode(Mode m) {
  std::vector<ModeCase> v;
  for (const ModeCase& mc : mode_cases())
    if (mc.mode == m) v.push_back(mc);
  return v;
}

}  // namespace

TEST_CASE("masks: p2p, every layout x window / chunk x sinks x packing, forward + backward, double, <= 1e-10") {
  sweep(of_mode(Mode::p2p));
}

TEST_CASE("masks: allgather, every layout x window / chunk x sinks x packing, forward + backward, double, <= 1e-10") {
  sweep(of_mode(Mode::allgather));
}

TEST_CASE("masks: a2a, every layout x window / chunk x sinks x packing, forward + backward, double, <= 1e-10") {
  sweep(of_mode(Mode::a2a));
}

TEST_CASE("masks: a2a+p2p 2x2, window / chunk x sinks, forward + backward, double, <= 1e-10") {
  sweep(of_mode(Mode::a2a_p2p));
}

TEST_CASE("masks: float runs of every mode with a window and sinks are within 1e-5") {
  for (const ModeCase& mc : mode_cases()) {
    CAPTURE(mc.name);
    RunSpec s{CpSpec(fields_of(mc, MaskCase{"W7", true, 7, {}}, false, true)), true, "float"};
    const RunReport r = run_experiment(s, make_inputs(s));
    CHECK(r.max_error() <= 1e-5);
    CHECK(r.max_error() > 0.0);
  }
}

TEST_CASE("masks: contiguous p2p with a window of at most n tokens makes one hop forward and its backward counterpart") {
  const index_t n = kS / kP, hk = 2, d = 8, dv = 6;
  const std::int64_t B_kv = n * hk * (d + dv) * 8;  // one rank's K and V in double
  for (index_t W : {index_t{2}, index_t{7}, n}) {
    CAPTURE(W);
    CpFields f = fields_of(mode_cases()[0], MaskCase{"", true, W, {}}, false, false);
    REQUIRE(f.layout == Layout::contiguous);
    RunSpec s{CpSpec(f), true};
    CHECK(s.cp.ring_hops() == 1);
    const CommPerRank c = s.cp.comm_per_rank(8);
    CHECK(c.fwd_msgs == 1);
    CHECK(c.fwd_bytes == B_kv);
    CHECK(c.bwd_msgs == 2);  // "kv" at step 0, "dkv" back to its owner at step 1
    CHECK(c.bwd_bytes == 2 * B_kv);
    const RunReport r = run_experiment(s, make_inputs(s));
    check_exact_run(r);
    std::map<std::pair<Phase, int>, int> tiles;
    for (const Event& e : r.trace.events()) {
      if (e.kind == EventKind::send) {
        CHECK(e.bytes == B_kv);
        CHECK(e.tensor == (e.phase == Phase::fwd || e.step == 0 ? "kv" : "dkv"));
      }
      if (e.kind != EventKind::tile) continue;
      ++tiles[{e.phase, e.step}];
      if (e.step == 1 && e.phase == Phase::fwd)  // rank r holds block r - 1: rank 0 holds block 3, all masked
        CHECK(e.mask == (e.rank == 0 ? "skipped" : "ranges"));
    }
    CHECK(tiles.size() == 4);  // two steps per phase, not four
    for (const Phase ph : {Phase::fwd, Phase::bwd}) {
      CHECK(r.trace.messages_sent_per_rank(&ph) == std::vector<std::int64_t>(kP, ph == Phase::fwd ? 1 : 2));
      CHECK(r.trace.bytes_sent_per_rank(&ph) == std::vector<std::int64_t>(kP, (ph == Phase::fwd ? 1 : 2) * B_kv));
    }
    MESSAGE("contiguous p2p, cp 4, seq 128 (n 32), window " << W << ": per rank forward " << c.fwd_msgs << " message of "
                                                            << c.fwd_bytes << " bytes, backward " << c.bwd_msgs
                                                            << " messages of " << c.bwd_bytes
                                                            << " bytes in all (the whole ring: 3 of " << 3 * B_kv
                                                            << ", 4 of " << 6 * B_kv << ")");
  }
  CpFields f = fields_of(mode_cases()[0], MaskCase{"", true, 1, {}}, false, false);  // a window of 1: no hop at all
  CHECK(CpSpec(f).ring_hops() == 0);
  CHECK(CpSpec(f).comm_per_rank(8).bwd_msgs == 0);
  f.window = n + 1;  // the first query sees back exactly n keys: still the block behind
  CHECK(CpSpec(f).ring_hops() == 1);
  f.window = n + 2;  // one more: two hops
  CHECK(CpSpec(f).ring_hops() == 2);
}

namespace {

// H from the tile table itself: the farthest offset of a tile the run would compute
index_t hops_from_tiles(const CpSpec& s) {
  index_t H = 0;
  for (index_t r = 0; r < s.P(); ++r)
    for (index_t j = 0; j < s.P(); ++j)
      if (!ring_plan_tile(s.partition(), s.packed() ? &s.packing() : nullptr, s.rule(), r, j).skipped)
        H = std::max(H, ((r - j) % s.P() + s.P()) % s.P());
  return H;
}

}  // namespace

TEST_CASE("masks: ring_hops equals the tile table, and its closed forms, for every layout, rule and packing") {
  std::mt19937_64 rng(5);
  int checked = 0;
  for (int trial = 0; trial < 600; ++trial) {
    CpFields f;
    f.layout = static_cast<Layout>(trial % 3);
    f.cp = 1 + static_cast<index_t>(rng() % 6);
    const index_t factor = f.layout == Layout::zigzag ? 2 * f.cp : f.cp;
    const int kind = static_cast<int>(rng() % 4);  // causal window, full window, chunk, plain
    f.causal = kind != 1;
    if (kind <= 1) f.window = 1 + static_cast<index_t>(rng() % 40);
    if (kind == 2) f.chunk = 1 + static_cast<index_t>(rng() % 40);
    if (trial % 2) {
      f.cu_seqlens = {0};
      for (int b = 1 + static_cast<int>(rng() % 4); b > 0; --b) f.cu_seqlens.push_back(f.cu_seqlens.back() + 1 + static_cast<index_t>(rng() % 30));
      f.pad = true;
    } else {
      f.seq = factor * (1 + static_cast<index_t>(rng() % 8));
    }
    const CpSpec s(f);
    CAPTURE(to_string(s.layout()));
    CAPTURE(s.P());
    CAPTURE(s.S());
    CAPTURE(s.mask_name());
    CAPTURE(s.packed());
    if (s.rule().plain())  // the whole ring, as today (a degenerate packing may leave its last steps idle)
      CHECK(s.ring_hops() == std::max<index_t>(s.P() - 1, hops_from_tiles(s)));
    else
      CHECK(s.ring_hops() == hops_from_tiles(s));
    const index_t P = s.P(), n = s.n(), W = s.window();
    if (!s.packed() && W > 0 && s.causal()) {  // the closed forms of ring_schedule.h, unpacked
      if (s.layout() == Layout::contiguous) CHECK(s.ring_hops() == std::min(P - 1, (W - 1 + n - 1) / n));
      if (s.layout() == Layout::striped) CHECK(s.ring_hops() == std::min({P - 1, W - 1, s.S() - 1}));
      if (s.layout() == Layout::zigzag) CHECK(s.ring_hops() == (W == 1 ? 0 : P - 1));
      ++checked;
    }
  }
  CHECK(checked > 50);
}

TEST_CASE("masks: token_mask and PositionRule against brute force, sorted and unsorted queries") {
  std::mt19937_64 rng(9);
  for (int trial = 0; trial < 300; ++trial) {
    std::vector<index_t> cu = {0};
    for (int b = 1 + static_cast<int>(rng() % 4); b > 0; --b) cu.push_back(cu.back() + 1 + static_cast<index_t>(rng() % 25));
    const Packing p = trial % 2 ? Packing::padded(cu, 4) : Packing::unpadded(cu);
    PositionRule rule{trial % 3 != 0, 0, 0};
    if (trial % 4 == 1) rule.window = 1 + static_cast<index_t>(rng() % 12);
    if (trial % 4 == 2 && rule.causal) rule.chunk = 1 + static_cast<index_t>(rng() % 12);
    std::vector<index_t> q, k;
    for (index_t g = 0; g < p.total(); ++g) {
      if (rng() % 2) q.push_back(g);
      if (rng() % 3) k.push_back(g);
    }
    if (trial % 5 == 0) std::shuffle(q.begin(), q.end(), rng);
    const Mask m = token_mask(p, q, k, rule);
    for (size_t a = 0; a < q.size(); ++a) {
      const index_t i = q[a], s = p.seq_of(i), start = p.cu_seqlens_padded[static_cast<size_t>(s)];
      std::vector<index_t> seen;  // the definitions, pair by pair
      for (size_t b = 0; b < k.size(); ++b) {
        const index_t j = k[b];
        if (!p.real(i) || !p.real(j) || p.seq_of(j) != s) continue;
        const index_t x = i - start, y = j - start;
        bool ok = rule.causal ? y <= x : true;
        if (rule.window > 0) ok = ok && (rule.causal ? x - rule.window < y : std::abs(x - y) < rule.window);
        if (rule.chunk > 0) ok = ok && x / rule.chunk == y / rule.chunk;
        if (ok) seen.push_back(static_cast<index_t>(b));
      }
      const KeyRange r = m.keys(static_cast<index_t>(a), static_cast<index_t>(k.size()));
      CHECK(r.hi - r.lo == static_cast<index_t>(seen.size()));  // one contiguous run: exactly those keys
      if (!seen.empty()) CHECK(r.lo == seen.front());
    }
  }
  for (index_t len : {1, 2, 7, 33, 100})  // the closed-form pair counts (the dense oracle's FLOPs)
    for (const PositionRule& rule : {PositionRule{true, 0, 0}, PositionRule{false, 0, 0}, PositionRule{true, 1, 0},
                                     PositionRule{true, 5, 0}, PositionRule{false, 5, 0}, PositionRule{false, 200, 0},
                                     PositionRule{true, 0, 3}, PositionRule{true, 0, 7}, PositionRule{true, 0, 500}}) {
      std::int64_t pairs = 0;
      for (index_t i = 0; i < len; ++i) pairs += rule.keys(i, len).hi - rule.keys(i, len).lo;
      CHECK(rule.pairs(len) == pairs);
      CHECK(visible_pairs(sequence_mask(rule, len), len, len) == pairs);
    }
}

TEST_CASE("masks: the rules of --window, --chunk and --sinks are refused with their messages") {
  CpFields f;
  f.seq = 64;
  f.causal = true;
  f.window = 0;
  CHECK_THROWS_WITH_AS(CpSpec{f}, doctest::Contains("--window 0 must be in [1, 2147483647] (with --causal query i sees key j iff i - W < j <= i"), Error);
  f.window = -3;
  CHECK_THROWS_WITH_AS(CpSpec{f}, doctest::Contains("--window -3 must be in [1, 2147483647]"), Error);
  f.window = index_t{1} << 31;
  CHECK_THROWS_WITH_AS(CpSpec{f}, doctest::Contains("--window 2147483648 must be in [1, 2147483647]"), Error);
  f.window = 8;
  f.chunk = 16;
  CHECK_THROWS_WITH_AS(CpSpec{f}, doctest::Contains("--window and --chunk cannot both be given: a run has one mask rule"), Error);
  f.window.reset();
  f.chunk = 0;
  CHECK_THROWS_WITH_AS(CpSpec{f}, doctest::Contains("--chunk 0 must be in [1, 2147483647] (query i sees key j iff j <= i and floor(i/C) == floor(j/C))"), Error);
  f.chunk = 16;
  f.causal = false;
  CHECK_THROWS_WITH_AS(CpSpec{f}, doctest::Contains("--chunk needs --causal"), Error);
  f.causal = true;
  CHECK(CpSpec(f).mask_name() == "causal, chunk 16");
  f.sink_logits = {0.5, 1.0};
  CHECK_THROWS_WITH_AS(CpSpec{f}, "sink logits were given without --sinks", Error);
  f.sinks = true;
  CHECK_THROWS_WITH_AS(CpSpec{f}, "--sink-logits holds 2 values but heads is 8 (one learnable logit per query head: shape (heads,))", Error);
  f.sink_logits.assign(8, 0.0);
  f.sink_logits[3] = std::nan("");
  CHECK_THROWS_WITH_AS(CpSpec{f}, "--sink-logits value 3 is NaN (every sink logit must be a finite number)", Error);
  f.sink_logits[3] = 2.0;
  CHECK(CpSpec(f).mask_name() == "causal, chunk 16, sinks");
}
