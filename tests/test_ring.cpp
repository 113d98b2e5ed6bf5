// test_ring.cpp: ring (p2p) attention against the dense oracle over the whole matrix of layouts,
// masks, cp, head layouts and merges; the schedule against the global causal mask token by token;
// message counts and bytes against their closed forms; work balance.
#include <doctest/doctest.h>

#include <map>
#include <nlohmann/json.hpp>

#include "run/experiment.h"
#include "core/flops.h"
#include "helpers.h"
#include "run_checks.h"
#include "modes/ring_p2p.h"
#include "modes/ring_schedule.h"

using namespace cplab;

namespace {

CpFields ring_fields(Layout L, bool causal, index_t P, index_t h, index_t hk, MergeKind m) {
  CpFields f;
  f.layout = L;
  f.causal = causal;
  f.cp = P;
  f.seq = 2 * P * 5;  // zigzag chunks of 5 tokens: odd, so half-chunk bugs show
  f.heads = h;
  f.kv_heads = hk;
  f.head_dim = 8;
  f.v_head_dim = 6;
  f.merge = m;
  return f;
}

RunSpec spec(Layout L, bool causal, index_t P, index_t h, index_t hk, MergeKind m) {
  RunSpec s{CpSpec(ring_fields(L, causal, P, h, hk, m)), true};
  s.seed = static_cast<std::uint64_t>(P * 100 + h * 10 + hk);
  return s;
}

// s with another layout (the spec is rebuilt, and validated again)
RunSpec with_layout(RunSpec s, Layout L) {
  CpFields f = s.cp.fields();
  f.layout = L;
  s.cp = CpSpec(f);
  return s;
}

}  // namespace

TEST_CASE("ring: equals dense attention in double (<= 1e-10) for every layout, mask, cp, MHA/GQA/MQA, merge") {
  for (Layout L : {Layout::contiguous, Layout::zigzag, Layout::striped})
    for (bool causal : {false, true})
      for (index_t P : {1, 2, 3, 4, 8})
        for (auto [h, hk] : {std::pair<index_t, index_t>{4, 4}, {4, 2}, {4, 1}})
          for (MergeKind m : {MergeKind::streaming, MergeKind::fold}) {
            const RunSpec s = spec(L, causal, P, h, hk, m);
            CAPTURE(to_string(L));
            CAPTURE(causal);
            CAPTURE(P);
            CAPTURE(h);
            CAPTURE(hk);
            CAPTURE(to_string(m));
            const RunReport r = run_experiment(s, make_inputs(s));
            REQUIRE(r.err_dq);  // a backward run
            check_exact_run(r);
          }
}

TEST_CASE("ring: float runs stay within float tolerance of the double oracle") {
  RunSpec s = spec(Layout::zigzag, true, 4, 4, 2, MergeKind::streaming);
  s.dtype = "float";
  const RunReport r = run_experiment(s, make_inputs(s));
  CHECK(r.max_error() < 1e-5);
  CHECK(r.max_error() > 0.0);
  CHECK(r.bytes_sent[0] == (4 - 1) * (s.cp.S() / 4) * 2 * (8 + 6) * 4 * 3);  // float: 4-byte elements
}

