// cmd_check.cpp: `cplab check`, another CP implementation's outputs against the reference.
//
// What it is: the CP-layer options of cplab run (cp_options.h, the same registration and rules),
// --inputs DIR (q.npy, k.npy, v.npy, optional do.npy; sinks.npy with --sinks unless --sink-logits
// names the file), --outputs DIR (o.npy, lse.npy, dq.npy, dk.npy, dv.npy, optional dsinks.npy with
// --sinks, or rank{r}/ shards), --tolerance, --precision STAGES (the tolerance is then the error a
// correct implementation with that pipeline has on these inputs: check/pipeline_bound.h; not with
// --tolerance or --kv-cache), --json, --out FILE.png (the heat map, drawn by cplab-viz:
// viz_render.h); the sizes come from the input files (a
// size also given must agree, and --cu-seqlens must pack exactly the files' tokens:
// spec_from_tensors.h, which the Python binding shares); the run's
// limits (memory, CPU work) are checked before any data is read. The check itself, its report and
// JSON are reference/check/check.h's.
// With --kv-cache the check is an inference step's (cmd_check_infer.h).
// For the Python binding (embedded.h: embedded_check set) check_embedded_action takes the tensors
// from memory (CheckSources) by the same rules and leaves the report instead of printing it.
// Exit status: 0 equivalent, 1 not equivalent (the diagnosis printed), 2 bad input.
// What it is not: the comparison or the diagnosis (reference/check/).
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>

#include "check/check.h"
#include "cmd_check_infer.h"
#include "embedded_context.h"
#include "commands.h"
#include "core/error.h"
#include "core/util.h"
#include "cp_options.h"
#include "infer_options.h"
#include "core/output_file.h"
#include "run_files.h"
#include "spec_from_tensors.h"
#include "viz_render.h"

