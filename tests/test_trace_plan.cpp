// test_trace_plan.cpp: plan_trace (trace_plan.h) equals the trace run_experiment records, event by
// event and field by field (all but dur_us), for every mode, layout, mask, phase, head shape, dtype,
// hierarchical split, KV replication and packing; its rules; and what can be checked of a plan at a
// million tokens (its speed is cplab run --plan-only's to print, not a test's to assert: ctest's
// TIMEOUT guards against a hang).
// What it is not: a test of the modes' numbers (test_modes.cpp) or of the trace's JSON (test_comm.cpp).
#include <doctest/doctest.h>

#include <algorithm>
#include <optional>
#include <random>

#include "core/error.h"
#include "run/experiment.h"
#include "core/flops.h"
#include "plan/trace_plan.h"

using namespace cplab;

namespace {

struct Case {
  Mode mode;
  Layout layout;
  bool causal, backward;
  index_t cp, heads, kv_heads;
  std::string dtype = "double";
  index_t icp = 0, ocp = 0;
  bool replicate_kv = false;
  std::vector<index_t> cu = {};  // packed sequences (padded when not divisible)
  std::optional<index_t> window = {}, chunk = {};  // the mask rule (mask_rule.h)
  bool sinks = false;
};

RunSpec spec_of(const Case& c) {
  CpFields f;
  f.mode = c.mode;
  f.layout = c.layout;
  f.causal = c.causal;
  f.cp = c.cp;
  f.heads = c.heads;
  f.kv_heads = c.kv_heads;
  f.head_dim = 4;
  f.v_head_dim = 3;  // differs from head_dim: bytes and FLOPs that mix them up fail
  f.icp = c.icp;
  f.ocp = c.ocp;
  f.replicate_kv = c.replicate_kv;
  f.window = c.window;
  f.chunk = c.chunk;
  f.sinks = c.sinks;
  f.seq = 2 * c.cp * 3;
  if (!c.cu.empty()) {
    f.seq = 0;  // the packed total
    f.cu_seqlens = c.cu;
    f.pad = true;
    try {
      check_packed_lengths(c.cu, c.layout, c.cp);
      f.pad = false;  // divisible: run unpadded
    } catch (const Error&) {
    }
  }
  RunSpec s{CpSpec(f), c.backward, c.dtype};
  s.seed = 7;
  return s;
}

std::string describe(const RunSpec& run) {
  const CpSpec& s = run.cp;
  std::string d = to_string(s.mode()) + " " + to_string(s.layout()) + (s.causal() ? " causal" : " full") +
                  (run.backward ? " +bwd" : "") + " cp " + std::to_string(s.P()) + " h " + std::to_string(s.h()) + "/" +
                  std::to_string(s.hk()) + " " + run.dtype;
  if (s.mode() == Mode::a2a_p2p) d += " hcp " + std::to_string(s.icp()) + "," + std::to_string(s.ocp());
  if (s.replicate_kv()) d += " replicate-kv";
  if (s.thd()) d += std::string(" packed") + (s.pad() ? " padded" : "");
  if (!s.rule().plain() || s.sinks()) d += " " + s.mask_name() + ", ring hops " + std::to_string(s.ring_hops());
  return d;
}

// every field but dur_us, same count, same order, same meta and cp
void check_same(const RunSpec& s) {
  INFO(describe(s));
  Trace run = run_experiment(s, make_inputs(s)).trace;
  Trace plan = plan_trace(s);
  REQUIRE(plan.cp() == run.cp());
  CHECK(plan.meta() == run.meta());
  REQUIRE(plan.events().size() == run.events().size());
  for (size_t i = 0; i < run.events().size(); ++i) {
    const Event &a = plan.events()[i], &b = run.events()[i];
    INFO("event " << i << ": " << to_string(b.kind) << " " << to_string(b.phase) << " step " << b.step << " rank "
                  << b.rank << " peer " << b.peer << " " << b.tensor << b.section);
    REQUIRE(a.kind == b.kind);
    CHECK(a.phase == b.phase);
    CHECK(a.step == b.step);
    CHECK(a.rank == b.rank);
    CHECK(a.peer == b.peer);
    CHECK(a.op == b.op);
    CHECK(a.tensor == b.tensor);
    CHECK(a.bytes == b.bytes);
    CHECK(a.section == b.section);
    CHECK(a.mask == b.mask);
    CHECK(a.rows == b.rows);
    CHECK(a.cols == b.cols);
    CHECK(a.pairs == b.pairs);
    CHECK(a.flops == b.flops);
    CHECK(a.dur_us == 0);
  }
}

const Layout kLayouts[] = {Layout::contiguous, Layout::zigzag, Layout::striped};

}  // namespace

