// test_check_outputs.cpp: `cplab check` on outputs that hold NaN / inf, are off by a factor, or hold
// an LSE written in another layout than the one read (issue 38).
//
// What it is: across the runs of tests/check_configs.h, each fault injected alone into a correct
// run's outputs by code written here (a KV group's dK, dV reduced by mean over its query heads
// instead of sum, from per-query-head gradients written out below; outputs scaled by a constant or
// per head; the LSE written [tokens, heads], with a per-head stride rounded up, or per sequence as
// (batch, heads, max_seqlen), then read flat as (heads, tokens)) must be named first, and the
// unfaulted outputs stay "equivalent". Then NaN planted in one block of dQ, alone and beside another
// fault: the verdict names the NaN map first, then what explains the finite values; exit status 1;
// text and JSON carry the map. The table of cases and verdicts is printed (MESSAGE).
// What it is not: the command line (tests/check_cli.py: NaN in an output exits 1, in an input 2).
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <nlohmann/json.hpp>
#include <sstream>

#include "check/check.h"
#include "check_claimed.h"
#include "check_configs.h"
#include "check_faults.h"
#include "check_table.h"
#include "check_faults_outputs.h"
#include "core/util.h"

namespace cplab::test {

namespace {

struct Case {
  std::string name;
  std::function<Outs()> make;
  std::string expect_id;    // the first hypothesis's id ("": "equivalent")
  std::string expect_name;  // a part of its name ("": not checked)
};

}  // namespace

TEST_CASE("check: outputs off by a factor and LSE in another layout are named first, and correct outputs stay equivalent") {
  FaultTable table("injected fault");
  for (const Config& cfg : configs()) {
    const Run correct = correct_run(cfg.f);
    const CpSpec& s = correct.spec;
    const Inputs& in = correct.in;
    const Outs& base = correct.out;
    const index_t S = s.S(), h = s.h(), P = s.P(), G = s.h() / s.hk();
    std::vector<Case> faults = {
        {"none", [&] { return base; }, "", ""},
        {"dK, dV mean over the KV group", [&] { return kv_group_mean(s, in, base); }, "factor",
         "dK and dV off by a constant factor 0.25 (= 1/" + num(G) + ": a KV group's gradient reduced by mean over its " + num(G) +
             " query heads instead of sum"},
        {"dK, dV averaged over cp ranks",
         [&] {
           const auto avg = [&](index_t) { return 1.0 / static_cast<double>(P); };
           return scaled(scaled(base, 3, avg), 4, avg);
         },
         "factor",
         P == G ? "dK and dV off by a constant factor 0.25 (= 1/4: a KV group's"  // 1/cp = 1/group: the group's reading comes first
                : "dK and dV off by a constant factor 0.5 (= 1/2: halved; or 1/cp = 1/2: the ranks' parts averaged over cp = 2 instead of summed"},
        {"dQ counted twice", [&] { return scaled(base, 2, [](index_t) { return 2.0; }); }, "factor",
         "dQ off by a constant factor 2 (= 2: counted twice"},
        {"O with the wrong sign", [&] { return scaled(base, 0, [](index_t) { return -1.0; }); }, "factor",
         "O off by a constant factor -1 (= -1: the wrong sign)"},
        {"dQ x 0.3 on heads 0-3", [&] { return scaled(base, 2, [](index_t i) { return i < 4 ? 0.3 : 1.0; }); }, "factor_per_head",
         "dQ off by a factor per head (heads 0-3: 0.3, heads 4-7: 1)"},
        {"LSE [tokens, heads] read flat", [&] { return lse_reread(s, base, h * S, 0, [&](index_t i, index_t g) { return g * h + i; }); },
         "lse_layout:transposed", ""},
    };
    // a per-head stride rounded up (FlashAttention rounds seqlen to 128), where that leaves the most of the LSE readable
    const index_t m = S % 128 != 0 && (S + 127) / 128 * 128 <= 2 * S ? 128 : S % 16 != 0 ? 16 : 0;
    if (m > 0) {
      const index_t L = (S + m - 1) / m * m;
      faults.push_back({"LSE stride " + num(L) + " read flat", [&, L] { return lse_reread(s, base, h * L, 0, [&, L](index_t i, index_t g) { return i * L + g; }); },
                        "lse_layout:stride_" + num(L), ""});
    }
    if (s.thd()) {  // (batch, heads, max_seqlen) written per sequence, read as a packed (heads, tokens)
      const Packing& pk = s.packing();
      index_t M = 0;
      for (index_t q = 0; q < pk.num_seqs(); ++q) M = std::max(M, pk.length(q));
      faults.push_back({"LSE (batch, heads, " + num(M) + ") read flat",
                        [&, M] {
                          return lse_reread(s, base, pk.num_seqs() * h * M, -INFINITY, [&, M](index_t i, index_t g) {
                            const index_t q = pk.seq_of(g), j = g - pk.cu_seqlens_padded[sz(q)];
                            return pk.real(g) ? (q * h + i) * M + j : -1;
                          });
                        },
                        "lse_layout:per_sequence_" + num(M), ""});
    }
    for (const Case& fault : faults) {
      CAPTURE(cfg.name);
      CAPTURE(fault.name);
      const CheckReport r = run_check(s, claimed(in, fault.make(), NpyDtype::f8));
      const HypothesisResult& best = r.hypotheses.front();
      table.row(cfg.name, fault.name, r, fault.expect_id,
                best.level == 0 && (fault.expect_name.empty() || best.name.rfind(fault.expect_name, 0) == 0));
    }
  }
  table.finish();
}

TEST_CASE("check: NaN in an output is mapped (output, rank, chunk, head) and the finite values are still diagnosed") {
  RunSpec rs;
  rs.cp = CpSpec(fields(Mode::p2p, Layout::zigzag, 4, 64, true));
  rs.backward = true;
  rs.seed = 3;
  const CpSpec& s = rs.cp;
  const Inputs in = make_inputs(rs);
  const RunReport run = run_experiment(rs, in);
  const Outs base{run.o, lse_tensor(run.lse), run.dq, run.dk, run.dv};
  // NaN in dQ: rank 2's first chunk (global chunk 2: tokens 16-23 of 64, cp 4 zigzag), heads 0-3
  auto nan_block = [](Outs o) {
    for (index_t g = 16; g < 24; ++g)
      for (index_t i = 0; i < 4; ++i)
        for (index_t e = 0; e < 16; ++e) o[2].at(g, i, e) = std::nan("");
    return o;
  };
  // dK and dV swapped, written out
  Outs swapped = base;
  std::swap(swapped[3], swapped[4]);
  const std::string where = "dQ holds 512 NaN (rank 2, chunk 2, heads 0-3)";
  std::ostringstream table;
  table << "\nNaN in dQ (rank 2, chunk 2, heads 0-3) beside           | cplab check's verdict\n";
  auto row = [&](const std::string& what, const CheckReport& r) {
    char line[512];
    std::snprintf(line, sizeof line, "%-55s | %s (exit %d)\n", what.c_str(), r.verdict.c_str(), r.exit_status());
    table << line;
  };

  const CheckReport alone = run_check(s, claimed(in, nan_block(base), NpyDtype::f8));
  row("nothing else", alone);
  CHECK(alone.verdict == "NOT equivalent: " + where + "; the finite values are equivalent");
  CHECK(alone.exit_status() == 1);
  CHECK(alone.err[idx(CheckTensor::dq)] < 1e-10);  // the error covers the finite values
  CHECK(alone.map.nonfinite_total[idx(CheckTensor::dq)].nan == 512);
  CHECK(alone.map.nonfinite_at(CheckTensor::dq, 2, 0, 3).nan == 128);
  CHECK(alone.map.nonfinite_at(CheckTensor::dq, 2, 0, 4).total() == 0);
  CHECK(alone.map.nonfinite_at(CheckTensor::dq, 2, 1, 0).total() == 0);

  const CheckReport both = run_check(s, claimed(in, nan_block(swapped), NpyDtype::f8));
  row("dK and dV swapped", both);
  CHECK(both.verdict == "NOT equivalent: " + where + "; the finite values: dK and dV swapped");
  CHECK(both.exit_status() == 1);
  const std::string text = check_text(both);
  CHECK(text.find("NaN / inf in the outputs") != std::string::npos);
  CHECK(text.find("  " + where + "\n") != std::string::npos);
  const nlohmann::json j = check_json(both);
  CHECK(j["exit_status"] == 1);
  CHECK(j["outputs"]["dq"]["nonfinite"]["nan"] == 512);
  CHECK(j["outputs"]["dq"]["ok"] == false);
  CHECK(j["error_map"]["outputs"]["dq"]["nonfinite"][2][0][3] == 128);
  CHECK(j["error_map"]["outputs"]["dq"]["nonfinite"][2][1][3] == 0);
  CHECK(j["nonfinite"][0] == where);

  // +inf in dK beside the dQ NaN: both mapped; the gradients' finite values right
  Outs inf = nan_block(base);
  inf[3].at(5, 1, 0) = INFINITY;  // token 5: rank 0, chunk 0; KV head 1
  const CheckReport two = run_check(s, claimed(in, inf, NpyDtype::f8));
  row("+inf at one value of dK", two);
  CHECK(two.verdict == "NOT equivalent: " + where + "; dK holds 1 +inf (rank 0, chunk 0, head 1); the finite values are equivalent");

  // NaN where a fault predicts it: the writer's padding of a strided LSE (stride 128, seq 64) left NaN
  Outs strided = base;
  for (index_t i = 0; i < 8; ++i)
    for (index_t g = 0; g < 64; ++g) {
      const index_t o = i * 64 + g;  // read (i, g) at flat offset o; written (i', g') at i' * 128 + g'
      strided[1].at(g, i, 0) = o % 128 < 64 ? base[1].at(o % 128, o / 128, 0) : std::nan("");
    }
  const CheckReport pad = run_check(s, claimed(in, strided, NpyDtype::f8));
  row("NaN only in the LSE, as a strided LSE's padding", pad);
  CHECK(pad.verdict.rfind("NOT equivalent: LSE holds 256 NaN (ranks 0-3, chunks 0-7, heads 1,3,5,7), as predicted by: LSE written "
                          "with a per-head stride of 128", 0) == 0);
  MESSAGE(table.str());
}

}  // namespace cplab::test
