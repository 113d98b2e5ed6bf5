// 15_checking: pointing cplab check at another CP implementation's outputs.
//
// What it is: lesson 15's program. A correct p2p zigzag run of the reference (run_experiment) plays
// "your implementation"; faulty variants of its outputs, each with one fault injected by the test
// code (tests/check_faults.h: written from the faults' definitions, never part of the library or a
// mode), play "your implementation with a bug". Each is given to cplab check's library (run_check,
// reference/check/check.h, exactly what `cplab check` runs) and the lesson prints what it says and
// why: the error per output against its dtype's tolerance; a fault that explains the numbers (every
// checked output within tolerance of the fault's prediction, the fault itself moving some output by
// more); where the error lives (the error map per rank x chunk x head); sinks counted once per ring
// partial; rounding (float32, bfloat16) that is not a bug; and two faults at once, which no single
// hypothesis explains and a pair does (reference/check/pairs.h); and --precision, the error a
// correct bf16 ring has on these inputs as the tolerance (reference/check/pipeline_bound.h).
// What it is not: a fault catalogue of its own (hypotheses.h has the check's; check_faults.h the
// tests'), or a mode: the faulty outputs are transforms or naive recomputations of correct ones.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>

#include "../../tests/check_claimed.h"
#include "../../tests/check_faults.h"
#include "check/check.h"
#include "run/precision.h"
#include "lesson.h"

using namespace cplab;
using namespace cplab::lesson;
using cplab::test::claimed;
using cplab::test::Outs;

namespace {

std::string sci(double x) {
  if (std::isnan(x)) return "-";
  char b[32];
  std::snprintf(b, sizeof b, "%.1e", x);
  return b;
}

// the report's first line and its error table
void verdict_and_errors(const CheckReport& r) {
  std::printf("verdict: %s\n", r.verdict.c_str());
  std::vector<std::vector<std::string>> rows;
  for (CheckTensor t : kAllCheckTensors) {
    const int i = idx(t);
    if (!r.out[static_cast<size_t>(i)].present) continue;
    rows.push_back({tensor_label(t), sci(r.err[static_cast<size_t>(i)]), sci(r.levels[0].tol[static_cast<size_t>(i)]),
                    r.err[static_cast<size_t>(i)] <= r.levels[0].tol[static_cast<size_t>(i)] ? "ok" : "WRONG"});
  }
  table({"output", "error", "tolerance", ""}, rows);
}

// the first explaining hypothesis's evidence: per output, its prediction's error and the fault's own size
void evidence(const CheckReport& r) {
  const std::vector<const HypothesisResult*> ex = r.explaining();
  if (ex.empty()) return;
  const HypothesisResult& h = *ex.front();
  std::printf("explained by: %s\n", h.name.c_str());
  std::vector<std::vector<std::string>> rows;
  for (CheckTensor t : kAllCheckTensors) {
    const size_t i = static_cast<size_t>(idx(t));
    if (!r.out[i].present) continue;
    const char* kind = h.kind[i] == PredKind::reference ? "the reference's" : h.kind[i] == PredKind::faulted ? "faulted" : "not checked";
    rows.push_back({tensor_label(t), kind, sci(h.err[i]), h.kind[i] == PredKind::faulted ? sci(h.fault[i]) : "-"});
  }
  table({"output", "prediction", "claimed vs prediction", "fault's own size"}, rows);
  std::printf("how: %s\n", h.method.c_str());
}

}  // namespace

