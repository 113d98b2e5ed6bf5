// test_modes.cpp: every CP mode x layout x mask x cp x MHA/GQA x packed/unpacked, forward and
// backward, against the dense oracle in double (<= 1e-10); padding exactly zero; FLOPs complete;
// messages and bytes per rank, per phase, and steps equal the mode table's closed forms (modes/mode_table.h).
#include <doctest/doctest.h>

#include "core/error.h"
#include "run/experiment.h"
#include "run_checks.h"
#include "modes/cp_attention.h"
#include "modes/hierarchical_cp.h"
#include "modes/ulysses_a2a.h"

using namespace cplab;

namespace {

struct Shape {
  index_t h, hk;
};

CpFields fields(Mode mode, Layout L, bool causal, index_t P, Shape sh, bool packed) {
  CpFields f;
  f.mode = mode;
  f.layout = L;
  f.causal = causal;
  f.cp = P;
  f.heads = sh.h;
  f.kv_heads = sh.hk;
  f.head_dim = 8;
  f.v_head_dim = 6;
  if (packed) {
    f.cu_seqlens = {0, 7, 20, 21, 40};  // lengths 7, 13, 1, 19: padded to the layout's factor
    f.pad = true;
  } else {
    f.seq = 2 * P * 5;
  }
  return f;
}

RunSpec run_of(const CpFields& f) {
  RunSpec s{CpSpec(f), true};
  s.seed = static_cast<std::uint64_t>(f.cp * 1000 + f.heads * 10 + f.kv_heads + (f.causal ? 7 : 0));
  return s;
}

// The run against the oracle, and its trace against the mode table (modes/mode_table.h): messages
// and bytes per rank and phase equal the closed forms, the steps their counts.
void check_run(const CpFields& f) {
  const RunSpec s = run_of(f);
  const CpSpec& cp = s.cp;
  CAPTURE(to_string(cp.mode()));
  CAPTURE(to_string(cp.layout()));
  CAPTURE(cp.causal());
  CAPTURE(cp.P());
  CAPTURE(cp.icp());
  CAPTURE(cp.h());
  CAPTURE(cp.hk());
  CAPTURE(cp.packed());
  const RunReport r = run_experiment(s, make_inputs(s));
  REQUIRE(r.err_dq);  // a backward run
  check_exact_run(r);
  CHECK(r.padding_max_abs == 0.0);
  const CommPerRank c = cp.comm_per_rank(8);  // 8-byte doubles
  const Phase fw = Phase::fwd, bw = Phase::bwd;
  int last[2] = {-1, -1};  // the last step of each phase
  for (const Event& e : r.trace.events()) last[e.phase == fw ? 0 : 1] = std::max(last[e.phase == fw ? 0 : 1], e.step);
  CHECK(last[0] + 1 <= cp.fwd_steps());
  CHECK(last[1] + 1 <= cp.bwd_steps());
  // the last step is a collective's or a ring step's: it records events unless the group is one rank
  const bool last_step_records = cp.mode() == Mode::p2p || (cp.info().all_to_all ? cp.a2a_group() : cp.P()) > 1;
  if (last_step_records) CHECK(last[0] + 1 == cp.fwd_steps());
  if (last_step_records) CHECK(last[1] + 1 == cp.bwd_steps());
  for (index_t k = 0; k < cp.P(); ++k) {
    CHECK(r.trace.messages_sent_per_rank(&fw)[static_cast<size_t>(k)] == c.fwd_msgs);
    CHECK(r.trace.messages_sent_per_rank(&bw)[static_cast<size_t>(k)] == c.bwd_msgs);
    CHECK(r.trace.bytes_sent_per_rank(&fw)[static_cast<size_t>(k)] == c.fwd_bytes);
    CHECK(r.trace.bytes_sent_per_rank(&bw)[static_cast<size_t>(k)] == c.bwd_bytes);
    CHECK(r.bytes_recv[static_cast<size_t>(k)] == r.bytes_sent[static_cast<size_t>(k)]);  // symmetric modes
  }
}

const Layout kLayouts[] = {Layout::contiguous, Layout::zigzag, Layout::striped};

}  // namespace