TEST_CASE("ring: every tile of the schedule is exactly the global causal mask, and together they cover it once") {
  for (Layout L : {Layout::contiguous, Layout::zigzag, Layout::striped})
    for (index_t P : {1, 2, 3, 4, 8}) {
      const index_t S = 2 * P * 3;
      const Partition p(L, S, P);
      const index_t n = p.local_len();
      std::map<std::pair<index_t, index_t>, int> covered;  // (gq, gk) -> times computed as visible
      for (index_t r = 0; r < P; ++r)
        for (index_t i = 0; i < P; ++i) {
          const index_t j = ring_fwd_kv_block(P, r, i);
          const RingTile t = ring_tile(L, true, P, r, j, n);
          CAPTURE(to_string(L));
          CAPTURE(P);
          CAPTURE(r);
          CAPTURE(j);
          for (index_t a = 0; a < n; ++a)
            for (index_t b = 0; b < n; ++b) {
              const index_t gq = p.global(r, a), gk = p.global(j, b);
              const bool in_tile = !t.skipped && a >= t.q0 && a < t.q0 + t.nq && b >= t.k0 && b < t.k0 + t.nk;
              const bool vis = in_tile && (b - t.k0) < t.mask.visible_keys(a - t.q0, t.nk);
              if (in_tile) CHECK(vis == (gk <= gq));  // inside a tile the mask is the causal mask
              if (vis) covered[{gq, gk}] += 1;
            }
        }
      // outside the tiles nothing visible was left out: every causal pair computed exactly once
      CHECK(static_cast<index_t>(covered.size()) == S * (S + 1) / 2);
      for (const auto& [pair, times] : covered) CHECK(times == 1);
    }
}

TEST_CASE("ring: the backward visits the same tiles as the forward, in reverse order") {
  for (index_t P : {2, 3, 5})
    for (index_t r = 0; r < P; ++r)
      for (index_t i = 0; i < P; ++i) CHECK(ring_bwd_kv_block(P, r, i) == ring_fwd_kv_block(P, r, P - 1 - i));
}

TEST_CASE("ring: messages and bytes per rank equal their closed forms") {
  for (Layout L : {Layout::contiguous, Layout::zigzag, Layout::striped})
    for (index_t P : {1, 2, 3, 4, 8})
      for (auto [h, hk] : {std::pair<index_t, index_t>{4, 4}, {4, 1}}) {
        const RunSpec s = spec(L, true, P, h, hk, MergeKind::streaming);
        const RunReport r = run_experiment(s, make_inputs(s));
        const std::int64_t n = s.cp.n();
        const std::int64_t kv_bytes = n * hk * (s.cp.d() + s.cp.dv()) * 8;  // GQA: only the hk KV heads travel
        const Phase f = Phase::fwd, b = Phase::bwd;
        const auto mf = r.trace.messages_sent_per_rank(&f), mb = r.trace.messages_sent_per_rank(&b);
        const auto bf = r.trace.bytes_sent_per_rank(&f), bb = r.trace.bytes_sent_per_rank(&b);
        for (index_t k = 0; k < P; ++k) {
          CAPTURE(P);
          CHECK(mf[k] == P - 1);                    // forward: one KV block per step but the last
          CHECK(mb[k] == (P > 1 ? P : 0));          // backward: kv, (P-2) x kv+dkv, dkv
          CHECK(bf[k] == (P - 1) * kv_bytes);
          CHECK(bb[k] == 2 * (P - 1) * kv_bytes);   // KV makes P-1 hops, dKV makes P-1 hops
        }
      }
}

TEST_CASE("ring: zigzag causal work is equal on all ranks, contiguous shows its imbalance in closed form") {
  for (index_t P : {2, 4, 8}) {
    RunSpec s = spec(Layout::zigzag, true, P, 2, 1, MergeKind::streaming);
    RunReport r = run_experiment(s, make_inputs(s));
    for (auto f : r.flops) CHECK(f == r.flops[0]);
    CHECK(r.work_ratio == 1.0);

    s = with_layout(s, Layout::contiguous);
    r = run_experiment(s, make_inputs(s));
    const double n = static_cast<double>(s.cp.n());
    // rank 0: its causal diagonal; rank P-1: P-1 full blocks plus the diagonal
    const double expect = ((P - 1) * n * n + n * (n + 1) / 2) / (n * (n + 1) / 2);
    CHECK(r.work_ratio == doctest::Approx(expect).epsilon(1e-12));
    for (index_t k = 1; k < P; ++k) CHECK(r.flops[k] > r.flops[k - 1]);

    s = with_layout(s, Layout::striped);  // rank P-1 sees P(n+1)n/2 pairs, rank 0 (n+1)n/2 + (P-1)(n-1)n/2
    r = run_experiment(s, make_inputs(s));
    CHECK(r.work_ratio == doctest::Approx(P * (n + 1) / ((n + 1) + (P - 1) * (n - 1))).epsilon(1e-12));
  }
}

