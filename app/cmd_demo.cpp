// cmd_demo.cpp: `cplab demo`, every implemented mode at a small configuration, one row each.
//
// What it is: the main job's headline. For each implemented mode and layout it runs forward and
// backward in double on simulated ranks, checks every output against dense attention, and prints
// one table row: error, work balance, bytes moved, messages. Exit status 1 if any error exceeds
// the tolerance (1e-10 in double, 1e-4 in float).
// What it is not: a benchmark; the times are those of the CPU reference.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>

#include "commands.h"
#include "core/error.h"
#include "run/experiment.h"

namespace cplab::app {

namespace {

struct DemoOptions {
  CpFields base;  // the sizes every row shares
  std::string dtype = "double";
  bool json = false;
};

int demo_action(DemoOptions& o) {
  // the sizes themselves (checked as the first row's mode, p2p) must be valid: else exit 2
  validate(RunSpec{CpSpec(o.base), false, o.dtype});
  if (check_only) return 0;  // tests/fuzz: the inputs are checked
  struct Row {
    Mode mode;
    Layout layout;
    bool causal;
    index_t icp = 0, ocp = 0;
    std::vector<index_t> cu = {};  // packed sequences (padded to the layout's factor)
  };
  const index_t P = o.base.cp;
  const index_t icp = P % 2 == 0 ? 2 : 1;  // the demo's hierarchical split: pairs of ranks
  const std::vector<index_t> cu = {0, o.base.seq * 3 / 8 + 1, o.base.seq * 5 / 8 + 3, o.base.seq - 5};  // 3 ragged sequences
  const std::vector<Row> rows = {{Mode::p2p, Layout::zigzag, true},
                                 {Mode::p2p, Layout::striped, true},
                                 {Mode::p2p, Layout::contiguous, true},
                                 {Mode::p2p, Layout::zigzag, false},
                                 {Mode::p2p, Layout::zigzag, true, 0, 0, cu},
                                 {Mode::allgather, Layout::zigzag, true},
                                 {Mode::allgather, Layout::zigzag, true, 0, 0, cu},
                                 {Mode::a2a, Layout::zigzag, true},
                                 {Mode::a2a, Layout::zigzag, true, 0, 0, cu},
                                 {Mode::a2a_p2p, Layout::zigzag, true, icp, P / icp}};
  const double tol = run_tolerance(o.dtype);
  nlohmann::json out = nlohmann::json::array();
  if (!o.json) {
    std::printf("cplab demo: cp %lld, seq %lld, heads %lld (kv %lld), head-dim %lld, %s, forward + backward,\n"
                "every row checked against dense attention (tolerance %.0e; error = max|x - ref| / max|ref| over O, LSE, dQ, dK, dV)\n\n",
                static_cast<long long>(o.base.cp), static_cast<long long>(o.base.seq),
                static_cast<long long>(o.base.heads), static_cast<long long>(o.base.kv_heads),
                static_cast<long long>(o.base.head_dim), o.dtype.c_str(), tol);
    std::printf("%-12s %-11s %-7s %-10s %10s %11s %16s %14s %9s  %s\n", "mode", "layout", "mask", "sequences",
                "max error", "work ratio", "bytes sent/rank", "messages/rank", "time (s)", "check");
  }
  int failures = 0, skipped = 0;
  for (const Row& row : rows) {
    CpFields f = o.base;
    f.mode = row.mode;
    f.layout = row.layout;
    f.causal = row.causal;
    f.icp = row.icp;
    f.ocp = row.ocp;
    f.cu_seqlens = row.cu;
    f.pad = !row.cu.empty();
    if (f.pad) f.seq = 0;  // the packed total
    RunSpec s;
    std::string why;  // a row whose mode rules the chosen sizes break is skipped, with the rule
    try {
      s = RunSpec{CpSpec(f), true, o.dtype};
      validate(s);
    } catch (const Error& e) {
      why = e.what();
    }
    if (!why.empty()) {
      ++skipped;
      const std::string name = to_string(f.mode);
      if (o.json) out.push_back({{"mode", name}, {"check", "skipped"}, {"reason", why}});
      else std::printf("%-12s %-11s %-7s skipped: %s\n", name.c_str(), to_string(f.layout).c_str(),
                       f.causal ? "causal" : "none", why.c_str());
      continue;
    }
    const CpSpec& cp = s.cp;
    const RunReport r = run_experiment(s, make_inputs(s));
    const bool ok = r.max_error() <= tol && r.padding_max_abs == 0.0;
    failures += ok ? 0 : 1;
    // busiest rank (equal on all ranks for the ring)
    const std::int64_t bytes = *std::max_element(r.bytes_sent.begin(), r.bytes_sent.end());
    const std::int64_t msgs = *std::max_element(r.messages.begin(), r.messages.end());
    if (o.json) {
      nlohmann::json j = report_json(r);
      j["check"] = ok ? "ok" : "FAILED";
      out.push_back(j);
    } else {
      char ratio[32];
      std::snprintf(ratio, sizeof ratio, std::isfinite(r.work_ratio) ? "%.2f" : "inf", r.work_ratio);
      const std::string mode = to_string(cp.mode()) + (cp.icp() > 0 ? " " + std::to_string(cp.icp()) + "x" + std::to_string(cp.ocp()) : "");
      const std::string seqs = cp.thd() ? std::to_string(cp.packing().num_seqs()) + " packed" : "1";
      std::printf("%-12s %-11s %-7s %-10s %10.1e %11s %16lld %14lld %9.3f  %s\n", mode.c_str(), to_string(cp.layout()).c_str(),
                  cp.causal() ? "causal" : "none", seqs.c_str(), r.max_error(), ratio, static_cast<long long>(bytes),
                  static_cast<long long>(msgs), r.seconds,
                  ok ? "ok" : "FAILED");
    }
  }
  if (o.json) {
    std::cout << out.dump(2) << "\n";
    return failures == 0 ? 0 : 1;
  }
  std::string cus;
  for (size_t i = 0; i < cu.size(); ++i) cus += (i ? "," : "") + std::to_string(cu[i]);
  std::printf("\nwork ratio = max/min FLOPs over ranks: zigzag and striped balance the causal mask, contiguous does not.\n"
              "packed rows: cu_seqlens %s, each sequence padded to the layout's factor; padding outputs must be exactly 0.\n"
              "a2a+p2p %lldx%lld: all-to-all inside groups of %lld adjacent ranks, rings across the groups.\n"
              "Try: cplab run --mode p2p --cp 8 --seq 8192 --heads 8 --kv-heads 2 --head-dim 64 --causal --layout contiguous --backward\n"
              "     cplab layout --cp 3 --cu-seqlens 0,12,36,42\n",
              cus.c_str(), static_cast<long long>(icp), static_cast<long long>(P / icp), static_cast<long long>(icp));
  if (skipped > 0) std::printf("(%d rows skipped: their mode's rules do not fit these sizes)\n", skipped);
  return failures == 0 ? 0 : 1;
}

}  // namespace

void setup_demo(CLI::App& app, int& status) {
  auto o = std::make_shared<DemoOptions>();
  o->base.cp = 4;
  o->base.seq = 256;
  o->base.heads = 8;
  o->base.kv_heads = 4;
  o->base.head_dim = 32;
  CLI::App* sub = app.add_subcommand(
      "demo", "Run every implemented CP mode at a small configuration and print one row per mode\n"
              "(error vs dense attention, work balance, bytes moved). Exit status 1 if a check fails.");
  sub->add_option("--cp", o->base.cp, "number of CP ranks")->capture_default_str();
  sub->add_option("--seq", o->base.seq, "global sequence length (multiple of 2*cp)")->capture_default_str();
  sub->add_option("--heads", o->base.heads, "query heads")->capture_default_str();
  sub->add_option("--kv-heads", o->base.kv_heads, "key/value heads")->capture_default_str();
  sub->add_option("--head-dim", o->base.head_dim, "head dim")->capture_default_str();
  sub->add_option("--dtype", o->dtype, "float | double")->capture_default_str();
  sub->add_flag("--json", o->json, "print a JSON array, one object per row");
  sub->callback([o, &status] { status = demo_action(*o); });
}

}  // namespace cplab::app
