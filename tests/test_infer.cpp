// test_infer.cpp: inference CP (reference/infer/): every variant, cache layout, cache length P,
// new-token count T, mask and batch shape, in double, within 1e-12 of dense attention with the
// offset P; the closed forms (infer_table.h) equal every run's trace; the planner's trace equals
// the run's event by event; the ownership rules (uneven shards, balance, round-robin decode); and
// the spec's rules.
// What it is not: the command line (tests/cli_check.py, bad_input_check.py) or the GPU path.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>

#include "core/error.h"
#include "infer/infer_plan.h"
#include "infer/infer_run.h"

using namespace cplab;

namespace {

struct Grid {
  InferMode mode;
  CacheLayout cache;
  index_t P, T;
  std::string mask;  // "causal" | "window" | "chunk" | "sinks" | "none"
  bool packed;
  index_t cp = 4;
  Layout layout = Layout::zigzag;
};

InferFields fields_of(const Grid& g) {
  InferFields f;
  f.mode = g.mode;
  f.cache_layout = g.cache;
  f.layout = g.layout;
  f.cp = g.cp;
  f.heads = 4, f.kv_heads = 2, f.head_dim = 8, f.v_head_dim = 6;  // GQA 4/2, dv != d
  f.causal = g.mask != "none";
  if (g.mask == "window") f.window = 5;
  if (g.mask == "chunk") f.chunk = 16;
  f.sinks = g.mask == "sinks";
  if (g.packed) {  // three requests, each its own P and T
    f.cached = {g.P, 7, g.P / 2};
    f.fresh = {g.T, g.T + 1, 2};
  } else {
    f.cached = {g.P};
    f.fresh = {g.T};
  }
  return f;
}

// every field but dur_us
void check_same_trace(const Trace& a, const Trace& b) {
  REQUIRE(a.events().size() == b.events().size());
  CHECK(a.meta() == b.meta());
  for (size_t i = 0; i < a.events().size(); ++i) {
    const Event &x = a.events()[i], &y = b.events()[i];
    CAPTURE(i);
    CHECK(x.kind == y.kind);
    CHECK(x.phase == y.phase);
    CHECK(x.step == y.step);
    CHECK(x.rank == y.rank);
    CHECK(x.peer == y.peer);
    CHECK(x.op == y.op);
    CHECK(x.tensor == y.tensor);
    CHECK(x.bytes == y.bytes);
    CHECK(x.section == y.section);
    CHECK(x.mask == y.mask);
    CHECK(x.rows == y.rows);
    CHECK(x.cols == y.cols);
    CHECK(x.pairs == y.pairs);
    CHECK(x.flops == y.flops);
  }
}

// the closed forms of infer_table.h against the trace: messages and bytes each rank sends, the
// step count, and FLOPs adding up to the dense attention's
void check_closed_forms(const InferSpec& s, const Trace& tr, std::int64_t e) {
  const std::vector<std::int64_t> bytes = tr.bytes_sent_per_rank(), msgs = tr.messages_sent_per_rank();
  for (index_t r = 0; r < s.N(); ++r) {
    const CommPerRank c = s.comm_per_rank(r, e);
    CAPTURE(r);
    CHECK(msgs[static_cast<size_t>(r)] == c.fwd_msgs);
    CHECK(bytes[static_cast<size_t>(r)] == c.fwd_bytes);
  }
  int last = -1;
  for (const Event& ev : tr.events()) last = std::max(last, ev.step);
  CHECK(last + 1 == s.steps());
  std::int64_t flops = 0;
  for (std::int64_t f : tr.flops_per_rank()) flops += f;
  CHECK(flops == infer_dense_flops(s));
}

// one variant over the grid: cache layout x P x T x mask x batch, in double, within 1e-12, its
// closed forms equal to its traces; prints the worst error (the table in docs/inference.md)
void exactness_grid(InferMode mode) {
  double worst = 0;
  int runs = 0;
  const InferInfo& m = infer_info(mode);
  for (CacheLayout cache : {CacheLayout::zigzag, CacheLayout::interleaved})
    for (index_t P : {0, 1, 7, 1000})
      for (index_t T : {1, 3, 8, 333})  // 1, cp - 1, 2 cp, 333 for cp = 4
        for (const char* mask : {"causal", "window", "chunk", "sinks"})
          for (bool packed : {false, true}) {
            const Grid g{m.mode, cache, P, T, mask, packed};
            CAPTURE(m.name);
            CAPTURE(to_string(cache));
            CAPTURE(P);
            CAPTURE(T);
            CAPTURE(std::string(mask));
            CAPTURE(packed);
            InferRunSpec rs{InferSpec(fields_of(g)), "double", static_cast<std::uint64_t>(P * 31 + T), false};
            const InferReport rep = run_infer(rs, make_infer_inputs(rs));
            REQUIRE(rep.err_o);
            CHECK(*rep.err_o <= 1e-12);
            CHECK(*rep.err_lse <= 1e-12);
            CHECK(rep.non_finite.empty());
            check_closed_forms(rs.spec, rep.trace, 8);
            worst = std::max(worst, rep.max_error());
            ++runs;
          }
  CHECK(runs == 2 * 4 * 4 * 4 * 2);
  std::printf("infer exactness: %-14s worst error %.3g over %d runs\n", m.name, worst, runs);
}

}  // namespace

