// test_check.cpp: `cplab check`'s library (reference/check/) names every fault it knows.
//
// What it is: for CP runs of every mode (p2p zigzag / contiguous / striped, all-gather, a2a), GQA
// (8 heads over 2 KV heads) and packed sequences (cu_seqlens with padding), the run's own outputs are
// checked unfaulted (the verdict must be "equivalent") and then with each fault of
// tests/check_faults.h injected alone: the diagnosis must name that fault first. The table of cases
// and diagnoses is printed (MESSAGE). Also: per-rank shards read from files and placed by the
// layout, the rules of the files, the error map's cells and the tolerance levels.
// What it is not: the command line (tests/check_cli.py runs `cplab check` end to end).
#include <doctest/doctest.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <sstream>

#include "check/check.h"
#include "check_claimed.h"
#include "check_configs.h"
#include "check_faults.h"
#include "check_table.h"
#include "core/rel_error.h"
#include "core/util.h"
#include "run/npy.h"

namespace cplab::test {

namespace {

struct Fault {
  std::string name;
  std::function<Outs()> make;
  std::string expect_id;     // the first hypothesis's id ("" : the verdict must be "equivalent")
  NpyDtype dtype = NpyDtype::f8;
  std::string expect_level;  // "" : explained at the outputs' own tolerance
  Fault(std::string n, std::function<Outs()> m, std::string id, NpyDtype t = NpyDtype::f8, std::string level = "")
      : name(std::move(n)), make(std::move(m)), expect_id(std::move(id)), dtype(t), expect_level(std::move(level)) {}
};

}  // namespace

TEST_CASE("check: every injected fault is named first, and correct outputs are equivalent") {
  FaultTable table("injected fault");
  for (const Config& cfg : configs()) {
    const Run correct = correct_run(cfg.f);
    const CpSpec& s = correct.spec;
    const Inputs& in = correct.in;
    const Outs& base = correct.out;
    const index_t P = s.P();
    const Layout held = s.layout() == Layout::contiguous ? Layout::striped : s.layout();
    std::vector<Fault> faults = {
        {"none", [&] { return base; }, ""},
        {"rank buffers concatenated (" + to_string(held) + ")", [&] { return layout_order(s, base, held, Layout::contiguous); },
         "layout_order:" + to_string(held) + "_placed_as_contiguous"},
        {"KV head i % kv_heads", [&] { return rule_outputs(s, in, NaiveRule{s.scale(), 0, true}, true); }, "kv_head_mod"},
        {"dK, dV swapped", [&] { return dkv_mix(s, base, 0, 1, 0, 1, 0, 0); }, "dkv:swapped"},
        {"ring package dK/dV mix-up", [&] { return dkv_mix(s, base, 1, 1, 0, 1, 1, 1); }, "dkv:ring_mixup"},
        {"dK = dK + dV", [&] { return dkv_mix(s, base, 1, 1, 0, 0, 1, 0); }, "dkv:dk_sum"},
        {"dK, dV both dK + dV", [&] { return dkv_mix(s, base, 1, 1, 0, 1, 1, 0); }, "dkv:both_sum"},
        {"dK, dV of rank r+1", [&] { return dkv_mix(s, base, 1, 0, 1, 0, 1, 1); }, "dkv:shift_next"},
        {"dK, dV own queries only", [&] { return own_queries(s, in, base); }, "dkv_no_reduction"},
        {"softmax scale 1/d", [&] { return rule_outputs(s, in, NaiveRule{1.0 / static_cast<double>(s.d()), 0, false}, true); },
         "scale:" + approx4(1.0 / static_cast<double>(s.d()))},
        {"LSE in base 2",
         [&] {
           Outs o = base;
           for (double& x : o[1].data) x /= std::log(2.0);
           return o;
         },
         "lse_base2"},
        {"LSE without the max", [&] { return lse_without_max(s, in, base); }, "lse_without_max"},
        {"float32 results saved as float64", [&] { return rounded(base, DType::f32, {true, true, true, true, true}); }, "none",
         NpyDtype::f8, "float32"},
        {"bf16 O, dQ, dK, dV saved as float32",
         [&] { return rounded(rounded(base, DType::bf16, {true, false, true, true, true}), DType::f32, {false, true, false, false, false}); },
         "none", NpyDtype::f4, "bfloat16"},
    };
    if (s.causal()) {
      faults.push_back({"causal k <= q + 1", [&] { return rule_outputs(s, in, NaiveRule{s.scale(), 1, false}, true); }, "causal_plus_one"});
      faults.push_back({"causal k < q", [&] { return rule_outputs(s, in, NaiveRule{s.scale(), -1, false}, true); }, "causal_minus_one"});
    }
    if (s.rule().window > 1) {
      faults.push_back({"window W + 1", [&] { return rule_outputs(s, in, NaiveRule{s.scale(), 0, false, 1}, true); }, "window_plus_one"});
      faults.push_back({"window W - 1", [&] { return rule_outputs(s, in, NaiveRule{s.scale(), 0, false, -1}, true); }, "window_minus_one"});
    }
    if (s.mode() == Mode::p2p) {
      const index_t last = last_visible_step(s);  // a step with no visible pair changes nothing when dropped
      faults.push_back({"ring step " + num(last) + " missing", [&, last] { return ring_step(s, in, base, last, 0); },
                        "ring_step_missing:" + num(last)});
      faults.push_back({"ring step 1 doubled", [&] { return ring_step(s, in, base, 1, 2); }, "ring_step_doubled:1"});
    }
    if (s.sinks()) {
      faults.push_back({"sinks ignored", [&] { return sinks_counted(s, in, [](index_t) { return 0.0; }); }, "sinks_ignored"});
      faults.push_back({"sink on every rank (cp times)", [&] { return sinks_counted(s, in, [&](index_t) { return static_cast<double>(P); }); },
                        "sink_per_rank"});
      if (s.mode() == Mode::p2p)
        faults.push_back({"sink on every ring partial", [&] { return sink_per_partial(s, in); }, "sink_per_partial"});
    }
    if (s.packing().has_padding()) faults.push_back({"padding not zero", [&] { return padding_garbage(s, base); }, "padding_not_zero"});

    for (const Fault& fault : faults) {
      CAPTURE(cfg.name);
      CAPTURE(fault.name);
      const CheckReport r = run_check(s, claimed(in, fault.make(), fault.dtype));
      const HypothesisResult& best = r.hypotheses.front();
      table.row(cfg.name, fault.name, r, fault.expect_id,
                fault.expect_level.empty() ? best.level == 0 : best.level >= 0 && r.levels[sz(best.level)].name == fault.expect_level);
    }
  }
  table.finish();
}

TEST_CASE("check: d s_h (dsinks) is compared, and a wrong one is named: its sign, cp times, one rank's rows") {
  RunSpec rs;
  rs.cp = CpSpec(with_sinks(fields(Mode::p2p, Layout::zigzag, 4, 64, true)));
  rs.backward = true;
  rs.seed = 5;
  const CpSpec& s = rs.cp;
  const Inputs in = make_inputs(rs);
  const RunReport run = run_experiment(rs, in);  // the CP run's own d s_h
  REQUIRE(run.dsinks.size() == 8);
  const Outs base{run.o, lse_tensor(run.lse), run.dq, run.dk, run.dv};
  auto verdict = [&](std::vector<double> ds) {
    CheckData d = claimed(in, base, NpyDtype::f8);
    d.dsinks.present = true, d.dsinks.x = std::move(ds), d.dsinks.source = "(test)";
    const CheckReport r = run_check(s, d);
    CHECK(r.dsinks.present);
    return r.verdict;
  };
  CHECK(verdict(run.dsinks) == "equivalent");
  std::vector<double> neg = run.dsinks, big = run.dsinks, rank2(8, 0.0);
  for (double& x : neg) x = -x;
  for (double& x : big) x *= 1.5;
  // rank 2's rows only, written out: -sum over its rows exp(s_h - LSE) (dO . O)
  for (index_t g : s.partition().indices(2))
    for (index_t i = 0; i < 8; ++i) {
      double dot = 0;
      for (index_t e = 0; e < s.dv(); ++e) dot += in.dout.at(g, i, e) * run.o.at(g, i, e);
      rank2[sz(i)] -= std::exp(in.sinks[sz(i)] - run.lse(i, g)) * dot;
    }
  CHECK(verdict(neg) == "NOT equivalent: d s_h with the wrong sign (+sum exp(s_h - LSE) (dO . O) instead of -)");
  CHECK(verdict(rank2) == "NOT equivalent: d s_h of rank 2's rows only (the ranks' parts were never added up)");
  CHECK(verdict(big) == "NOT equivalent: d s_h ((test)) wrong, and no known fault explains it");
  // without dsinks: O ... dV alone decide
  CHECK(run_check(s, claimed(in, base, NpyDtype::f8)).verdict == "equivalent");
}

TEST_CASE("check: the error map's cells are rel_error cut per rank, chunk and head, and chunks follow the layout") {
  RunSpec rs;
  rs.cp = CpSpec(fields(Mode::p2p, Layout::zigzag, 4, 64, true));
  rs.backward = true;
  const Inputs in = make_inputs(rs);
  const RunReport run = run_experiment(rs, in);
  Outs outs{run.o, lse_tensor(run.lse), run.dq, run.dk, run.dv};
  outs[3].at(5, 1, 2) += 0.5;  // one element of dK, token 5 (rank 0, chunk 0), KV head 1
  const CheckReport r = run_check(rs.cp, claimed(in, outs, NpyDtype::f8));
  CHECK(r.chunks.per_rank == 2);
  CHECK(r.chunks.label(1, 0, 4) == "chunk 1");
  CHECK(r.chunks.label(1, 1, 4) == "chunk 6");
  CHECK(r.map.heads[idx(CheckTensor::dk)] == 2);
  const DenseReference ref = dense_reference(rs, in.q, in.k, in.v, in.dout);
  CHECK(r.map.max(CheckTensor::dk) == doctest::Approx(rel_error(outs[3], ref.dk)).epsilon(1e-12));
  CHECK(r.map.at(CheckTensor::dk, 0, 0, 1) > 1e-3);
  for (index_t rk = 0; rk < 4; ++rk)
    for (index_t c = 0; c < 2; ++c)
      for (index_t i = 0; i < 2; ++i)
        if (rk != 0 || c != 0 || i != 1) CHECK(r.map.at(CheckTensor::dk, rk, c, i) < 1e-12);
  REQUIRE(r.where.size() == 1);
  CHECK(r.where[0].rfind("dK: 1 of 16 cells above 1.0e-10: ranks 0, first chunk only (global chunk r), heads 1; worst", 0) == 0);
  CHECK(r.verdict == "NOT equivalent: no known fault explains it");
  // levels: float64 outputs get float32's and bfloat16's after their own; float32 ones only bfloat16's
  std::array<ClaimedTensor, kCheckTensors> f4{};
  for (ClaimedTensor& c : f4) c.present = true, c.dtype = NpyDtype::f4;
  const std::vector<CheckLevel> l4 = check_levels(f4, std::nullopt);
  REQUIRE(l4.size() == 2);
  CHECK(l4[0].tol[idx(CheckTensor::o)] == 1e-5);
  CHECK(l4[0].tol[idx(CheckTensor::dk)] == 1e-4);
  CHECK(l4[1].name == "bfloat16");
  CHECK(l4[1].tol[idx(CheckTensor::lse)] == 1e-4);
  CHECK(dtype_tolerance(CheckTensor::lse, NpyDtype::bf16) == 2e-2);  // an LSE saved in bfloat16
  CHECK(check_levels(f4, 1e-3)[0].tol[idx(CheckTensor::lse)] == 1e-3);
}

TEST_CASE("check: per-rank shards are placed by the layout, and the files' rules name the file") {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("cplab_test_check_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir / "in");
  RunSpec rs;
  rs.cp = CpSpec(fields(Mode::allgather, Layout::striped, 4, 32, true));
  rs.backward = true;
  const CpSpec& s = rs.cp;
  const Inputs in = make_inputs(rs);
  const RunReport run = run_experiment(rs, in);
  auto save = [](const fs::path& p, const Tensor3<double>& x) { npy_write(p.string(), {x.n, x.h, x.d}, x.data.data()); };
  save(dir / "in/q.npy", in.q), save(dir / "in/k.npy", in.k), save(dir / "in/v.npy", in.v), save(dir / "in/do.npy", in.dout);
  const Outs outs{run.o, lse_tensor(run.lse), run.dq, run.dk, run.dv};
  for (index_t r = 0; r < 4; ++r) {
    const fs::path rd = dir / "out" / ("rank" + num(r));
    fs::create_directories(rd);
    const std::vector<index_t> pos = s.partition().indices(r);
    for (int t = 0; t < kCheckTensors; ++t) {
      const Tensor3<double> x = gather_tokens(outs[sz(t)], pos);
      if (t == 1) {  // LSE shard: (heads, local tokens)
        std::vector<double> v(sz(x.h * x.n));
        for (index_t i = 0; i < x.h; ++i)
          for (index_t l = 0; l < x.n; ++l) v[sz(i * x.n + l)] = x.at(l, i, 0);
        npy_write((rd / "lse.npy").string(), {x.h, x.n}, v.data());
      } else {
        save(rd / (std::string(tensor_key(static_cast<CheckTensor>(t))) + ".npy"), x);
      }
    }
  }
  const CheckData data = load_check_data(s, (dir / "in").string(), (dir / "out").string());
  CHECK(data.out[idx(CheckTensor::dk)].source == (dir / "out" / "rank{0..3}" / "dk.npy").string());
  CHECK(run_check(s, data).verdict == "equivalent");
  auto error = [&] {
    try {
      load_check_data(s, (dir / "in").string(), (dir / "out").string());
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  fs::remove(dir / "out/rank2/dv.npy");
  CHECK(error() == (dir / "out/rank2/dv.npy").string() + " is missing: per-rank shards need one file per rank 0-3 (cp 4)");
  save(dir / "out/rank2/dv.npy", Tensor3<double>(8, 2, 15));
  CHECK(error() == (dir / "out/rank2/dv.npy").string() + ": has shape (8, 2, 15) but the spec needs (8, 2, 16) = (seq / cp, kv-heads, v-head-dim)");
  save(dir / "out/rank2/dv.npy", gather_tokens(outs[4], s.partition().indices(2)));
  save(dir / "out/o.npy", outs[0]);
  CHECK(error() == (dir / "out/o.npy").string() + " and " + (dir / "out/rank0/o.npy").string() +
                       " both exist: give O either in global order or as per-rank shards, not both");
  fs::remove(dir / "out/o.npy");
  fs::remove(dir / "in/do.npy");
  CHECK(error() == (dir / "in/do.npy").string() + " is missing: the gradients in " + (dir / "out").string() +
                       " can only be checked with the dO they were computed from");
  Tensor3<double> q = in.q;
  q.at(3, 1, 0) = NAN;
  save(dir / "in/q.npy", q);
  save(dir / "in/do.npy", in.dout);
  CHECK(error() == (dir / "in/q.npy").string() + ": element [3, 1, 0] is NaN; cplab check compares finite values only (NaN and infinities are refused)");
  fs::remove_all(dir);
}

}  // namespace cplab::test
