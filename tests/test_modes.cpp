// test_modes.cpp: every CP mode x layout x mask x cp x MHA/GQA x packed/unpacked, forward and
// backward, against the dense oracle in double (<= 1e-10); padding exactly zero; FLOPs complete;
// messages and bytes per rank, per phase, equal the closed forms of the README's table.
#include <doctest/doctest.h>

#include "error.h"
#include "experiment.h"
#include "run_checks.h"
#include "cp_attention.h"
#include "hierarchical_cp.h"
#include "ulysses_a2a.h"

using namespace cplab;

namespace {

struct Shape {
  index_t h, hk;
};

RunSpec base(const std::string& mode, Layout L, bool causal, index_t P, Shape sh, bool packed) {
  RunSpec s;
  s.mode = mode;
  s.layout = L;
  s.causal = causal;
  s.cp = P;
  s.heads = sh.h;
  s.kv_heads = sh.hk;
  s.head_dim = 8;
  s.v_head_dim = 6;
  s.backward = true;
  s.seed = static_cast<std::uint64_t>(P * 1000 + sh.h * 10 + sh.hk + (causal ? 7 : 0));
  if (packed) {
    s.cu_seqlens = {0, 7, 20, 21, 40};  // lengths 7, 13, 1, 19: padded to the layout's factor
    s.pad = true;
    s.seq = s.packing().total();
  } else {
    s.seq = 2 * P * 5;
  }
  return s;
}

// bytes per rank = bytes of `elems_per_rank` elements (8-byte doubles)
std::int64_t B(std::int64_t elems) { return elems * 8; }

// The closed forms (README, "Communication per rank"), per phase: {messages, bytes}
struct Comm {
  std::int64_t fwd_msgs, fwd_bytes, bwd_msgs, bwd_bytes;
};
Comm closed_form(const RunSpec& s) {
  const std::int64_t P = s.cp, n = s.seq / P, h = s.heads, hk = s.kv_heads * s.kv_replication(), d = s.head_dim,
                     dv = s.dv();
  const std::int64_t kv = n * hk * (d + dv);  // one rank's K and V
  if (s.mode == "p2p") return {P - 1, B((P - 1) * kv), P > 1 ? P : 0, B(2 * (P - 1) * kv)};
  if (s.mode == "allgather") return {P - 1, B((P - 1) * kv), 2 * (P - 1), B(2 * (P - 1) * kv)};
  // an all-to-all over G ranks sends (G-1)/G of each rank's tensor: (G-1) * n * (heads/G) * dim
  auto a2a = [&](std::int64_t G, std::int64_t heads, std::int64_t dim) { return (G - 1) * n * (heads / G) * dim; };
  if (s.mode == "a2a") {
    const std::int64_t f = a2a(P, h, d) + a2a(P, hk, d) + a2a(P, hk, dv) + a2a(P, h, dv);  // q k v | o
    const std::int64_t b = a2a(P, h, dv) + a2a(P, h, d) + a2a(P, hk, d) + a2a(P, hk, dv);  // do | dq dk dv
    return {4 * (P - 1), B(f), 4 * (P - 1), B(b)};
  }
  const std::int64_t I = s.icp, O = s.ocp;  // a2a+p2p: inner a2a over I ranks, rings of O ranks
  const std::int64_t inner = a2a(I, h, d) + a2a(I, hk, d) + a2a(I, hk, dv) + a2a(I, h, dv);
  return {4 * (I - 1) + (O - 1), B(inner + (O - 1) * kv), 4 * (I - 1) + (O > 1 ? O : 0), B(inner + 2 * (O - 1) * kv)};
}

void check_run(const RunSpec& s) {
  CAPTURE(s.mode);
  CAPTURE(to_string(s.layout));
  CAPTURE(s.causal);
  CAPTURE(s.cp);
  CAPTURE(s.icp);
  CAPTURE(s.heads);
  CAPTURE(s.kv_heads);
  CAPTURE(s.packed());
  const RunReport r = run_experiment(s, make_inputs(s));
  REQUIRE(r.err_dq);  // a backward run
  check_exact_run(r);
  CHECK(r.padding_max_abs == 0.0);
  const Comm c = closed_form(s);
  const Phase fw = Phase::fwd, bw = Phase::bwd;
  for (index_t k = 0; k < s.cp; ++k) {
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
        for (Shape sh : {Shape{4, 4}, Shape{4, 2}}) check_run(base("p2p", L, causal, P, sh, true));
}

TEST_CASE("modes: all-gather KV, packed and unpacked, every layout, mask, cp, MHA/GQA") {
  for (Layout L : kLayouts)
    for (bool causal : {false, true})
      for (index_t P : {1, 2, 3, 4, 8})
        for (Shape sh : {Shape{4, 4}, Shape{4, 2}})
          for (bool packed : {false, true}) check_run(base("allgather", L, causal, P, sh, packed));
}

TEST_CASE("modes: Ulysses a2a, packed and unpacked, every layout, mask, cp (odd too), MHA/GQA, KV replication") {
  for (Layout L : kLayouts)
    for (bool causal : {false, true})
      for (index_t P : {1, 2, 3, 4, 8})
        for (Shape sh : {Shape{2 * P, 2 * P}, Shape{2 * P, P}})
          for (bool packed : {false, true}) check_run(base("a2a", L, causal, P, sh, packed));
  RunSpec s = base("a2a", Layout::zigzag, true, 4, Shape{8, 2}, false);  // 2 KV heads, cp 4: replicate x2
  s.replicate_kv = true;
  CHECK(s.kv_replication() == 2);
  check_run(s);
}

TEST_CASE("modes: hierarchical a2a+p2p for every factorisation of cp, mask, MHA/GQA") {
  const std::pair<index_t, index_t> hcps[] = {{1, 1}, {2, 1}, {1, 2}, {2, 2}, {4, 1}, {1, 4}, {3, 2}, {2, 3}, {4, 2}, {2, 4}};
  for (auto [icp, ocp] : hcps)
    for (bool causal : {false, true})
      for (Shape sh : {Shape{2 * icp, 2 * icp}, Shape{2 * icp, icp}}) {
        RunSpec s = base("a2a+p2p", Layout::zigzag, causal, icp * ocp, sh, false);
        s.icp = icp;
        s.ocp = ocp;
        check_run(s);
      }
  RunSpec s = base("a2a+p2p", Layout::zigzag, true, 8, Shape{8, 2}, false);  // icp 4 > 2 KV heads
  s.icp = 4;
  s.ocp = 2;
  s.replicate_kv = true;
  check_run(s);
}

TEST_CASE("modes: the mode rules are refused with their messages") {
  RunSpec s = base("a2a", Layout::zigzag, true, 4, Shape{6, 6}, false);
  CHECK_THROWS_WITH_AS(validate(s), "heads 6 is not divisible by cp = 4 (the all-to-all gives every rank heads/cp heads)", Error);
  s = base("a2a+p2p", Layout::zigzag, true, 8, Shape{8, 8}, false);
  s.icp = 3;
  s.ocp = 2;
  CHECK_THROWS_WITH_AS(validate(s), "--hcp 3,2 multiplies to 6, not cp = 8 (ICP x OCP must equal cp)", Error);
  s.icp = s.ocp = 0;
  CHECK_THROWS_WITH_AS(validate(s), doctest::Contains("a2a+p2p needs --hcp ICP,OCP"), Error);
  s = base("a2a+p2p", Layout::striped, true, 4, Shape{4, 4}, false);
  s.icp = s.ocp = 2;
  CHECK_THROWS_WITH_AS(validate(s), "a2a+p2p needs --layout zigzag (the data is zigzag over all cp ranks; the outer ring keeps zigzag over OCP)", Error);
  s = base("p2p", Layout::zigzag, true, 3, Shape{4, 4}, true);
  s.pad = false;
  s.seq = 40;
  CHECK_THROWS_WITH_AS(validate(s), "sequence 0 has length 7, not a multiple of 2*cp = 6 (zigzag splits every sequence into 2*cp equal chunks); pass --pad to pad each sequence to a multiple of 6", Error);
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
  for (const char* mode : {"p2p", "allgather", "a2a", "a2a+p2p"})
    for (const char* dtype : {"double", "float"}) {
      RunSpec s = base(mode, Layout::zigzag, true, 2, Shape{4, 2}, false);
      s.seq = 2 * 2 * 150;  // 300 tokens per rank, 600 in the full sequence
      s.dtype = dtype;
      if (std::string(mode) == "a2a+p2p") s.icp = 2, s.ocp = 1;
      CAPTURE(mode);
      CAPTURE(dtype);
      const RunReport r = run_experiment(s, make_inputs(s));
      const bool f32 = std::string(dtype) == "float";
      CHECK(r.max_error() <= (f32 ? 1e-5 : 1e-10));
      if (f32) CHECK(r.max_error() > 0.0);  // it really ran in float
    }
}

TEST_CASE("modes: a CpConfig without a packing means one unpacked sequence, in every mode") {
  const Partition part(Layout::zigzag, 40, 2);
  const CpConfig<double> cfg{part};  // no packing given
  CHECK_FALSE(cfg.packed());
  CHECK(cfg.tokens().total() == 40);
  RunSpec s = base("allgather", Layout::zigzag, true, 2, Shape{2, 2}, false);
  s.seq = 40;
  const Inputs in = make_inputs(s);
  const PerRank<double> q = shard(part, in.q), k = shard(part, in.k), v = shard(part, in.v);
  for (const ModeSpec& m : {ModeSpec{"p2p"}, ModeSpec{"allgather"}, ModeSpec{"a2a"}, ModeSpec{"a2a+p2p", 2, 1}}) {
    SimComm comm(2, nullptr);
    CpState<double> st;
    CpConfig<double> c = cfg;
    c.scale = default_scale(s.head_dim);
    const CpOutput<double> out = cp_attention_forward(m, c, q, k, v, comm, st);
    const Tensor3<double> o = unshard(part, out.o);
    const AttnOut<double> r2 = dense_forward(in.q, in.k, in.v, Mask::causal(), c.scale);
    double err = 0;
    for (size_t i = 0; i < o.data.size(); ++i) err = std::max(err, std::abs(o.data[i] - r2.o.data[i]));
    CAPTURE(m.mode);
    CHECK(err < 1e-12);
  }
}