TEST_CASE("plan_trace equals the recorded trace: p2p and allgather, every layout, mask, phase, shape, dtype") {
  for (Mode mode : {Mode::p2p, Mode::allgather})
    for (Layout L : kLayouts)
      for (bool causal : {false, true})
        for (bool bwd : {false, true})
          for (index_t hk : {4, 2})
            for (const char* dt : {"double", "float"})
              for (index_t P : {1, 3, 4}) check_same(spec_of({mode, L, causal, bwd, P, 4, hk, dt}));
}

TEST_CASE("plan_trace equals the recorded trace: a2a, MHA / GQA / replicated KV") {
  for (Layout L : kLayouts)
    for (bool causal : {false, true})
      for (bool bwd : {false, true})
        for (const char* dt : {"double", "float"}) {
          check_same(spec_of({Mode::a2a, L, causal, bwd, 4, 8, 8, dt}));
          check_same(spec_of({Mode::a2a, L, causal, bwd, 4, 8, 4, dt}));
          Case rep{Mode::a2a, L, causal, bwd, 4, 8, 2, dt};
          rep.replicate_kv = true;
          check_same(spec_of(rep));
        }
  check_same(spec_of({Mode::a2a, Layout::zigzag, true, true, 1, 2, 1}));
}

TEST_CASE("plan_trace equals the recorded trace: a2a+p2p, icp x ocp") {
  const std::pair<index_t, index_t> splits[] = {{2, 2}, {4, 1}, {1, 4}, {2, 3}, {3, 2}};
  for (const auto& [I, O] : splits)
    for (bool causal : {false, true})
      for (bool bwd : {false, true})
        for (const char* dt : {"double", "float"}) {
          Case c{Mode::a2a_p2p, Layout::zigzag, causal, bwd, I * O, 6 * I, 2 * I, dt, I, O};
          check_same(spec_of(c));
          c.kv_heads = 1;  // GQA below the inner size: replicate
          c.replicate_kv = I > 1;
          check_same(spec_of(c));
        }
}

TEST_CASE("plan_trace equals the recorded trace: packed sequences (THD), padded and not") {
  for (Mode mode : {Mode::p2p, Mode::allgather, Mode::a2a})
    for (Layout L : kLayouts)
      for (bool causal : {false, true})
        for (const char* dt : {"double", "float"}) {
          check_same(spec_of({mode, L, causal, true, 4, 8, 4, dt, 0, 0, false, {0, 7, 20, 21, 40}}));  // padded
          check_same(spec_of({mode, L, causal, true, 2, 4, 2, dt, 0, 0, false, {0, 8, 24, 28}}));      // unpadded
        }
  check_same(spec_of({Mode::p2p, Layout::zigzag, true, false, 4, 4, 2, "double", 0, 0, false, {0, 40}}));  // one sequence
}

