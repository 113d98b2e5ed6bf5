// baseline.cpp: run_baseline (baseline.h): popen, JSON lines, one map of results.
//
// What it is: the command line handed to the baseline, the reading of its output (stderr is merged
// into stdout: lines that are not JSON objects are kept only to explain a failure) and the exit
// status (run_json_child, which the yardstick's sdpa_error.py child shares). Nothing here throws.
// What it is not: the baseline itself (sdpa_baseline.py).
#include "baseline.h"

#include <sys/wait.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <deque>
#include <nlohmann/json.hpp>

namespace cplab::bench {

namespace {

std::string key(const std::string& backend, const std::string& pass, long long d, long long s, bool causal) {
  return backend + "|" + pass + "|" + std::to_string(d) + "|" + std::to_string(s) + "|" + (causal ? "1" : "0");
}

std::string arguments(const AttentionPlan& plan) {
  std::string a = std::string(" --dtype ") + (plan.dtype == DType::bf16 ? "bf16" : "fp16") + " --pass " +
                  (plan.fwd && plan.bwd ? "both" : (plan.fwd ? "fwd" : "bwd")) +
                  " --warmup " + std::to_string(plan.warmup) + " --iters " + std::to_string(plan.iters);
  for (const Shape& x : plan.shapes)
    a += " --shape " + std::to_string(x.b) + "," + std::to_string(x.h) + "," + std::to_string(x.hk) + "," +
         std::to_string(x.s) + "," + std::to_string(x.d) + "," + (x.causal ? "1" : "0");
  return a;
}

bool read_line(std::FILE* f, std::string& line) {
  line.clear();
  char buf[4096];
  while (std::fgets(buf, sizeof buf, f) != nullptr) {
    line += buf;
    if (!line.empty() && line.back() == '\n') {
      line.pop_back();
      return true;
    }
  }
  return !line.empty();
}

// one JSON line of the child into `out`; false if it is not one of the documented objects
bool take(const nlohmann::json& j, Baseline& out) {
  if (!j.is_object()) return false;
  if (j.contains("backend")) {
    BaselineEntry e;
    if (j.contains("error")) {
      e.error = j["error"].is_string() ? j["error"].get<std::string>() : j["error"].dump();
    } else if (j.contains("ms") && j["ms"].is_number()) {
      e.ms = j["ms"].get<double>();
    } else {
      return false;
    }
    out.entries[key(j.at("backend").get<std::string>(), j.at("pass").get<std::string>(), j.at("d").get<long long>(),
                    j.at("s").get<long long>(), j.at("causal").get<bool>())] = e;
    return true;
  }
  if (j.contains("error")) {  // the whole baseline failed (no torch, no CUDA, bad arguments)
    out.error = j["error"].is_string() ? j["error"].get<std::string>() : j["error"].dump();
    return true;
  }
  if (j.contains("info")) {
    out.info = j["info"].is_string() ? j["info"].get<std::string>() : j["info"].dump();
    return true;
  }
  return false;
}

}  // namespace

std::optional<BaselineEntry> Baseline::find(const std::string& backend, Pass p, const Shape& x) const {
  const auto it = entries.find(key(backend, to_string(p), x.d, x.s, x.causal));
  if (it == entries.end()) return std::nullopt;
  return it->second;
}

ChildRun run_json_child(const std::string& command, const std::function<bool(const nlohmann::json&)>& take) {
  ChildRun run;
  std::fflush(nullptr);  // the child shares our stdout's terminal only through the pipe, but be tidy
  std::FILE* pipe = popen((command + " 2>&1").c_str(), "r");
  if (pipe == nullptr) {
    run.failure = std::string("could not start it: ") + std::strerror(errno);
    return run;
  }
  std::deque<std::string> other;  // the last lines that were not JSON results: the reason, if it fails
  std::string line;
  while (read_line(pipe, line)) {
    bool used = false;
    if (!line.empty() && line.front() == '{') {
      try {
        used = take(nlohmann::json::parse(line));
      } catch (const std::exception&) {
        used = false;
      }
    }
    if (!used && !line.empty()) {
      other.push_back(line);
      if (other.size() > 4) other.pop_front();
    }
  }
  const int status = pclose(pipe);
  for (const std::string& l : other) run.tail += (run.tail.empty() ? "" : " | ") + l;
  const std::string tail = run.tail.empty() ? std::string() : ": " + run.tail;
  if (status == -1)
    run.failure = std::string("could not wait for it: ") + std::strerror(errno);
  else if (WIFEXITED(status) && WEXITSTATUS(status) != 0)
    run.failure = "exited with status " + std::to_string(WEXITSTATUS(status)) + tail;
  else if (WIFSIGNALED(status))
    run.failure = "killed by signal " + std::to_string(WTERMSIG(status)) + tail;
  return run;
}

std::string shell_quote(const std::string& text) {
  std::string q = "'";
  for (const char c : text) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

Baseline run_baseline(const AttentionPlan& plan) {
  Baseline out;
  out.command = plan.baseline_cmd + arguments(plan);
  const ChildRun run = run_json_child(out.command, [&](const nlohmann::json& j) { return take(j, out); });
  // the child's own {"error": ...} line says it best; a signal overrides it (the child did not finish)
  if (!run.failure.empty() && (out.error.empty() || run.failure.rfind("killed", 0) == 0)) out.error = run.failure;
  if (out.error.empty() && out.entries.empty())
    out.error = "printed no results" + (run.tail.empty() ? std::string() : ": " + run.tail);
  return out;
}

}  // namespace cplab::bench