// the grid, one test per variant (ctest runs them in parallel)
TEST_CASE("infer: p2p (pass-KV) x cache layout x P x T x mask x batch is exact in double (1e-12)") {
  exactness_grid(InferMode::pass_kv);
}
TEST_CASE("infer: pass-q x cache layout x P x T x mask x batch is exact in double (1e-12)") {
  exactness_grid(InferMode::pass_q);
}
TEST_CASE("infer: decode-pass-q x cache layout x P x T x mask x batch is exact in double (1e-12)") {
  exactness_grid(InferMode::decode_pass_q);
}
TEST_CASE("infer: decode-ag x cache layout x P x T x mask x batch is exact in double (1e-12)") {
  exactness_grid(InferMode::decode_ag);
}

TEST_CASE("infer: prefill layouts, no mask, float, cp 1 / 3 / 8, and the planner's trace equals the run's") {
  for (const InferInfo& m : infer_table())
    for (Layout lay : {Layout::zigzag, Layout::contiguous, Layout::striped})
      for (index_t cp : {1, 3, 8})
        for (const char* mask : {"none", "causal"})
          for (const char* dtype : {"double", "float"}) {
            Grid g{m.mode, CacheLayout::zigzag, 45, 13, mask, true, cp, lay};
            CAPTURE(m.name);
            CAPTURE(to_string(lay));
            CAPTURE(cp);
            CAPTURE(std::string(mask));
            CAPTURE(std::string(dtype));
            InferRunSpec rs{InferSpec(fields_of(g)), dtype, 5, false};
            const InferReport rep = run_infer(rs, make_infer_inputs(rs));
            CHECK(rep.max_error() <= (std::string(dtype) == "double" ? 1e-12 : 1e-5));
            check_closed_forms(rs.spec, rep.trace, std::string(dtype) == "double" ? 8 : 4);
            check_same_trace(rep.trace, infer_plan_trace(rs));
          }
}

