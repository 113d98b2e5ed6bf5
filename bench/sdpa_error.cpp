// sdpa_error.cpp: the accuracy yardstick (sdpa_error.h): input files, the sdpa_error.py child, its
// output files read back as GpuSamples, and the ratio rule.
//
// What it is: plain C++ (no CUDA), so tests/cuda/test_sdpa_error.cpp (bench_sdpa_error_test) exercises all of it on
// machines without a GPU. The child is run like the baseline (baseline.h run_json_child).
// What it is not: the reference comparison (attention_check.cpp computes every error).
#include "sdpa_error.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <limits>
#include <stdexcept>
#include <nlohmann/json.hpp>
#include <system_error>

#include "baseline.h"  // run_json_child, shell_quote
#include "core/error.h"
#include "inputs.h"
#include "run/npy.h"

namespace cplab::bench {

namespace fs = std::filesystem;

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// removes a temporary directory when the last SdpaErrorRun copy holding it goes
struct TempDir {
  std::string path;
  explicit TempDir(std::string p) : path(std::move(p)) {}
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

std::string case_name(std::size_t i, const Shape& x) {
  char b[96];
  std::snprintf(b, sizeof b, "%02zu_d%lld_s%lld_%s", i, static_cast<long long>(x.d), static_cast<long long>(x.s),
                x.causal ? "causal" : "noncausal");
  return b;
}

// (s, heads, d) of input t, sequence 0: the first s*heads*d elements of the token-major tensor
void write_input(const std::string& path, Input t, std::int64_t s, std::int64_t heads, std::int64_t d, DType dtype) {
  const std::int64_t n = s * heads * d;
  std::vector<float> x(static_cast<std::size_t>(n));
#pragma omp parallel for schedule(static)
  for (std::int64_t i = 0; i < n; ++i)  // exact: every bf16 / fp16 value is a float
    x[static_cast<std::size_t>(i)] = static_cast<float>(input_value(t, static_cast<std::uint64_t>(i), dtype));
  npy_write(path, {s, heads, d}, x.data());
}

// dir/<backend>_<what>.npy, checked to be (s, heads, d)
std::vector<double> read_output(const std::string& dir, const std::string& backend, const char* what,
                                std::int64_t s, std::int64_t heads, std::int64_t d) {
  const std::string path = (fs::path(dir) / (backend + "_" + what + ".npy")).string();
  NpyArray a = npy_read(path);
  const std::vector<std::int64_t> want = {s, heads, d};
  require(a.shape == want, path + ": shape " + npy_shape_string(a.shape) + ", expected " + npy_shape_string(want));
  return std::move(a.values);
}

// the child's JSON line into `out`; false if it is not one of the documented objects
bool take(const nlohmann::json& j, SdpaErrorRun& out) {
  if (!j.is_object()) return false;
  auto text = [](const nlohmann::json& v) { return v.is_string() ? v.get<std::string>() : v.dump(); };
  if (j.contains("case") && j.contains("backend")) {
    const std::string dir = j.at("case").get<std::string>(), backend = j.at("backend").get<std::string>();
    for (SdpaCase& c : out.cases)
      if (c.dir == dir) {
        c.backend_error[backend] = j.contains("error") ? text(j["error"]) : "";
        return true;
      }
    return false;
  }
  if (j.contains("error")) {  // the whole step failed (no torch, no CUDA, bad arguments)
    out.error = text(j["error"]);
    return true;
  }
  if (j.contains("info")) {
    out.info = text(j["info"]);
    return true;
  }
  return false;
}

}  // namespace

const SdpaCase* SdpaErrorRun::find(const Shape& x) const {
  for (const SdpaCase& c : cases)
    if (c.shape.d == x.d && c.shape.s == x.s && c.shape.causal == x.causal && c.shape.h == x.h && c.shape.hk == x.hk)
      return &c;
  return nullptr;
}

void write_case_inputs(const std::string& dir, const Shape& x, DType dtype, bool bwd) {
  fs::create_directories(dir);
  const fs::path p(dir);
  write_input((p / "q.npy").string(), Input::q, x.s, x.h, x.d, dtype);
  write_input((p / "k.npy").string(), Input::k, x.s, x.hk, x.d, dtype);
  write_input((p / "v.npy").string(), Input::v, x.s, x.hk, x.d, dtype);
  if (bwd) write_input((p / "dout.npy").string(), Input::dout, x.s, x.h, x.d, dtype);
}

SdpaErrorRun run_sdpa_error(const AttentionPlan& plan) {
  SdpaErrorRun out;
  if (plan.sdpa_error_cmd.empty()) return out;
  out.command = plan.sdpa_error_cmd + " --dtype " + (plan.dtype == DType::bf16 ? "bf16" : "fp16") + " --pass " +
                (plan.fwd && plan.bwd ? "both" : (plan.fwd ? "fwd" : "bwd"));
  try {
    if (plan.keep_io.empty()) {
      std::string pattern = (fs::temp_directory_path() / "cplab-bench-sdpa-error-XXXXXX").string();
      if (mkdtemp(pattern.data()) == nullptr)
        throw std::runtime_error("cannot create a temporary directory from " + pattern);
      out.dir = pattern;
      out.cleanup = std::make_shared<const TempDir>(out.dir);
    } else {
      fs::create_directories(plan.keep_io);
      out.dir = plan.keep_io;
      out.kept = true;
    }
  } catch (const std::exception& e) {
    out.error = std::string("input files: ") + e.what();
    return out;
  }
  std::string cases;
  for (const Shape& x : plan.shapes) {
    if (!is_yardstick_shape(plan, x) || out.find(x) != nullptr) continue;  // a repeated --seq: once
    SdpaCase c;
    c.shape = x;
    c.dir = (fs::path(out.dir) / case_name(out.cases.size(), x)).string();
    try {
      write_case_inputs(c.dir, x, plan.dtype, plan.bwd);
      cases += " --case " + shell_quote(c.dir + (x.causal ? ",1" : ",0"));
    } catch (const std::exception& e) {
      c.error = std::string("writing its inputs: ") + e.what();
    }
    out.cases.push_back(c);
  }
  if (cases.empty()) {
    out.error = out.cases.empty() ? "no yardstick shape"
                                  : "no input file could be written (" + out.cases.front().error + ")";
    return out;
  }
  out.command += cases;
  const ChildRun run = run_json_child(out.command, [&](const nlohmann::json& j) { return take(j, out); });
  if (!run.failure.empty() && (out.error.empty() || run.failure.rfind("killed", 0) == 0)) out.error = run.failure;
  bool any = false;
  for (SdpaCase& c : out.cases) {
    if (!c.error.empty()) continue;
    for (const std::string& b : kSdpaBackends) {
      if (c.backend_error.count(b) != 0) {
        any = true;
      } else {
        c.backend_error[b] = "the child printed nothing for it";
      }
    }
  }
  if (out.error.empty() && !any)
    out.error = "printed no results" + (run.tail.empty() ? std::string() : ": " + run.tail);
  return out;
}

GpuSamples load_sdpa_samples(const std::string& dir, const std::string& backend, const Shape& x, Pass p) {
  const std::int64_t s = x.s, h = x.h, hk = x.hk, d = x.d, g = x.h / x.hk;
  GpuSamples out;
  out.rows = sample_rows(s);
  out.has_lse = false;
  if (p == Pass::fwd) {
    const std::vector<double> o = read_output(dir, backend, "o", s, h, d);
    for (const std::int64_t r : out.rows)
      out.o.insert(out.o.end(), o.begin() + r * h * d, o.begin() + r * h * d + d);
    return out;
  }
  const std::vector<double> dq = read_output(dir, backend, "dq", s, h, d);
  for (const std::int64_t r : out.rows)
    out.dq_rows.insert(out.dq_rows.end(), dq.begin() + r * h * d, dq.begin() + r * h * d + d);
  if (s <= kFullBackwardMaxSeq) {  // as attention_run.cpp: dQ of heads [0, g), dK and dV of KV head 0
    const std::vector<double> dk = read_output(dir, backend, "dk", s, hk, d);
    const std::vector<double> dv = read_output(dir, backend, "dv", s, hk, d);
    out.full = true;
    for (std::int64_t r = 0; r < s; ++r) {
      out.dq.insert(out.dq.end(), dq.begin() + r * h * d, dq.begin() + r * h * d + g * d);
      out.dk.insert(out.dk.end(), dk.begin() + r * hk * d, dk.begin() + r * hk * d + d);
      out.dv.insert(out.dv.end(), dv.begin() + r * hk * d, dv.begin() + r * hk * d + d);
    }
  }
  return out;
}

Yardstick judge(const CheckResult& ours, const std::vector<std::pair<std::string, CheckResult>>& sdpa,
                const std::vector<std::pair<std::string, std::string>>& backend_errors) {
  Yardstick y;
  y.selected = true;
  y.backend_errors = backend_errors;
  bool measured = false, failed = false;
  for (const auto& [name, e] : ours.errors) {
    TensorYardstick t;
    t.name = name;
    t.ours = e;
    double best = kInf;
    for (const auto& [backend, check] : sdpa)
      for (const auto& [other, err] : check.errors)
        if (other == name) {
          t.sdpa.emplace_back(backend, err);
          if (std::isfinite(err)) best = std::min(best, err);
        }
    if (!std::isfinite(best)) {
      t.status = "not measured";
      t.note = !t.sdpa.empty() ? "SDPA's error is not finite"
                               : (sdpa.empty() ? "no SDPA backend ran" : "SDPA does not give " + name);
    } else {
      t.ratio = best > 0.0 ? e / best : (e == 0.0 ? 0.0 : kInf);
      t.status = t.ratio <= kSdpaErrorRatio ? "PASS" : "FAIL";  // a NaN ratio FAILs
      measured = true;
      failed = failed || t.status == "FAIL";
    }
    y.tensors.push_back(t);
  }
  y.status = failed ? "FAIL" : (measured ? "PASS" : "not measured");
  if (!measured) {
    for (const auto& [backend, why] : backend_errors) y.reason += (y.reason.empty() ? "" : "; ") + backend + ": " + why;
    if (y.reason.empty()) y.reason = "no tensor with an SDPA error to compare";
  }
  return y;
}

Yardstick yardstick_not_measured(const std::string& reason) {
  Yardstick y;
  y.selected = true;
  y.status = "not measured";
  y.reason = reason;
  return y;
}

CheckResult check_with_yardstick(const AttentionPlan& plan, const Shape& x, Pass p, const GpuSamples& ours,
                                 const SdpaErrorRun& sdpa, Yardstick& yard) {
  auto check = [&](const std::vector<const GpuSamples*>& outs) {
    return p == Pass::fwd ? check_forward(plan, x, outs) : check_backward(plan, x, outs);
  };
  yard = Yardstick{};
  const SdpaCase* c = sdpa.find(x);
  if (c == nullptr) return check({&ours}).front();
  std::string why = !c->error.empty() ? c->error : sdpa.error;
  std::vector<std::pair<std::string, std::string>> backend_errors;
  std::vector<std::pair<std::string, GpuSamples>> loaded;
  if (why.empty())
    for (const std::string& b : kSdpaBackends) {
      const auto it = c->backend_error.find(b);
      const std::string err = it == c->backend_error.end() ? "the child printed nothing for it" : it->second;
      if (!err.empty()) {
        backend_errors.emplace_back(b, err);
        continue;
      }
      try {
        loaded.emplace_back(b, load_sdpa_samples(c->dir, b, x, p));
      } catch (const std::exception& e) {
        backend_errors.emplace_back(b, std::string("reading its outputs: ") + e.what());
      }
    }
  std::vector<const GpuSamples*> outs = {&ours};
  for (const auto& [b, samples] : loaded) outs.push_back(&samples);
  const std::vector<CheckResult> results = check(outs);
  if (!why.empty()) {
    yard = yardstick_not_measured(why);
    return results.front();
  }
  std::vector<std::pair<std::string, CheckResult>> theirs;
  for (std::size_t i = 0; i < loaded.size(); ++i) theirs.emplace_back(loaded[i].first, results[i + 1]);
  yard = judge(results.front(), theirs, backend_errors);
  return results.front();
}

}  // namespace cplab::bench