TEST_CASE("modes: p2p over packed sequences (padded) for every layout, mask, cp, MHA/GQA") {
  for (Layout L : kLayouts)
    for (bool causal : {false, true})
      for (index_t P : {1, 2, 3, 4, 8})
        for (Shape sh : {Shape{4, 4}, Shape{4, 2}}) check_run(fields(Mode::p2p, L, causal, P, sh, true));
}

TEST_CASE("modes: all-gather KV, packed and unpacked, every layout, mask, cp, MHA/GQA") {
  for (Layout L : kLayouts)
    for (bool causal : {false, true})
      for (index_t P : {1, 2, 3, 4, 8})
        for (Shape sh : {Shape{4, 4}, Shape{4, 2}})
          for (bool packed : {false, true}) check_run(fields(Mode::allgather, L, causal, P, sh, packed));
}

TEST_CASE("modes: Ulysses a2a, packed and unpacked, every layout, mask, cp (odd too), MHA/GQA, KV replication") {
  for (Layout L : kLayouts)
    for (bool causal : {false, true})
      for (index_t P : {1, 2, 3, 4, 8})
        for (Shape sh : {Shape{2 * P, 2 * P}, Shape{2 * P, P}})
          for (bool packed : {false, true}) check_run(fields(Mode::a2a, L, causal, P, sh, packed));
  CpFields f = fields(Mode::a2a, Layout::zigzag, true, 4, Shape{8, 2}, false);  // 2 KV heads, cp 4: replicate x2
  f.replicate_kv = true;
  CHECK(CpSpec(f).kv_replication() == 2);
  check_run(f);
}

TEST_CASE("modes: hierarchical a2a+p2p for every factorisation of cp, mask, MHA/GQA") {
  const std::pair<index_t, index_t> hcps[] = {{1, 1}, {2, 1}, {1, 2}, {2, 2}, {4, 1}, {1, 4}, {3, 2}, {2, 3}, {4, 2}, {2, 4}};
  for (auto [icp, ocp] : hcps)
    for (bool causal : {false, true})
      for (Shape sh : {Shape{2 * icp, 2 * icp}, Shape{2 * icp, icp}}) {
        CpFields f = fields(Mode::a2a_p2p, Layout::zigzag, causal, icp * ocp, sh, false);
        f.icp = icp;
        f.ocp = ocp;
        check_run(f);
      }
  CpFields f = fields(Mode::a2a_p2p, Layout::zigzag, true, 8, Shape{8, 2}, false);  // icp 4 > 2 KV heads
  f.icp = 4;
  f.ocp = 2;
  f.replicate_kv = true;
  check_run(f);
}

TEST_CASE("modes: the mode rules are refused with their messages") {
  CpFields s = fields(Mode::a2a, Layout::zigzag, true, 4, Shape{6, 6}, false);
  CHECK_THROWS_WITH_AS(CpSpec{s}, "heads 6 is not divisible by cp = 4 (the all-to-all gives every rank heads/cp heads)", Error);
  s = fields(Mode::a2a_p2p, Layout::zigzag, true, 8, Shape{8, 8}, false);
  s.icp = 3;
  s.ocp = 2;
  CHECK_THROWS_WITH_AS(CpSpec{s}, "--hcp 3,2 multiplies to 6, not cp = 8 (ICP x OCP must equal cp)", Error);
  s.icp = s.ocp = 0;
  CHECK_THROWS_WITH_AS(CpSpec{s}, doctest::Contains("a2a+p2p needs --hcp ICP,OCP"), Error);
  s = fields(Mode::a2a_p2p, Layout::striped, true, 4, Shape{4, 4}, false);
  s.icp = s.ocp = 2;
  CHECK_THROWS_WITH_AS(CpSpec{s}, "a2a+p2p needs --layout zigzag (the data is zigzag over all cp ranks; the outer ring keeps zigzag over OCP)", Error);
  s = fields(Mode::p2p, Layout::zigzag, true, 3, Shape{4, 4}, true);
  s.pad = false;
  s.seq = 40;
  CHECK_THROWS_WITH_AS(CpSpec{s}, "sequence 0 has length 7, not a multiple of 2*cp = 6 (zigzag splits every sequence into 2*cp equal chunks); pass --pad to pad each sequence to a multiple of 6", Error);
}