TEST_CASE("plan_trace equals the recorded trace: windows and chunks (rings that stop early), sinks, packed or not") {
  struct Rule {
    bool causal;
    std::optional<index_t> window, chunk;
  };
  // n = 6 tokens per rank: windows of 1 (no hop), 4 and 6 (one hop when contiguous), 9, 100; chunks
  const Rule rules[] = {{true, 1, {}}, {true, 4, {}}, {true, 6, {}}, {true, 9, {}}, {true, 100, {}}, {false, 4, {}},
                        {true, {}, 5}, {true, {}, 13}};
  for (const Rule& m : rules)
    for (Mode mode : {Mode::p2p, Mode::allgather, Mode::a2a})
      for (Layout L : kLayouts)
        for (bool packed : {false, true}) {
          Case c{mode, L, m.causal, true, 4, 4, mode == Mode::a2a ? 4 : 2};
          if (packed) c.cu = {0, 7, 20, 21, 40};
          c.window = m.window, c.chunk = m.chunk;
          c.sinks = L == Layout::zigzag;  // sinks change no event: checked on some
          check_same(spec_of(c));
          if (mode == Mode::p2p && !packed) {  // the backward alone, and float
            c.backward = false;
            check_same(spec_of(c));
            c.backward = true, c.dtype = "float";
            check_same(spec_of(c));
          }
        }
  for (const Rule& m : rules)
    for (auto [I, O] : {std::pair<index_t, index_t>{2, 2}, {1, 4}}) {
      Case c{Mode::a2a_p2p, Layout::zigzag, m.causal, true, I * O, 2 * I, 2 * I, "double", I, O};
      c.window = m.window, c.chunk = m.chunk, c.sinks = true;
      check_same(spec_of(c));
    }
}

// token_mask sweeps sorted queries (what makes planning packed tiles fast): it must give, query by
// query, the count of keys below the first and past the last visible position, as a search would
TEST_CASE("token_mask: swept (sorted) and searched (unsorted) queries agree with counting") {
  std::mt19937_64 rng(3);
  for (int trial = 0; trial < 200; ++trial) {
    std::vector<index_t> cu = {0};
    const int B = 1 + static_cast<int>(rng() % 5);
    for (int b = 0; b < B; ++b) cu.push_back(cu.back() + 1 + static_cast<index_t>(rng() % 9));
    const Packing p = trial % 2 ? Packing::padded(cu, 4) : Packing::unpadded(cu);
    std::vector<index_t> q, k;
    for (index_t g = 0; g < p.total(); ++g) {
      if (rng() % 2) q.push_back(g);
      if (rng() % 3) k.push_back(g);
    }
    if (trial % 3 == 0) std::shuffle(q.begin(), q.end(), rng);
    const bool causal = trial % 4 < 2;
    const Mask m = token_mask(p, q, k, causal);
    for (size_t a = 0; a < q.size(); ++a) {
      const index_t s = p.seq_of(q[a]), start = p.cu_seqlens_padded[static_cast<size_t>(s)];
      const bool real = q[a] - start < p.length(s);
      const index_t end = causal ? q[a] + 1 : start + p.length(s);
      const auto below = [&](index_t x) { return static_cast<index_t>(std::count_if(k.begin(), k.end(), [&](index_t y) { return y < x; })); };
      const KeyRange r = m.keys(static_cast<index_t>(a), static_cast<index_t>(k.size()));
      CHECK(r.lo == (real ? below(start) : 0));
      CHECK(r.hi == (real ? below(end) : 0));
    }
  }
}

TEST_CASE("plan_trace checks the run like validate, without the CPU reference's limits") {
  CpFields f;
  f.layout = Layout::zigzag;
  f.cp = 8;
  f.seq = 1000;
  CHECK_THROWS_WITH_AS(CpSpec{f}, "seq 1000 is not a multiple of 2*cp = 16 (zigzag splits the sequence into 2*cp equal chunks)", Error);
  f.seq = 1 << 20, f.heads = 32, f.kv_heads = 8, f.head_dim = 128, f.causal = true;
  RunSpec s{CpSpec(f), true};
  CHECK_THROWS_WITH_AS(validate(s), doctest::Contains("GiB in the CPU reference"), Error);
  CHECK(plan_trace(s).events().size() == 8 * 7 * 2 + 8 * 8 + 8 * 8 * 3);  // fwd: 7 steps post; bwd: 8
  f.mode = Mode::a2a;
  f.heads = 36, f.kv_heads = 4;
  CHECK_THROWS_WITH_AS(CpSpec{f}, "heads 36 is not divisible by cp = 8 (the all-to-all gives every rank heads/cp heads)", Error);
  f.mode = Mode::allgather;
  f.cp = 256, f.seq = 1 << 26, f.heads = f.kv_heads = f.head_dim = 1;
  s.cp = CpSpec(f);
  CHECK(plan_work_estimate(s) > kMaxPlanWork);
  CHECK_THROWS_WITH_AS(plan_trace(s), doctest::Contains("pass --allow-long to plan it anyway"), Error);
  f.seq = index_t{1} << 40;
  s.cp = CpSpec(f);
  CHECK_THROWS_WITH_AS(plan_trace(s), doctest::Contains("more than a trace's 64-bit counts hold"), Error);
}

