// test_trace_plan.cpp: plan_trace (trace_plan.h) equals the trace run_experiment records, event by
// event and field by field (all but dur_us), for every mode, layout, mask, phase, head shape, dtype,
// hierarchical split, KV replication and packing; its rules; and its speed at a million tokens.
// What it is not: a test of the modes' numbers (test_modes.cpp) or of the trace's JSON (test_comm.cpp).
#include <doctest/doctest.h>

#include <algorithm>
#include <chrono>
#include <random>

#include "error.h"
#include "experiment.h"
#include "flops.h"
#include "trace_plan.h"

using namespace cplab;

namespace {

struct Case {
  std::string mode;
  Layout layout;
  bool causal, backward;
  index_t cp, heads, kv_heads;
  std::string dtype = "double";
  index_t icp = 0, ocp = 0;
  bool replicate_kv = false;
  std::vector<index_t> cu = {};  // packed sequences (padded when not divisible)
};

RunSpec spec_of(const Case& c) {
  RunSpec s;
  s.mode = c.mode;
  s.layout = c.layout;
  s.causal = c.causal;
  s.backward = c.backward;
  s.cp = c.cp;
  s.heads = c.heads;
  s.kv_heads = c.kv_heads;
  s.head_dim = 4;
  s.v_head_dim = 3;  // differs from head_dim: bytes and FLOPs that mix them up fail
  s.dtype = c.dtype;
  s.icp = c.icp;
  s.ocp = c.ocp;
  s.replicate_kv = c.replicate_kv;
  s.seed = 7;
  s.seq = 2 * c.cp * 3;
  if (!c.cu.empty()) {
    s.cu_seqlens = c.cu;
    s.pad = true;
    try {
      check_packed_lengths(c.cu, c.layout, c.cp);
      s.pad = false;  // divisible: run unpadded
    } catch (const Error&) {
    }
    s.seq = s.packing().total();
  }
  return s;
}

std::string describe(const RunSpec& s) {
  std::string d = s.mode + " " + to_string(s.layout) + (s.causal ? " causal" : " full") + (s.backward ? " +bwd" : "") +
                  " cp " + std::to_string(s.cp) + " h " + std::to_string(s.heads) + "/" + std::to_string(s.kv_heads) +
                  " " + s.dtype;
  if (s.mode == "a2a+p2p") d += " hcp " + std::to_string(s.icp) + "," + std::to_string(s.ocp);
  if (s.replicate_kv) d += " replicate-kv";
  if (s.packed()) d += std::string(" packed") + (s.pad ? " padded" : "");
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
  for (const char* mode : {"p2p", "allgather"})
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
          check_same(spec_of({"a2a", L, causal, bwd, 4, 8, 8, dt}));
          check_same(spec_of({"a2a", L, causal, bwd, 4, 8, 4, dt}));
          Case rep{"a2a", L, causal, bwd, 4, 8, 2, dt};
          rep.replicate_kv = true;
          check_same(spec_of(rep));
        }
  check_same(spec_of({"a2a", Layout::zigzag, true, true, 1, 2, 1}));
}

TEST_CASE("plan_trace equals the recorded trace: a2a+p2p, icp x ocp") {
  const std::pair<index_t, index_t> splits[] = {{2, 2}, {4, 1}, {1, 4}, {2, 3}, {3, 2}};
  for (const auto& [I, O] : splits)
    for (bool causal : {false, true})
      for (bool bwd : {false, true})
        for (const char* dt : {"double", "float"}) {
          Case c{"a2a+p2p", Layout::zigzag, causal, bwd, I * O, 6 * I, 2 * I, dt, I, O};
          check_same(spec_of(c));
          c.kv_heads = 1;  // GQA below the inner size: replicate
          c.replicate_kv = I > 1;
          check_same(spec_of(c));
        }
}