namespace cplab::app {

namespace {

struct CheckCmdOptions {
  CpOptions cp;
  InferOptions infer;  // --kv-cache: an inference step's outputs (cmd_check_infer.cpp)
  std::string inputs, outputs, png, precision;
  double tolerance = 0;
  bool json = false, allow_long = false;
  CLI::Option* tolerance_opt = nullptr;
  CLI::Option* precision_opt = nullptr;
};

// the Python binding's check (embedded.h): the same options and rules on arrays; the report kept, not
// printed (the binding prints nothing, writes nothing)
int check_embedded_action(CheckCmdOptions& o, const std::optional<Precision>& prec, EmbeddedCheck& emb) {
  require(o.png.empty() && !o.json && o.cp.mask.sink_logits.empty(),
          "--out, --json and --sink-logits are the command line's: the Python binding returns the report (sinks: inputs['sinks'])");
  const CheckSources& src = *emb.sources;
  CpFields f = cp_fields(o.cp);
  for (const char* name : {"q", "k", "v"})
    require(src.inputs.count(name) == 1, "inputs has no '" + std::string(name) + "': it needs q, k and v (and do to check gradients)");
  const auto sinks = src.inputs.find("sinks");
  const CpSpec spec = check_spec(f, given_sizes(o.cp, f), src.inputs.at("q"), src.inputs.at("k"), src.inputs.at("v"),
                                 sinks == src.inputs.end() ? nullptr : &sinks->second);
  if (o.tolerance_opt->count() > 0)
    require(o.tolerance > 0 && o.tolerance < 1, "--tolerance " + approx(o.tolerance) + " must be in (0, 1)");
  if (prec) pipeline_spec(spec, *prec);
  RunSpec rs;  // the limits of a run of this size (memory, CPU work), before any data is read
  rs.cp = spec;
  rs.backward = src.inputs.count("do") == 1;
  rs.allow_long = o.allow_long;
  validate(rs);
  if (emb.max_flops > 0) {  // the front end's own limit (a browser page: one thread)
    const double work = cpu_flops_estimate(rs);
    char need[32], limit[32];
    std::snprintf(need, sizeof need, "%.3g", work * 1e-9);
    std::snprintf(limit, sizeof limit, "%.3g", emb.max_flops * 1e-9);
    require(work <= emb.max_flops, std::string("this check needs about ") + need +
                                       " GFLOP of CPU work (CP mode + dense oracle), more than the " + limit +
                                       " GFLOP limit " + emb.where + "; run `cplab check` on a machine instead");
  }
  const CheckData data = load_check_data(spec, src);
  CheckOptions opt;
  if (o.tolerance_opt->count() > 0) opt.tolerance = o.tolerance;
  opt.precision = prec;
  emb.report = run_check(spec, data, opt);
  return emb.report->exit_status();
}

int check_action(CheckCmdOptions& o) {
  std::optional<Precision> prec;  // --precision: parsed first, its rules before any file is read
  if (o.precision_opt->count() > 0) {
    prec = parse_precision(o.precision);
    require(!infer_wanted(o.cp, o.infer),
            "--precision is not modelled for inference steps (--kv-cache); it emulates a training ring's storage");
    require(o.tolerance_opt->count() == 0,
            "--precision and --tolerance exclude each other: --precision computes the tolerance (the error a correct "
            "implementation with that pipeline has on these inputs); give one of them");
  }
  if (infer_wanted(o.cp, o.infer)) {
    require(embedded_check == nullptr, "inference checks (--kv-cache) are not in the Python binding yet; use cplab check --kv-cache");
    CheckInferArgs a{o.cp, o.infer, o.inputs, o.outputs, o.png, {}, o.json, o.allow_long};
    if (o.tolerance_opt->count() > 0) a.tolerance = o.tolerance;
    return check_infer_action(a);
  }
  if (EmbeddedCheck* const emb = embedded_check) return check_embedded_action(o, prec, *emb);
  CpFields f = cp_fields(o.cp);
  require(!o.inputs.empty(), "--inputs needs a value, got an empty string");
  require(!o.outputs.empty(), "--outputs needs a value, got an empty string");
  std::error_code ec;
  const bool in_dir = std::filesystem::is_directory(o.inputs, ec);
  if (ec && ec != std::errc::no_such_file_or_directory)  // a symbolic link loop, a folder above that cannot be searched
    throw Error("--inputs " + o.inputs + ": cannot use it as a folder (" + ec.message() + ")");
  require(in_dir,
          "--inputs " + o.inputs + ": not a directory (it must hold q.npy, k.npy, v.npy and optionally do.npy)");
  const std::filesystem::path in(o.inputs);
  for (const char* name : {"q.npy", "k.npy", "v.npy"}) {
    const bool there = std::filesystem::exists(in / name, ec);
    if (ec && ec != std::errc::no_such_file_or_directory)
      throw Error((in / name).string() + ": cannot look at it (" + ec.message() + ")");
    require(there, (in / name).string() +
                       " is missing: --inputs needs q.npy, k.npy and v.npy (and do.npy to check gradients)");
  }
  // the sizes come from the files (a size also given must agree), the sink logits from sinks.npy
  // unless --sink-logits gave them (spec_from_tensors.h)
  const CpSpec spec = check_spec(f, given_sizes(o.cp, f), TensorSource::file((in / "q.npy").string()),
                                 TensorSource::file((in / "k.npy").string()), TensorSource::file((in / "v.npy").string()),
                                 [&](index_t heads) { return read_sink_logits(o.inputs, heads); });
  if (o.tolerance_opt->count() > 0)
    require(o.tolerance > 0 && o.tolerance < 1, "--tolerance " + approx(o.tolerance) + " must be in (0, 1)");
  if (prec) pipeline_spec(spec, *prec);  // partials= / merge= need ring steps to round (CpSpec's rule)
  // the limits of a run of this size (memory, CPU work), before any data is read
  RunSpec rs;
  rs.cp = spec;
  rs.backward = std::filesystem::exists(in / "do.npy", ec);
  rs.allow_long = o.allow_long;
  validate(rs);
  // --out: the picture is cplab-viz's; it (and a display for it) must be there before any work
  std::string viz;
  std::vector<std::string> prefix;
  if (!o.png.empty()) {
    require(o.png.size() > 4 && o.png.substr(o.png.size() - 4) == ".png", "--out " + o.png + ": the picture is a PNG file; name it FILE.png");
    check_writable(o.png, "--out");
    viz = find_viz();
    prefix = headless_prefix();
  }
  const CheckData data = load_check_data(spec, o.inputs, o.outputs);
  if (check_only) return 0;  // tests/fuzz: the inputs are checked
  CheckOptions opt;
  if (o.tolerance_opt->count() > 0) opt.tolerance = o.tolerance;
  opt.precision = prec;
  const CheckReport r = run_check(spec, data, opt);
  const std::string json = check_json(r).dump(2);
  if (o.json) std::cout << json << "\n";
  else std::cout << check_text(r);
  std::cout.flush();
  if (!o.png.empty()) {
    render_check_png(viz, prefix, json, o.png);
    if (!o.json) std::cout << "picture: " << o.png << " (cplab-viz --view check)\n";
  }
  return r.exit_status();
}

}  // namespace

void setup_check(CLI::App& app, int& status) {
  auto o = std::make_shared<CheckCmdOptions>();
  CLI::App* sub = app.add_subcommand(
      "check",
      "Check another CP implementation's outputs against the reference and name what it got wrong.\n"
      "--inputs DIR: q.npy (seq, heads, head-dim), k.npy and v.npy (seq, kv-heads, dim), optional do.npy,\n"
      "global token order (the sizes are read from them). --outputs DIR: o.npy (seq, heads, v-head-dim),\n"
      "lse.npy (heads, seq), dq.npy, dk.npy, dv.npy in global order, or per-rank shards rank{r}/o.npy ...\n"
      "in rank r's local order of --layout; dq, dk, dv (checked with do.npy) are optional, O is not.\n"
      "dtypes float16, bfloat16 ('<V2', as ml_dtypes saves it), float32, float64.\n"
      "--sinks: attention sinks, the logits (heads,) from --sink-logits FILE or sinks.npy in --inputs;\n"
      "dsinks.npy (heads,) in --outputs (or rank{r}/dsinks.npy, each rank's rows, added up) is checked too.\n"
      "The reference is dense attention in double. Error = max|x - ref| / max|ref| per output, mapped per\n"
      "rank x chunk x head; tolerance by each output's dtype: float64 1e-10; float32 O, LSE 1e-5, dQ dK dV\n"
      "1e-4; float16 O 4e-3, LSE 1e-4, grads 1e-2; bfloat16 O 2e-2, LSE 1e-4, grads 5e-2 (an LSE saved in\n"
      "a half type: its O tolerance). When they differ, named faults are tested against the numbers\n"
      "(layout order, dK/dV mix-ups, missing dK/dV reduction, KV head map, causal off by one, scale, LSE\n"
      "base 2 or without max, a ring step missing or doubled, sinks counted k times, padding); recomputed ones at 16 sampled\n"
      "rows / keys per rank chunk. Errors that fit only float32's or bfloat16's tolerance read\n"
      "'equivalent within float32's tolerance only' (a float32 or bf16 computation or merge).\n"
      "First line: equivalent | NOT equivalent: <fault> | NOT equivalent: no known fault explains it.\n"
      "With --kv-cache P (an inference step, docs/inference.md): q.npy (T, heads, head-dim) the new tokens,\n"
      "k.npy and v.npy (P+T, kv-heads, dim) per request the cache then the new tokens; o.npy (T, heads,\n"
      "v-head-dim) and lse.npy (heads, T); faults named: positions from 0 or off by one, partials summed or\n"
      "averaged without LSE weights, a rank's cache shard missing, new KV not appended, partials returned\n"
      "to the wrong owner.\n"
      "Exit status: 0 equivalent, 1 not equivalent, 2 bad input.");
  add_cp_options(sub, o->cp);  // --mode ... --scale, exactly as cplab run (cp_options.h)
  add_infer_options(sub, o->infer);  // --kv-cache, --cache-layout (infer_options.h)
  sub->add_option("--inputs", o->inputs, "folder with q.npy, k.npy, v.npy and optionally do.npy (global order)")->required();
  sub->add_option("--outputs", o->outputs, "folder with the outputs to check: o.npy [lse.npy dq.npy dk.npy dv.npy],\n"
                                           "or rank0/ ... rank{cp-1}/ holding them in each rank's local order")->required();
  o->tolerance_opt = sub->add_option("--tolerance", o->tolerance, "one tolerance for every output, instead of its dtype's");
  o->precision_opt = sub->add_option(
      "--precision", o->precision,
      "the pipeline of the implementation checked, e.g. inputs=bf16,accumulate=fp32,partials=bf16,merge=bf16:\n"
      "the tolerance is then the error a correct one has on these inputs (cplab's own CP run with that\n"
      "rounding, at this mode and cp, outputs rounded to their files' dtypes; x2), not the dtype's");
  sub->add_flag("--allow-long", o->allow_long, "check even if the reference needs more than 4 TFLOP of CPU work (minutes)");
  sub->add_option("--out", o->png, "also draw the error heat map (output x rank's chunk x head) to FILE.png with cplab-viz's\n"
                                   "renderer (cplab-viz beside cplab or on PATH; xvfb-run without a display)");
  sub->add_flag("--json", o->json, "print the report as JSON, with the full error map (output x rank x chunk x head)");
  sub->callback([o, &status] { status = check_action(*o); });
}

}  // namespace cplab::app