namespace {

// plan a large spec and check what can be checked at that size without running it: the ranks'
// FLOPs sum to dense attention's, every send has its receive with the same bytes
void plan_large(const RunSpec& s, std::int64_t dense_pairs) {
  const Trace t = plan_trace(s);
  MESSAGE(describe(s) << " seq " << s.cp.S() << ": " << t.events().size() << " events planned");
  const CpSpec& cp = s.cp;
  std::int64_t flops = 0;
  for (std::int64_t f : t.flops_per_rank()) flops += f;
  CHECK(flops == fwd_flops(dense_pairs, cp.h(), cp.d(), cp.dv()) + bwd_flops(dense_pairs, cp.h(), cp.d(), cp.dv()));
  std::int64_t sent = 0, recv = 0;
  for (std::int64_t b : t.bytes_sent_per_rank()) sent += b;
  for (std::int64_t b : t.bytes_recv_per_rank()) recv += b;
  CHECK(sent == recv);
  CHECK(sent > 0);
}

CpFields large(Mode mode, index_t cp, index_t heads) {
  CpFields f;
  f.mode = mode;
  f.layout = Layout::zigzag;
  f.cp = cp;
  f.seq = index_t{1} << 20;
  f.heads = heads;
  f.kv_heads = 8;
  f.head_dim = 128;
  f.causal = true;
  return f;
}

RunSpec bwd(const CpFields& f) { return RunSpec{CpSpec(f), true}; }

}  // namespace

TEST_CASE("plan_trace at a million tokens (cp 64, 32 heads, 8 KV heads, head dim 128)") {
  const std::int64_t S = index_t{1} << 20, causal = S * (S + 1) / 2;
  plan_large(bwd(large(Mode::p2p, 64, 32)), causal);
  plan_large(bwd(large(Mode::allgather, 64, 32)), causal);
  CpFields a2a = large(Mode::a2a, 64, 64);  // heads and KV heads divisible by cp: 64 heads, KV replicated
  a2a.replicate_kv = true;
  plan_large(bwd(a2a), causal);
  CpFields hcp = large(Mode::a2a_p2p, 64, 32);
  hcp.icp = 8, hcp.ocp = 8;
  plan_large(bwd(hcp), causal);
  // packed: 64 sequences of different lengths, padded, 1M tokens
  CpFields thd = large(Mode::p2p, 64, 32);
  thd.pad = true;
  thd.seq = 0;  // the packed total
  std::int64_t pairs = 0;
  thd.cu_seqlens = {0};
  for (index_t i = 0; i < 64; ++i) {
    const index_t len = 8200 + 260 * i;  // 8200 .. 24580 tokens, 1,048,960 in all
    thd.cu_seqlens.push_back(thd.cu_seqlens.back() + len);
    pairs += len * (len + 1) / 2;
  }
  CHECK(CpSpec(thd).S() >= S);
  plan_large(bwd(thd), pairs);
  thd.mode = Mode::allgather;
  plan_large(bwd(thd), pairs);
  thd.mode = Mode::a2a, thd.heads = 64, thd.replicate_kv = true;
  plan_large(bwd(thd), pairs);
}