TEST_CASE("infer: ownership: uneven zigzag chunks, balanced caches, round-robin decode, Q and KV together") {
  // zigzag over N = 4: 2N = 8 chunks of 10 tokens, chunk c = [floor(10c/8), floor(10(c+1)/8)) =
  // [0,1) [1,2) [2,3) [3,5) [5,6) [6,7) [7,8) [8,10): rank 0 chunks 0, 7; rank 3 chunks 3, 4
  const std::vector<index_t> want = {0, 1, 2, 3, 3, 3, 2, 1, 0, 0};
  for (index_t t = 0; t < 10; ++t) CHECK(infer_owner(Layout::zigzag, 10, 4, t) == want[static_cast<size_t>(t)]);
  CHECK(infer_owner(Layout::contiguous, 10, 4, 9) == 3);  // 4 chunks: [0,2) [2,5) [5,7) [7,10)
  CHECK(infer_owner(Layout::contiguous, 10, 4, 4) == 1);
  CHECK(infer_owner(Layout::striped, 10, 4, 6) == 2);
  InferFields f;
  f.cp = 8;
  f.cached = {1001, 77};
  f.fresh = {333, 5};
  for (CacheLayout cache : {CacheLayout::zigzag, CacheLayout::interleaved}) {
    f.cache_layout = cache;
    f.mode = InferMode::pass_q;
    const InferSpec s(f);
    index_t lo = s.KV(), hi = 0, seen = 0;
    for (index_t r = 0; r < 8; ++r) {
      const index_t c = static_cast<index_t>(s.cache_rows(r).size());
      lo = std::min(lo, c), hi = std::max(hi, c), seen += static_cast<index_t>(s.kv_rows(r).size());
      CHECK(std::is_sorted(s.kv_rows(r).begin(), s.kv_rows(r).end()));
      for (index_t i = 0; i < static_cast<index_t>(s.q_rows(r).size()); ++i) {
        CHECK(s.kv_row_of_query(s.q_rows(r)[static_cast<size_t>(i)]) == s.q_kv_rows(r)[static_cast<size_t>(i)]);
        CHECK(std::binary_search(s.kv_rows(r).begin(), s.kv_rows(r).end(), s.q_kv_rows(r)[static_cast<size_t>(i)]));
      }
    }
    CHECK(seen == s.KV());
    CHECK(hi - lo <= 2);  // every request split on its own: at most one token more per request
  }
  f.mode = InferMode::decode_ag;  // decode: new token at position p on rank p mod N
  f.cached = {13, 8};
  f.fresh = {1, 3};
  const InferSpec d(f);
  CHECK(d.q_kv_rows(13 % 8) == std::vector<index_t>{13});
  CHECK(d.q_kv_rows(0) == std::vector<index_t>{14 + 8});  // request 1: koff 14, position 8
  CHECK(d.q_kv_rows(1) == std::vector<index_t>{14 + 9});
  CHECK(d.Mq() == 1);
}

TEST_CASE("infer: the spec's rules name what they break") {
  auto msg = [](InferFields f) -> std::string {
    try {
      InferSpec s(f);
    } catch (const Error& e) {
      return e.what();
    }
    return "";
  };
  InferFields f;
  f.cached = {-1};
  f.fresh = {4};
  CHECK(msg(f).find("--kv-cache -1 must be >= 0") != std::string::npos);
  f.cached = {4};
  f.fresh = {0};
  CHECK(msg(f).find("needs >= 1") != std::string::npos);
  f.fresh = {4, 4};
  CHECK(msg(f).find("same requests") != std::string::npos);
  f.fresh = {4};
  f.chunk = 4;
  f.window = 4;
  CHECK(msg(f).find("cannot both be given") != std::string::npos);
  f.chunk.reset();
  f.window.reset();
  f.cached = {index_t{1} << 40};  // refused before any row list is built
  CHECK(msg(f).find("the most one inference step takes") != std::string::npos);
  CHECK_THROWS_AS(parse_kv_cache("1,2", 3), Error);
  CHECK(parse_kv_cache("5", 3) == std::vector<index_t>{5, 5, 5});
  CHECK_THROWS_AS(parse_infer_mode("allgather"), Error);
  CHECK(parse_infer_mode("pass-q") == InferMode::pass_q);
  CHECK_THROWS_AS(parse_cache_layout("striped"), Error);
}

TEST_CASE("infer: docs/modes.md's inference table is the table's own") {
  std::ifstream f(CPLAB_SOURCE_DIR "/docs/modes.md");
  REQUIRE(f);
  std::stringstream ss;
  ss << f.rdbuf();
  const std::string table = infer_comm_table_markdown();
  INFO("docs/modes.md's inference table must read, line for line:\n" << table);
  CHECK(ss.str().find(table) != std::string::npos);
}