TEST_CASE("plan_trace equals the recorded trace: packed sequences (THD), padded and not") {
  for (const char* mode : {"p2p", "allgather", "a2a"})
    for (Layout L : kLayouts)
      for (bool causal : {false, true})
        for (const char* dt : {"double", "float"}) {
          check_same(spec_of({mode, L, causal, true, 4, 8, 4, dt, 0, 0, false, {0, 7, 20, 21, 40}}));  // padded
          check_same(spec_of({mode, L, causal, true, 2, 4, 2, dt, 0, 0, false, {0, 8, 24, 28}}));      // unpadded
        }
  check_same(spec_of({"p2p", Layout::zigzag, true, false, 4, 4, 2, "double", 0, 0, false, {0, 40}}));  // one sequence
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

TEST_CASE("plan_trace checks the spec like validate, without the CPU reference's limits") {
  RunSpec s;
  s.layout = Layout::zigzag;
  s.cp = 8;
  s.seq = 1000;
  CHECK_THROWS_WITH_AS(plan_trace(s), "seq 1000 is not a multiple of 2*cp = 16 (zigzag splits the sequence into 2*cp equal chunks)", Error);
  s.seq = 1 << 20, s.heads = 32, s.kv_heads = 8, s.head_dim = 128, s.causal = s.backward = true;
  CHECK_THROWS_WITH_AS(validate(s), doctest::Contains("GiB in the CPU reference"), Error);
  CHECK(plan_trace(s).events().size() == 8 * 7 * 2 + 8 * 8 + 8 * 8 * 3);  // fwd: 7 steps post; bwd: 8
  s.mode = "a2a";
  s.heads = 36, s.kv_heads = 4;
  CHECK_THROWS_WITH_AS(plan_trace(s), "heads 36 is not divisible by cp = 8 (the all-to-all gives every rank heads/cp heads)", Error);
  s.mode = "allgather";
  s.cp = 256, s.seq = 1 << 26, s.heads = s.kv_heads = s.head_dim = 1;
  CHECK(plan_work_estimate(s) > kMaxPlanWork);
  CHECK_THROWS_WITH_AS(plan_trace(s), doctest::Contains("pass --allow-long to plan it anyway"), Error);
  s.seq = index_t{1} << 40;
  CHECK_THROWS_WITH_AS(plan_trace(s), doctest::Contains("more than a trace's 64-bit counts hold"), Error);
}

namespace {

// plan a large spec, time it, and check what can be checked at that size without running it:
// the ranks' FLOPs sum to dense attention's, every send has its receive with the same bytes
double plan_large(const RunSpec& s, std::int64_t dense_pairs) {
  const auto t0 = std::chrono::steady_clock::now();
  const Trace t = plan_trace(s);
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  MESSAGE(describe(s) << " seq " << s.seq << ": " << t.events().size() << " events planned in " << secs << " s");
  std::int64_t flops = 0;
  for (std::int64_t f : t.flops_per_rank()) flops += f;
  CHECK(flops == fwd_flops(dense_pairs, s.heads, s.head_dim, s.dv()) + bwd_flops(dense_pairs, s.heads, s.head_dim, s.dv()));
  std::int64_t sent = 0, recv = 0;
  for (std::int64_t b : t.bytes_sent_per_rank()) sent += b;
  for (std::int64_t b : t.bytes_recv_per_rank()) recv += b;
  CHECK(sent == recv);
  CHECK(sent > 0);
#ifdef NDEBUG
  CHECK(secs < 10);  // about a second in Release on 2 cores; generous so that CI cannot flake
#endif
  return secs;
}

RunSpec large(const std::string& mode, index_t cp, index_t heads) {
  RunSpec s;
  s.mode = mode;
  s.layout = Layout::zigzag;
  s.cp = cp;
  s.seq = index_t{1} << 20;
  s.heads = heads;
  s.kv_heads = 8;
  s.head_dim = 128;
  s.causal = s.backward = true;
  return s;
}

}  // namespace

TEST_CASE("plan_trace at a million tokens (cp 64, 32 heads, 8 KV heads, head dim 128) in seconds") {
  const std::int64_t S = index_t{1} << 20, causal = S * (S + 1) / 2;
  plan_large(large("p2p", 64, 32), causal);
  plan_large(large("allgather", 64, 32), causal);
  RunSpec a2a = large("a2a", 64, 64);  // heads and KV heads divisible by cp: 64 heads, KV replicated
  a2a.replicate_kv = true;
  plan_large(a2a, causal);
  RunSpec hcp = large("a2a+p2p", 64, 32);
  hcp.icp = 8, hcp.ocp = 8;
  plan_large(hcp, causal);
  // packed: 64 sequences of different lengths, padded, 1M tokens
  RunSpec thd = large("p2p", 64, 32);
  thd.pad = true;
  std::int64_t pairs = 0;
  thd.cu_seqlens = {0};
  for (index_t i = 0; i < 64; ++i) {
    const index_t len = 8200 + 260 * i;  // 8200 .. 24580 tokens, 1,048,960 in all
    thd.cu_seqlens.push_back(thd.cu_seqlens.back() + len);
    pairs += len * (len + 1) / 2;
  }
  thd.seq = thd.packing().total();
  CHECK(thd.seq >= S);
  plan_large(thd, pairs);
  thd.mode = "allgather";
  plan_large(thd, pairs);
  thd.mode = "a2a", thd.heads = 64, thd.replicate_kv = true;
  plan_large(thd, pairs);
}