TEST_CASE("modes: the a2a chunk reorder tables, derived from the layout, are TE's") {
  CHECK(chunk_ids_before_attn(2) == std::vector<index_t>{0, 2, 3, 1});
  CHECK(chunk_ids_after_attn(2) == std::vector<index_t>{0, 3, 1, 2});
  CHECK(chunk_ids_before_attn(3) == std::vector<index_t>{0, 2, 4, 5, 3, 1});
  CHECK(chunk_ids_after_attn(3) == std::vector<index_t>{0, 5, 1, 4, 2, 3});
  CHECK(chunk_ids_before_attn(4) == std::vector<index_t>{0, 2, 4, 6, 7, 5, 3, 1});
  CHECK(chunk_ids_after_attn(4) == std::vector<index_t>{0, 7, 1, 6, 2, 5, 3, 4});
  for (index_t P : {1, 2, 5, 8}) {  // they are inverse permutations
    const auto b = chunk_ids_before_attn(P), a = chunk_ids_after_attn(P);
    for (index_t p = 0; p < 2 * P; ++p) CHECK(a[static_cast<size_t>(b[static_cast<size_t>(p)])] == p);
  }
}

TEST_CASE("modes: hierarchical groups are contiguous runs, rings strided, and the inner a2a gives outer zigzag") {
  CHECK(hcp_ring_members(4, 2, 1) == std::vector<int>{1, 5});
  CHECK(hcp_ring_members(2, 3, 0) == std::vector<int>{0, 2, 4});
  for (auto [icp, ocp] : {std::pair<index_t, index_t>{2, 2}, {2, 3}, {3, 2}, {4, 2}}) {
    const Partition data(Layout::zigzag, 2 * icp * ocp * 3, icp * ocp);
    const index_t c = 3;  // base chunk length
    for (index_t p = 0; p < ocp; ++p) {
      const A2aPlan plan = hcp_inner_plan(data, icp, ocp, p);
      CHECK(plan.members.front() == p * icp);
      CHECK(plan.members.back() == p * icp + icp - 1);
      // after the inner a2a: super-chunk p, then super-chunk 2*ocp-1-p (super-chunk = icp base chunks)
      std::vector<index_t> expect;
      for (index_t sc : {p, 2 * ocp - 1 - p})
        for (index_t t = 0; t < icp * c; ++t) expect.push_back(sc * icp * c + t);
      CHECK(plan.to[0] == expect);
    }
  }
}

TEST_CASE("modes: multi-block tiles (local length > the kernel's 256-row block) and float, for every mode") {
  for (const ModeInfo& m : mode_table())
    for (const char* dtype : {"double", "float"}) {
      CpFields f = fields(m.mode, Layout::zigzag, true, 2, Shape{4, 2}, false);
      f.seq = 2 * 2 * 150;  // 300 tokens per rank, 600 in the full sequence
      if (m.mode == Mode::a2a_p2p) f.icp = 2, f.ocp = 1;
      RunSpec s = run_of(f);
      s.dtype = dtype;
      CAPTURE(m.name);
      CAPTURE(dtype);
      const RunReport r = run_experiment(s, make_inputs(s));
      const bool f32 = std::string(dtype) == "float";
      CHECK(r.max_error() <= (f32 ? 1e-5 : 1e-10));
      if (f32) CHECK(r.max_error() > 0.0);  // it really ran in float
    }
}

TEST_CASE("modes: a THD input of one unpadded sequence is not packed and computes like the unpacked one") {
  for (const ModeInfo& m : mode_table()) {
    if (!m.packed) continue;
    CpFields f = fields(m.mode, Layout::zigzag, true, 2, Shape{2, 2}, false);
    f.seq = 40;
    const RunSpec plain = run_of(f);
    f.seq = 0;
    f.cu_seqlens = {0, 40};
    const RunSpec thd = run_of(f);
    CHECK(thd.cp.thd());
    CHECK_FALSE(thd.cp.packed());
    CHECK_FALSE(plain.cp.packed());
    CHECK(thd.cp.S() == 40);
    CHECK(thd.cp.packing().cu_seqlens_padded == plain.cp.packing().cu_seqlens_padded);
    const RunReport a = run_experiment(plain, make_inputs(plain)), b = run_experiment(thd, make_inputs(thd));
    CAPTURE(m.name);
    CHECK(a.o.data == b.o.data);
    CHECK(a.dq.data == b.dq.data);
    CHECK(*b.err_o < 1e-12);
  }
}