int main(int argc, char** argv) {
  Lesson L(argc, argv, "Lesson 15: checking another CP implementation with cplab check",
           "Give cplab check your inputs and outputs: it says whether they are right and, if not, which known fault explains them.");

  L.step("a correct ring, checked");
  CpFields f;
  f.mode = Mode::p2p, f.layout = Layout::zigzag, f.cp = 4, f.seq = 64, f.causal = true;
  f.heads = 4, f.kv_heads = 2, f.head_dim = 8;
  RunSpec rs;
  rs.cp = CpSpec(f);
  rs.backward = true;
  rs.seed = 15;
  const CpSpec& s = rs.cp;
  const Inputs in = make_inputs(rs);
  const RunReport run = run_experiment(rs, in);
  const Outs base{run.o, lse_tensor(run.lse), run.dq, run.dk, run.dv};
  std::printf("The reference's p2p zigzag ring (cp 4, 64 tokens, 4 heads over 2 KV heads, head dim 8, causal,\n"
              "forward and backward, float64) plays your implementation. cplab check recomputes dense attention in\n"
              "double and compares: error = max|x - ref| / max|ref| per output; a float64 output may be off by 1e-10.\n");
  verdict_and_errors(run_check(s, claimed(in, base, NpyDtype::f8)));

  L.step("the ring package's dK/dV mix-up: named from the numbers alone");
  std::printf("A public ring attention package's backward leaves rank r's dK = (dK + dV) of rank r and its dV =\n"
              "(dK + dV) of rank r+1. O, LSE and dQ are right, so a test of the forward passes. cplab check tests\n"
              "each known fault as a prediction of every output and keeps those whose prediction the numbers fit:\n");
  const CheckReport mix = run_check(s, claimed(in, test::dkv_mix(s, base, 1, 1, 0, 1, 1, 1), NpyDtype::f8));
  verdict_and_errors(mix);
  evidence(mix);
  std::printf("The prediction fits dK and dV to rounding, while the fault itself moves them by O(1): explained.\n");

  L.step("a ring step dropped from the merge: where the error lives");
  const index_t last = test::last_visible_step(s);
  const CheckReport drop = run_check(s, claimed(in, test::ring_step(s, in, base, last, 0), NpyDtype::f8));
  verdict_and_errors(drop);
  std::printf("error of O per rank and chunk (worst over heads; * above tolerance):\n");
  std::vector<std::vector<std::string>> rows;
  for (index_t r = 0; r < drop.map.ranks; ++r)
    for (index_t c = 0; c < drop.map.chunks; ++c) {
      double m = 0;
      for (index_t i = 0; i < drop.map.heads[0]; ++i) m = std::max(m, drop.map.at(CheckTensor::o, r, c, i));
      rows.push_back({std::to_string(r), drop.chunks.label(r, c, drop.map.ranks), sci(m) + (m > drop.levels[0].tol[0] ? "*" : "")});
    }
  table({"rank", "chunk", "error of O"}, rows);
  for (const std::string& w : drop.where) std::printf("%s\n", w.c_str());
  std::printf("At step %lld rank r holds the KV of rank r-%lld, for ranks 0 to 2 the block of a later rank (chunks\n"
              "r+1 and 6-r), which under the causal mask only their late chunk sees; rank 3 holds rank 0's block\n"
              "(chunks 0 and 7), and its early chunk 3 sees chunk 0. Exactly those chunks are wrong: the map shows\n"
              "which partial went missing before the diagnosis names it.\n",
              static_cast<long long>(last), static_cast<long long>(last));

  L.step("attention sinks counted once per partial instead of once per row");
  CpFields fs = f;
  fs.sinks = true;
  RunSpec rs2 = rs;
  rs2.cp = CpSpec(fs);
  const CpSpec& s2 = rs2.cp;
  const Inputs in2 = make_inputs(rs2);
  std::printf("sink logits s_h = %s\n", list(in2.sinks).c_str());
  std::printf("A sink joins each row's softmax denominator once. Adding it to every ring step's partial result\n"
              "before the merge gives a row that merged k partials k sinks (lesson 14); ignoring it gives none:\n");
  const CheckReport per_partial = run_check(s2, claimed(in2, test::sink_per_partial(s2, in2), NpyDtype::f8));
  verdict_and_errors(per_partial);
  evidence(per_partial);
  const CheckReport ignored = run_check(s2, claimed(in2, test::sinks_counted(s2, in2, [](index_t) { return 0.0; }), NpyDtype::f8));
  std::printf("sinks ignored instead: %s\n", ignored.verdict.c_str());

  L.step("rounding is not a bug: float32 and bfloat16 results");
  const Outs f32 = test::rounded(base, DType::f32, {true, true, true, true, true});
  const Outs bf16 = test::rounded(base, DType::bf16, {true, false, true, true, true});
  const std::pair<std::string, CheckReport> cases[] = {
      {"float32 values saved as float32", run_check(s, claimed(in, f32, NpyDtype::f4))},
      {"float32 values saved as float64", run_check(s, claimed(in, f32, NpyDtype::f8))},
      {"bfloat16 O, dQ, dK, dV saved as float64", run_check(s, claimed(in, bf16, NpyDtype::f8))}};
  for (const auto& [name, r] : cases)
    std::printf("%s: error of O %s, tolerance %s\n  %s\n", name.c_str(), sci(r.err[0]).c_str(), sci(r.levels[0].tol[0]).c_str(),
                r.verdict.c_str());
  std::printf("The tolerance follows the dtype a file is saved in. Saved as float64, float32 results are too far\n"
              "off for float64 yet fit float32's tolerance: that is what a float32 merge does, and the verdict says so.\n");

  L.step("two faults at once: the pair is named");
  Outs two = test::dkv_mix(s, base, 0, 1, 0, 1, 0, 0);  // dK and dV swapped ...
  for (double& x : two[1].data) x /= std::log(2.0);    // ... and LSE in base 2
  const CheckReport both = run_check(s, claimed(in, two, NpyDtype::f8));
  verdict_and_errors(both);
  std::printf("No single fault explains every output: dK and dV swapped fits dK and dV, LSE in base 2 fits LSE.\n"
              "So cplab check tried %lld pairs: each fault that explains some wrong outputs, followed by each\n"
              "transform of its outputs (a layout order, a dK / dV mix-up, an LSE layout, a factor). The pair\n"
              "explains every output, and the report shows each fault's share:\n",
              static_cast<long long>(both.pairs.tried));
  const HypothesisResult& pair = both.hypotheses.front();
  std::vector<std::vector<std::string>> shares;
  for (CheckTensor t : kAllCheckTensors) {
    const size_t i = static_cast<size_t>(idx(t));
    shares.push_back({tensor_label(t), sci(both.err[i]), sci(pair.moved_a[i]), sci(pair.moved_b[i]), sci(pair.err[i])});
  }
  table({"output", "error vs reference", "fault 1 moves it", "then fault 2", "claimed vs the pair"}, shares);
  std::printf("Fix both. A pair is searched only when no single fault explains the outputs, so one fault is\n"
              "always named alone when it can be.\n");

  L.step("your pipeline's own error: --precision");
  std::printf("A bf16 GPU ring rounds its inputs, each step's output and, in some implementations, the running\n"
              "sum across steps to bf16 (ring-flash-attention #42): its error is its own, not bf16's fixed\n"
              "tolerance. With --precision, cplab check runs its own ring with that rounding on your inputs,\n"
              "at your cp, and takes twice its error as the tolerance:\n");
  CpFields fp = f;
  fp.partials_dtype = DType::bf16, fp.merge_dtype = DType::bf16;
  RunSpec rp = rs;
  rp.cp = CpSpec(fp);
  rp.dtype = "float";
  Inputs inb = in;
  round_inputs(inb, DType::bf16);
  const RunReport pr = run_experiment(rp, inb);  // "your" bf16 ring: cplab's own, with that storage
  const Outs saved = test::rounded({pr.o, lse_tensor(pr.lse), pr.dq, pr.dk, pr.dv}, DType::bf16, {true, false, true, true, true});
  CheckOptions opt;
  opt.precision = parse_precision("inputs=bf16,accumulate=fp32,partials=bf16,merge=bf16");
  const CheckReport ok_run = run_check(s, claimed(inb, saved, NpyDtype::bf16), opt);
  std::printf("bf16 ring's outputs: %s\n", ok_run.verdict.c_str());
  Outs planted = saved;  // 3 times O's bound added to every value of query head 1
  const double b = ok_run.pipeline ? ok_run.pipeline->bound[0] : 0.0;
  double mx = 0;
  for (double x : saved[0].data) mx = std::max(mx, std::abs(x));
  for (index_t g = 0; g < planted[0].n; ++g)
    for (index_t e = 0; e < planted[0].d; ++e) planted[0].at(g, 1, e) += 3 * b * mx;
  const CheckReport bad_run = run_check(s, claimed(inb, planted, NpyDtype::bf16), opt);
  std::printf("the same with 3 x O's bound added to head 1: %s\n", bad_run.verdict.c_str());
  const CheckReport fixed = run_check(s, claimed(inb, planted, NpyDtype::bf16));
  std::printf("and without --precision (bf16's fixed tolerance): %s\n", fixed.verdict.c_str());

  L.finish(15, {"cplab check --help   (the files, the tolerances and the faults it knows)",
                "cplab run --mode p2p --cp 4 --seq 64 --heads 4 --kv-heads 2 --head-dim 8 --causal --layout zigzag --backward --sinks   "
                "(step 4's run: add --out-dir DIR to write the outputs cplab check reads)"});
  return 0;
}
