// report.cpp: header, table and JSON of `cplab-bench attention` (report.h).
//
// What it is: formatting only. The convention texts below are printed in the header AND written
// into the JSON file, so a saved result says how it was measured.
// What it is not: a place where numbers are computed, except TFLOP/s = attention_flops / time.
#include "report.h"

#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <ostream>
#include <stdexcept>

#include "core/output_file.h"

#ifndef CPLAB_BENCH_COMMIT
#define CPLAB_BENCH_COMMIT "unknown"
#endif

namespace cplab::bench {

namespace {

const char* const kFlops =
    "FlashAttention convention: fwd 4*b*h*s^2*d FLOPs (QK^T and PV), causal half of that, "
    "bwd 2.5x fwd; h = query heads; softmax not counted";
const char* const kBatch =
    "b = tokens/seq sequences (b = 1 when seq > tokens); our kernels take one sequence, so an "
    "iteration is b launches back to back on one stream, all inside the timed region";
const char* const kTiming =
    "cudaEvents around --iters iterations after --warmup; ms per iteration (all b sequences); "
    "fwd = attention_forward; bwd = softmax_delta + attention_backward (fp32 dQ/dK/dV zeroed once, "
    "outside the timing)";

std::string yardstick_text() {
  char b[512];
  std::snprintf(b, sizeof b,
                "the issue's rule: our error <= %.1fx PyTorch SDPA's, per tensor, SDPA's outputs on the same inputs "
                "(sequence 0) checked on the same rows against the same reference; SDPA = min over its flash and "
                "cuDNN backends that ran; no LSE (not in SDPA's API); shapes: per (d, causal) the smallest s >= %lld "
                "(else the smallest s) and s = %lld",
                kSdpaErrorRatio, static_cast<long long>(kYardstickMinSeq), static_cast<long long>(kYardstickSeq));
  return b;
}

std::string err_cell(double e) {
  char b[32];
  std::snprintf(b, sizeof b, "%.2e", e);
  return b;
}

double tflops(const Shape& x, Pass p, double ms) {
  return ms > 0.0 ? attention_flops(x, p) / (ms * 1e-3) / 1e12 : 0.0;
}

const char* kernel_name(int k) {
  return k == 3 ? "v3 (wgmma + TMA forward; backward is v2)" : (k == 2 ? "v2 (mma.sync, FA2-style)" : "v1 (scalar, fp32)");
}

std::string check_text(DType t) {
  char b[512];
  std::snprintf(b, sizeof b,
                "vs the CPU reference in double on sequence 0: fwd O and LSE of head 0 at %lld query rows "
                "spread over s; bwd dQ, dK, dV of KV head 0 and its query heads (whole sequence) when s <= "
                "%lld, else dQ of head 0 at the same rows; error = max|gpu - ref| / max|ref| per tensor, "
                "PASS if <= %.0e (%s)",
                static_cast<long long>(kSampleRows), static_cast<long long>(kFullBackwardMaxSeq), tolerance(t),
                to_string(t).c_str());
  return b;
}

std::string tf_cell(const std::optional<BaselineEntry>& e, const Shape& x, Pass p) {
  if (!e || !e->error.empty() || e->ms <= 0.0) return "-";
  char b[32];
  std::snprintf(b, sizeof b, "%.1f", tflops(x, p, e->ms));
  return b;
}

std::string ratio_cell(const std::optional<BaselineEntry>& e, double ms) {
  if (!e || !e->error.empty() || e->ms <= 0.0 || ms <= 0.0) return "-";
  char b[32];
  std::snprintf(b, sizeof b, "%.2f", e->ms / ms);
  return b;
}

nlohmann::json entry_json(const std::optional<BaselineEntry>& e, const Shape& x, Pass p, double ms) {
  if (!e) return nullptr;
  if (!e->error.empty()) return {{"error", e->error}};
  nlohmann::json j = {{"ms", e->ms}, {"tflops", tflops(x, p, e->ms)}};
  if (ms > 0.0) j["ratio"] = e->ms / ms;  // ours / SDPA in speed
  return j;
}

// null on a row that is not a yardstick row; infinite errors / ratios are written as null (JSON has no inf)
nlohmann::json yardstick_json(const Yardstick& y) {
  if (!y.selected) return nullptr;
  nlohmann::json j = {{"status", y.status}};
  if (!y.reason.empty()) j["reason"] = y.reason;
  nlohmann::json tensors = nlohmann::json::object();
  for (const TensorYardstick& t : y.tensors) {
    nlohmann::json e = {{"ours", t.ours}, {"status", t.status}};
    for (const std::string& b : kSdpaBackends) e[b] = nullptr;
    for (const auto& [backend, err] : t.sdpa) e[backend] = err;
    e["ratio"] = t.status == "not measured" ? nlohmann::json(nullptr) : nlohmann::json(t.ratio);
    if (!t.note.empty()) e["note"] = t.note;
    tensors[t.name] = e;
  }
  j["tensors"] = tensors;
  nlohmann::json errors = nlohmann::json::object();
  for (const auto& [backend, why] : y.backend_errors) errors[backend] = why;
  j["backend_errors"] = errors;
  return j;
}

}  // namespace

std::string commit_id() { return CPLAB_BENCH_COMMIT; }

void print_header(const AttentionPlan& plan, const Baseline& baseline, const SdpaErrorRun& sdpa,
                  const std::string& gpu) {
  std::printf("cplab-bench attention: kernel %s, %s, causal %s, pass %s, warmup %d, iters %d, tokens %lld\n",
              kernel_name(plan.kernel), to_string(plan.dtype).c_str(), plan.causal.c_str(),
              plan.fwd && plan.bwd ? "fwd+bwd" : (plan.fwd ? "fwd" : "bwd"), plan.warmup, plan.iters,
              static_cast<long long>(plan.tokens));
  std::printf("  gpu       %s\n", gpu.c_str());
  std::printf("  commit    %s (at configure time)\n", commit_id().c_str());
  std::printf("  flops     %s\n", kFlops);
  std::printf("  batch     %s\n", kBatch);
  std::printf("  timing    %s\n", kTiming);
  std::printf("  check     %s\n", check_text(plan.dtype).c_str());
  if (baseline.command.empty()) {
    std::printf("  baseline  none (--no-baseline)\n");
  } else {
    std::printf("  baseline  %s\n", baseline.command.c_str());
    if (!baseline.info.empty()) std::printf("            %s\n", baseline.info.c_str());
    if (!baseline.error.empty())
      std::printf("            baseline FAILED, continuing without it: %s\n", baseline.error.c_str());
    else
      std::printf("            flash TF / cudnn TF: SDPA's FLASH_ATTENTION / CUDNN_ATTENTION backend, TFLOP/s by the "
                  "formula above; ours/X = X ms / our ms (> 1: ours faster)\n");
  }
  if (sdpa.command.empty()) {
    std::printf("  yardstick none (--no-sdpa-error)\n");
  } else {
    std::printf("  yardstick %s on %zu shapes, files in %s (%s)\n", plan.sdpa_error_cmd.c_str(), sdpa.cases.size(),
                sdpa.dir.empty() ? "-" : sdpa.dir.c_str(), sdpa.kept ? "kept, --keep-io" : "removed at the end");
    std::printf("            %s\n", yardstick_text().c_str());
    if (!sdpa.info.empty()) std::printf("            %s\n", sdpa.info.c_str());
    if (!sdpa.error.empty())
      std::printf("            yardstick NOT MEASURED (not a failure of our kernels): %s\n", sdpa.error.c_str());
  }
  std::printf("\n");
  std::fflush(stdout);
}

void print_row(const Row& r) {
  static bool heads_printed = false;
  if (!heads_printed) {
    std::printf("%-4s %4s %6s %-6s %4s %4s %4s %10s %8s %9s %-5s %-16s %-5s %8s %8s %10s %10s\n", "pass", "d", "s",
                "causal", "b", "h", "hk", "ms", "TFLOP/s", "max err", "worst", "checked", "check", "flash TF",
                "cudnn TF", "ours/flash", "ours/cudnn");
    heads_printed = true;
  }
  const Shape& x = r.shape;
  std::printf("%-4s %4lld %6lld %-6s %4lld %4lld %4lld ", to_string(r.pass), static_cast<long long>(x.d),
              static_cast<long long>(x.s), x.causal ? "yes" : "no", static_cast<long long>(x.b),
              static_cast<long long>(x.h), static_cast<long long>(x.hk));
  if (!r.error.empty()) {
    std::printf("ERROR: %s\n", r.error.c_str());
  } else {
    std::printf("%10.4f %8.1f %9.2e %-5s %-16s %-5s %8s %8s %10s %10s\n", r.ms, tflops(x, r.pass, r.ms),
                r.check.max_error(), r.check.worst().c_str(), r.check.checked.c_str(), r.passed ? "PASS" : "FAIL",
                tf_cell(r.flash, x, r.pass).c_str(), tf_cell(r.cudnn, x, r.pass).c_str(),
                ratio_cell(r.flash, r.ms).c_str(), ratio_cell(r.cudnn, r.ms).c_str());
  }
  std::fflush(stdout);
}

void print_footer(const std::vector<Row>& rows) {
  std::size_t failed = 0;
  for (const Row& r : rows) failed += r.passed ? 0 : 1;
  if (failed == 0)
    std::printf("\n%zu rows, all PASS\n", rows.size());
  else
    std::printf("\n%zu rows, %zu FAILED (error above tolerance, or a run error)\n", rows.size(), failed);
  std::fflush(stdout);
}

void print_yardstick(const SdpaErrorRun& sdpa, const std::vector<Row>& rows) {
  if (sdpa.command.empty()) return;
  if (!sdpa.error.empty()) {  // one reason for every row: no table
    std::printf("\nyardstick not measured (not a failure of our kernels): %s\n", sdpa.error.c_str());
    std::fflush(stdout);
    return;
  }
  std::size_t measured = 0, failed = 0;
  std::printf("\nSDPA error yardstick (the rule: see the header): ratio = our error / min of SDPA's flash and cuDNN "
              "errors that were measured; PASS if <= %.1f\n", kSdpaErrorRatio);
  std::printf("%-4s %4s %6s %-6s %4s %4s %-6s %9s %9s %9s %7s %s\n", "pass", "d", "s", "causal", "h", "hk", "tensor",
              "ours err", "flash err", "cudnn err", "ratio", "yardstick");
  for (const Row& r : rows) {
    if (!r.yard.selected) continue;
    const Shape& x = r.shape;
    char shape[96];
    std::snprintf(shape, sizeof shape, "%-4s %4lld %6lld %-6s %4lld %4lld", to_string(r.pass),
                  static_cast<long long>(x.d), static_cast<long long>(x.s), x.causal ? "yes" : "no",
                  static_cast<long long>(x.h), static_cast<long long>(x.hk));
    if (r.yard.status == "not measured" && r.yard.tensors.empty()) {
      std::printf("%s %-6s %9s %9s %9s %7s not measured: %s\n", shape, "-", "-", "-", "-", "-", r.yard.reason.c_str());
      continue;
    }
    measured += r.yard.status != "not measured" ? 1 : 0;
    failed += r.yard.status == "FAIL" ? 1 : 0;
    for (const TensorYardstick& t : r.yard.tensors) {
      std::string cells[2] = {"-", "-"};
      for (const auto& [backend, e] : t.sdpa) cells[backend == "flash" ? 0 : 1] = err_cell(e);
      char ratio[32] = "-";
      if (t.status != "not measured") std::snprintf(ratio, sizeof ratio, "%.2f", t.ratio);
      std::printf("%s %-6s %9s %9s %9s %7s %s%s\n", shape, t.name.c_str(), err_cell(t.ours).c_str(), cells[0].c_str(),
                  cells[1].c_str(), ratio, t.status.c_str(), t.note.empty() ? "" : (": " + t.note).c_str());
    }
    for (const auto& [backend, why] : r.yard.backend_errors)
      std::printf("%s        %s did not run: %s\n", shape, backend.c_str(), why.c_str());
  }
  if (measured == 0)
    std::printf("\nyardstick not measured on any row (not a failure of our kernels; reasons above)\n");
  else if (failed == 0)
    std::printf("\nyardstick: %zu rows measured, all PASS (our error <= %.1fx SDPA's)\n", measured, kSdpaErrorRatio);
  else
    std::printf("\nyardstick: %zu rows measured, %zu FAILED (our error above %.1fx SDPA's)\n", measured, failed,
                kSdpaErrorRatio);
  std::fflush(stdout);
}

void write_json(const AttentionPlan& plan, const Baseline& baseline, const SdpaErrorRun& sdpa, const std::string& gpu,
                const std::vector<Row>& rows) {
  nlohmann::json out;
  out["benchmark"] = "attention";
  out["gpu"] = gpu;
  out["commit"] = commit_id();
  out["kernel"] = "v" + std::to_string(plan.kernel);
  out["dtype"] = to_string(plan.dtype);
  out["warmup"] = plan.warmup;
  out["iters"] = plan.iters;
  out["tokens"] = plan.tokens;
  out["flop_convention"] = kFlops;
  out["batch_convention"] = kBatch;
  out["timing"] = kTiming;
  out["check"] = check_text(plan.dtype);
  out["tolerance"] = tolerance(plan.dtype);
  out["baseline"] = {{"command", baseline.command}, {"error", baseline.error}, {"info", baseline.info}};
  out["sdpa_error"] = {{"command", sdpa.command},
                       {"error", sdpa.error},
                       {"info", sdpa.info},
                       {"dir", sdpa.kept ? sdpa.dir : ""},  // the kept files; "" = removed
                       {"ratio_limit", kSdpaErrorRatio},
                       {"rule", yardstick_text()}};
  out["rows"] = nlohmann::json::array();
  for (const Row& r : rows) {
    const Shape& x = r.shape;
    nlohmann::json j = {{"pass", to_string(r.pass)}, {"d", x.d},   {"s", x.s},          {"causal", x.causal},
                        {"b", x.b},                  {"h", x.h},   {"hk", x.hk},        {"flops", attention_flops(x, r.pass)},
                        {"check", r.error.empty() ? (r.passed ? "PASS" : "FAIL") : "ERROR"}};
    if (!r.error.empty()) {
      j["error"] = r.error;
    } else {
      j["ms"] = r.ms;
      j["tflops"] = tflops(x, r.pass, r.ms);
      j["checked"] = r.check.checked;
      j["max_error"] = r.check.max_error();
      nlohmann::json errors = nlohmann::json::object();
      for (const auto& [name, e] : r.check.errors) errors[name] = e;
      j["errors"] = errors;
    }
    j["sdpa_flash"] = entry_json(r.flash, x, r.pass, r.error.empty() ? r.ms : 0.0);
    j["sdpa_cudnn"] = entry_json(r.cudnn, x, r.pass, r.error.empty() ? r.ms : 0.0);
    j["sdpa_error"] = yardstick_json(r.yard);
    out["rows"].push_back(j);
  }
  write_file_whole(plan.json_path, "--json", [&](std::ostream& f) { f << out.dump(2) << "\n"; });
}

}  // namespace cplab::bench
