// web_files.cpp: files dropped on or opened in the browser build (see web_files.h).
#include "web_files.h"

#include <emscripten.h>
#include <imgui.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>

#include "check/check.h"
#include "core/error.h"
#include "embedded.h"
#include "infer_options.h"
#include "render.h"

namespace cplab::viz {

namespace fs = std::filesystem;

namespace {

// where the page keeps the tensors of a check, as `cplab check --inputs DIR --outputs DIR` reads them
const char* kInputs = "/check/inputs";
const char* kOutputs = "/check/outputs";
const std::vector<std::string> kInputNames = {"q", "k", "v", "do", "sinks"};
const std::vector<std::string> kOutputNames = {"o", "lse", "dq", "dk", "dv", "dsinks"};

bool has(const char* dir, const std::string& stem) { return fs::exists(fs::path(dir) / (stem + ".npy")); }

// what the page holds for a check, for the pane: "inputs q k v; outputs o lse"
std::string held() {
  std::string t;
  for (const auto& [dir, names] : {std::pair{kInputs, &kInputNames}, std::pair{kOutputs, &kOutputNames}}) {
    std::string part;
    for (const std::string& n : *names)
      if (has(dir, n)) part += " " + n;
    if (!part.empty()) t += (t.empty() ? "" : "; ") + std::string(dir == kInputs ? "inputs" : "outputs") + part;
  }
  return t;
}

// the run options of `cplab check` for the run the controls pane shows (the sizes are the files')
std::vector<std::string> check_words(const VizParams& p) {
  const CpFields& f = p.cp;
  std::vector<std::string> w = {"--mode", to_string(f.mode), "--cp", std::to_string(f.cp), "--layout", to_string(f.layout)};
  if (f.causal) w.emplace_back("--causal");
  if (f.window) w.insert(w.end(), {"--window", std::to_string(*f.window)});
  if (f.chunk) w.insert(w.end(), {"--chunk", std::to_string(*f.chunk)});
  if (f.icp > 0) w.insert(w.end(), {"--hcp", std::to_string(f.icp) + "," + std::to_string(f.ocp)});
  if (!f.cu_seqlens.empty()) w.insert(w.end(), {"--cu-seqlens", app::join_counts(f.cu_seqlens)});
  if (f.pad) w.emplace_back("--pad");
  if (f.replicate_kv) w.emplace_back("--replicate-kv");
  if (has(kInputs, "sinks")) w.emplace_back("--sinks");
  return w;
}

// runs the check on what the page holds, once q, k, v and o are there
void run_check(AppState& app) {
  for (const char* n : {"q", "k", "v"})
    if (!has(kInputs, n)) return;
  if (!has(kOutputs, "o")) return;
  CheckSources src;
  src.files = true;
  src.inputs_name = kInputs, src.outputs_name = kOutputs;
  for (const std::string& n : kInputNames)
    if (has(kInputs, n)) src.inputs.emplace(n, TensorSource::file(std::string(kInputs) + "/" + n + ".npy"));
  for (const std::string& n : kOutputNames)
    if (has(kOutputs, n)) src.outputs.emplace(n, TensorSource::file(std::string(kOutputs) + "/" + n + ".npy"));
  const CheckReport r = app::check_embedded(check_words(app.params), src, kMaxPageCheckFlops, "of cplab check in a browser page (one thread)");
  nlohmann::json j = check_json(r);
  j["outputs_dir"] = kOutputs;
  CheckModel m = CheckModel::from_report(j, "the page's check");
  app.check = std::move(m), app.check_ok = true;
  app.check_file.clear();
  app.check_text = check_text(r);
  app.view = static_cast<int>(std::find(view_names().begin(), view_names().end(), "check") - view_names().begin());
}

// a .json file's kind, from its top-level keys
enum class JsonKind { trace, chrome_trace, check_report, schedule, unknown };
JsonKind json_kind(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  const nlohmann::json j = nlohmann::json::parse(in, nullptr, false);
  if (!j.is_object()) return JsonKind::unknown;
  if (j.contains("format") && j["format"] == "cplab-trace") return JsonKind::trace;
  if (j.contains("traceEvents")) return JsonKind::chrome_trace;
  if (j.contains("verdict") && j.contains("error_map")) return JsonKind::check_report;
  if (j.contains("lengths") && j.contains("ranks")) return JsonKind::schedule;
  return JsonKind::unknown;
}

int view_index(const char* name) {
  return static_cast<int>(std::find(view_names().begin(), view_names().end(), name) - view_names().begin());
}

void open_one(AppState& app, const std::string& path, bool& tensors) {
  const fs::path p(path);
  const std::string name = p.filename().string(), ext = p.extension().string(), stem = p.stem().string();
  if (ext == ".npy") {
    const bool in = std::find(kInputNames.begin(), kInputNames.end(), stem) != kInputNames.end();
    const bool out = std::find(kOutputNames.begin(), kOutputNames.end(), stem) != kOutputNames.end();
    require(in || out, name + ": a .npy file for cplab check is named q, k, v, do, sinks (inputs) or o, lse, dq, dk, dv, "
                              "dsinks (outputs, global token order) .npy");
    const char* dir = in ? kInputs : kOutputs;
    fs::create_directories(dir);
    fs::copy_file(p, fs::path(dir) / name, fs::copy_options::overwrite_existing);
    tensors = true;
    return;
  }
  require(ext == ".json", name + ": cplab-viz opens .npy tensors (q, k, v, o, ... for cplab check) and .json files "
                                "(a trace, a check report or a schedule)");
  switch (json_kind(path)) {
    case JsonKind::trace: {
      VizParams q = app.params;
      q.trace_file = path;
      app.run = RunModel::build(q);  // the loader's rules, naming the file
      app.params = q, app.run_ok = true, app.run_error.clear();
      app.view = view_index("timeline");
      ++app.params_version;
      return;
    }
    case JsonKind::chrome_trace:
      throw Error(name + ": a Chrome trace (cplab run --chrome-trace) is for chrome://tracing or Perfetto; "
                         "cplab-viz draws the --trace file");
    case JsonKind::check_report:
      app.check = CheckModel::load(path);
      app.check_ok = true, app.check_file = path, app.check_text.clear();
      app.view = view_index("check");
      return;
    case JsonKind::schedule: {
      VizParams q = app.params;
      q.schedule_json = path;
      app.sched = SchedModel::build(q);
      app.params = q, app.sched_ok = true, app.sched_error.clear();
      app.view = view_index("scheduler");
      ++app.params_version;
      return;
    }
    case JsonKind::unknown:
      break;
  }
  throw Error(name + ": not a file cplab-viz opens: a trace (cplab run --trace), a check report (cplab check --json) "
                     "or a schedule (cplab schedule --json)");
}

}  // namespace

std::string open_files(AppState& app, const std::vector<std::string>& paths) {
  try {
    require(!paths.empty(), "no file was given");
    bool tensors = false;
    for (const std::string& p : paths) open_one(app, p, tensors);
    if (tensors) run_check(app);
    app.lesson = 0, app.page = 0;  // a file's picture is not a lesson's
    app.page_error.clear();
    return "";
  } catch (const std::bad_alloc&) {
    app.page_error = "cplab-viz: error: out of memory (the page's memory is at most 2 GB): choose smaller files";
  } catch (const std::exception& e) {
    app.page_error = std::string("cplab-viz: error: ") + e.what();
  }
  return app.page_error;
}

void clear_check_files() {
  std::error_code ec;
  fs::remove_all(kInputs, ec), fs::remove_all(kOutputs, ec);
}

void web_controls(AppState& app) {
  if (ImGui::Button("Open files...")) EM_ASM(document.getElementById('cplab-file').click());
  note_item(app, "Open files...");
  help("Or drop them on the page. A trace (cplab run --trace), a check report (cplab check --json), a schedule "
       "(cplab schedule --json), or .npy tensors for cplab check: inputs q, k, v [do] and outputs o [lse dq dk dv] "
       "in global token order; the page checks them against the run of this pane (mode, cp, layout, masks) once "
       "q, k, v and o are there.");
  const std::string h = held();
  if (!h.empty()) {
    ImGui::TextWrapped("check files held: %s", h.c_str());
    ImGui::SameLine();
    if (ImGui::SmallButton("clear")) clear_check_files();
  }
  if (!app.page_error.empty()) {
    error_text(app.page_error);
    if (ImGui::SmallButton("dismiss")) app.page_error.clear();
  }
}

}  // namespace cplab::viz