TEST_CASE("ring: the trace records every tile with its section, and its sums are the report's") {
  const RunSpec s = spec(Layout::zigzag, true, 4, 2, 1, MergeKind::streaming);
  const RunReport r = run_experiment(s, make_inputs(s));
  std::map<std::string, int> sections;
  std::int64_t flops = 0, bytes = 0;
  for (const Event& e : r.trace.events()) {
    if (e.kind == EventKind::tile) {
      sections[e.section + "/" + to_string(e.phase)] += 1;
      flops += e.flops;
    }
    if (e.kind == EventKind::send) bytes += e.bytes;
  }
  // per rank r: 1 diagonal, r lower, 3-r upper; forward and backward
  CHECK(sections["diagonal/fwd"] == 4);
  CHECK(sections["lower/fwd"] == 0 + 1 + 2 + 3);
  CHECK(sections["upper/fwd"] == 3 + 2 + 1 + 0);
  CHECK(sections["lower/bwd"] == 6);
  std::int64_t f2 = 0, b2 = 0;
  for (size_t k = 0; k < 4; ++k) f2 += r.flops[k], b2 += r.bytes_sent[k];
  CHECK(flops == f2);
  CHECK(bytes == b2);
  // the JSON form round-trips
  const Trace back = Trace::from_json(r.trace.to_json());
  CHECK(back.events().size() == r.trace.events().size());
  CHECK(back.flops_per_rank() == r.trace.flops_per_rank());
  CHECK(back.events()[5].rows == r.trace.events()[5].rows);
  CHECK(r.trace.to_chrome_json().at("traceEvents").size() > r.trace.events().size() / 2);
}

TEST_CASE("experiment: bad specs are refused with the rule") {
  auto spec_of = [](auto edit) {
    CpFields f;
    f.seq = 4096;
    edit(f);
    return CpSpec(f);
  };
  CHECK_THROWS_WITH_AS(spec_of([](CpFields& f) { f.seq = 1000, f.cp = 8; }),
                       "seq 1000 is not a multiple of 2*cp = 16 (zigzag splits the sequence into 2*cp equal chunks)", Error);
  CHECK_THROWS_WITH_AS(spec_of([](CpFields& f) { f.kv_heads = 3; }),
                       "kv-heads 3 does not divide heads 8 (GQA/MQA needs heads = kv-heads * group size)", Error);
  CHECK_THROWS_WITH_AS(spec_of([](CpFields& f) { f.head_dim = 0; }), "head-dim 0 must be >= 1", Error);
  CHECK_THROWS_WITH_AS(spec_of([](CpFields& f) { f.cp = 0; }), "cp 0 must be >= 1", Error);
  CHECK_THROWS_WITH_AS(parse_mode("ring"), "mode 'ring' is not one of: p2p, allgather, a2a, a2a+p2p", Error);
  CHECK_THROWS_WITH_AS(spec_of([](CpFields& f) { f.cp = 512, f.seq = 1024; }),
                       "cp 512 is more than the 256 ranks the CPU reference simulates (a ring computes cp*cp tiles)", Error);
  CHECK_THROWS_WITH_AS(spec_of([](CpFields& f) { f.seq = 0; }), "seq 0 must be >= 1", Error);
  RunSpec s;
  s.dtype = "half";
  CHECK_THROWS_WITH_AS(validate(s), "dtype 'half' is not one of: float, double", Error);
  s = RunSpec{spec_of([](CpFields& f) { f.seq = 1 << 30, f.cp = 1; })};
  CHECK_THROWS_WITH_AS(validate(s), doctest::Contains("GiB in the CPU reference"), Error);
  s = RunSpec{spec_of([](CpFields& f) { f.seq = 1 << 17; })};
  CHECK_THROWS_WITH_AS(validate(s), doctest::Contains("pass --allow-long to run it anyway"), Error);
  s.allow_long = true;
  CHECK_NOTHROW(validate(s));
}
