// test_check_infer.cpp: `cplab check --kv-cache`'s library (reference/check/infer_check.h) names
// every inference fault of issue 37 item 5, injected alone, first.
//
// What it is: for inference steps of every variant (p2p = pass-KV, pass-q, decode-pass-q, decode-ag),
// both cache layouts, GQA, packed requests, windows, chunks and sinks, the variant's own outputs
// (run_infer) are checked unfaulted (the verdict must be "equivalent"), then each fault made by
// tests/check_faults_infer.h's scalar loops from its definition is checked alone: the diagnosis must
// name that fault first. The table of cases and diagnoses is printed (MESSAGE). Also: the files'
// rules (load_infer_check_data) on a folder of .npy files.
// What it is not: the command line (tests/infer_cli_check.py runs `cplab check --kv-cache`).
#include <doctest/doctest.h>
#include <unistd.h>

#include <filesystem>
#include <sstream>

#include "check/infer_check.h"
#include "check_faults_infer.h"
#include "core/error.h"
#include "infer/infer_run.h"
#include "run/npy.h"

namespace cplab::test {

namespace {

struct InferConfig {
  std::string name;
  InferFields f;
};

InferFields step(InferMode mode, CacheLayout cl, index_t N, std::vector<index_t> P, std::vector<index_t> T) {
  InferFields f;
  f.mode = mode, f.cache_layout = cl, f.cp = N, f.cached = std::move(P), f.fresh = std::move(T);
  f.heads = 4, f.kv_heads = 2, f.head_dim = 8, f.causal = true;
  return f;
}

std::vector<InferConfig> configs() {
  InferFields windowed = step(InferMode::pass_kv, CacheLayout::zigzag, 3, {25}, {7});
  windowed.window = 9;
  InferFields sinks = step(InferMode::decode_pass_q, CacheLayout::interleaved, 4, {30}, {3});
  sinks.sinks = true;
  InferFields chunked = step(InferMode::pass_q, CacheLayout::zigzag, 2, {16, 9}, {5, 4});
  chunked.chunk = 8;
  InferFields striped = step(InferMode::pass_q, CacheLayout::interleaved, 3, {20}, {11});
  striped.layout = Layout::striped;
  return {
      {"pass-q zigzag cache cp 4 P 40 T 12", step(InferMode::pass_q, CacheLayout::zigzag, 4, {40}, {12})},
      {"decode-ag interleaved cp 4 P 37,20 T 1,2",
       step(InferMode::decode_ag, CacheLayout::interleaved, 4, {37, 20}, {1, 2})},
      {"p2p (pass-KV) zigzag cp 3 P 25 T 7 window 9", windowed},
      {"decode-pass-q interleaved cp 4 P 30 T 3 sinks", sinks},
      {"pass-q zigzag cp 2 P 16,9 T 5,4 chunk 8", chunked},
      {"pass-q striped, interleaved cache cp 3 P 20 T 11", striped},
      {"p2p (pass-KV) interleaved cp 4 P 13,6 T 9,5",
       step(InferMode::pass_kv, CacheLayout::interleaved, 4, {13, 6}, {9, 5})},
  };
}

InferCheckData data_of(const InferInputs& in, const Tensor3<double>& o, const Rows<double>& lse) {
  InferCheckData d;
  d.in = in;
  d.inputs_dir = "(memory)", d.outputs_dir = "(memory)";
  ClaimedTensor& co = d.out[idx(CheckTensor::o)];
  co.present = true, co.source = "o", co.x = o;
  ClaimedTensor& cl = d.out[idx(CheckTensor::lse)];
  cl.present = true, cl.source = "lse", cl.x = lse_tensor(lse);
  return d;
}

double max_diff(const NaiveOut& a, const NaiveOut& b) {
  double m = 0;
  for (size_t e = 0; e < a.o.data.size(); ++e) m = std::max(m, std::abs(a.o.data[e] - b.o.data[e]));
  for (index_t i = 0; i < a.lse.rows(); ++i)
    for (index_t t = 0; t < a.lse.cols(); ++t) {
      const double x = a.lse(i, t), y = b.lse(i, t);
      if (std::isfinite(x) && std::isfinite(y))
        m = std::max(m, std::abs(x - y));
      else if (x != y)
        m = INFINITY;
    }
  return m;
}

struct Fault {
  std::string id;  // the hypothesis that must come first
  NaiveOut out;
};

}  // namespace

TEST_CASE("cplab check --kv-cache names every inference fault, injected alone, first") {
  std::ostringstream table;
  table << "\n| step | fault injected | verdict |\n|---|---|---|\n";
  int named = 0;
  for (const InferConfig& cfg : configs()) {
    CAPTURE(cfg.name);
    const InferSpec s(cfg.f);
    InferRunSpec rs{s, "double", 7, false};
    const InferInputs in = make_infer_inputs(rs);
    // the variant's own outputs: equivalent
    const InferReport run = run_infer(rs, in);
    const CheckReport ok = run_infer_check(s, data_of(in, run.o, run.lse));
    CHECK(ok.verdict == "equivalent");
    table << "| " << cfg.name << " | none (run_infer's outputs) | " << ok.verdict << " |\n";

    const NaiveOut right = naive_infer(s, in.q, in.k, in.v, all_keys(s), naive_positions(s, 0, false), in.sinks);
    std::vector<Fault> faults;
    faults.push_back(
        {"positions_from_zero", naive_infer(s, in.q, in.k, in.v, all_keys(s), naive_positions(s, 0, true), in.sinks)});
    faults.push_back({"positions_minus_one",
                      naive_infer(s, in.q, in.k, in.v, all_keys(s), naive_positions(s, -1, false), in.sinks)});
    faults.push_back(
        {"positions_plus_one", naive_infer(s, in.q, in.k, in.v, all_keys(s), naive_positions(s, 1, false), in.sinks)});
    faults.push_back({"partials_sum", naive_partials_summed(s, in.q, in.k, in.v, in.sinks, false)});
    faults.push_back({"partials_mean", naive_partials_summed(s, in.q, in.k, in.v, in.sinks, true)});
    for (index_t r = 0; r < s.N(); ++r) {
      std::set<index_t> keys = all_keys(s);
      for (index_t j : s.cache_rows(r)) keys.erase(j);
      faults.push_back({"cache_shard_missing_" + std::to_string(r),
                        naive_infer(s, in.q, in.k, in.v, keys, naive_positions(s, 0, false), in.sinks)});
    }
    std::set<index_t> cache;
    for (index_t b = 0; b < s.B(); ++b)
      for (index_t p = 0; p < s.fields().cached[size_t(b)]; ++p) cache.insert(s.koff()[size_t(b)] + p);
    faults.push_back(
        {"new_kv_not_appended", naive_infer(s, in.q, in.k, in.v, cache, naive_positions(s, 0, false), in.sinks)});
    if (s.mode() != InferMode::pass_kv)
      for (index_t sh = 1; sh < s.N(); ++sh)
        faults.push_back({"wrong_owner_" + std::to_string(sh), naive_wrong_owner(s, right, sh)});

    for (const Fault& ft : faults) {
      CAPTURE(ft.id);
      if (max_diff(ft.out, right) < 1e-8) continue;  // the fault changes nothing here: nothing to name
      const CheckReport rep = run_infer_check(s, data_of(in, ft.out.o, ft.out.lse));
      REQUIRE(!rep.hypotheses.empty());
      CHECK(rep.hypotheses.front().id == ft.id);
      CHECK(rep.hypotheses.front().level == 0);
      CHECK(rep.verdict == "NOT equivalent: " + rep.hypotheses.front().name);
      named += rep.hypotheses.front().id == ft.id ? 1 : 0;
      table << "| " << cfg.name << " | " << ft.id << " | " << rep.verdict << " |\n";
    }
  }
  CHECK(named >= 60);  // every config has most faults visible (the table lists them)
  MESSAGE(table.str());
}

TEST_CASE("cplab check --kv-cache: the files' rules name the file and the expected shapes") {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("cplab_test_check_infer_" + std::to_string(::getpid()));
  fs::create_directories(dir / "in");
  fs::create_directories(dir / "out");
  const InferSpec s(step(InferMode::pass_q, CacheLayout::zigzag, 2, {10}, {4}));
  InferRunSpec rs{s, "double", 1, false};
  const InferInputs in = make_infer_inputs(rs);
  auto save = [](const fs::path& p, const Tensor3<double>& x) {
    npy_write(p.string(), {x.n, x.h, x.d}, x.data.data());
  };
  save(dir / "in" / "q.npy", in.q);
  save(dir / "in" / "k.npy", in.k);
  save(dir / "in" / "v.npy", in.v);
  const InferReport run = run_infer(rs, in);
  save(dir / "out" / "o.npy", run.o);
  npy_write((dir / "out" / "lse.npy").string(), {run.lse.rows(), run.lse.cols()}, run.lse.data());
  const InferCheckData d = load_infer_check_data(s, (dir / "in").string(), (dir / "out").string());
  CHECK(run_infer_check(s, d).verdict == "equivalent");
  // k.npy of the new tokens only: the shapes named
  save(dir / "in" / "k.npy", Tensor3<double>(4, 2, 8));
  CHECK_THROWS_WITH_AS(load_infer_check_data(s, (dir / "in").string(), (dir / "out").string()),
                       doctest::Contains("(P+T, kv-heads, head-dim)"), Error);
  save(dir / "in" / "k.npy", in.k);
  save(dir / "in" / "do.npy", in.q);
  CHECK_THROWS_WITH_AS(load_infer_check_data(s, (dir / "in").string(), (dir / "out").string()),
                       doctest::Contains("has no backward"), Error);
  std::error_code ec;
  fs::remove_all(dir, ec);
}

}  // namespace cplab::test
