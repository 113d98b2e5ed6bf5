// cmd_check_infer.cpp: `cplab check --kv-cache P` (cmd_check_infer.h).
#include "cmd_check_infer.h"

#include <filesystem>
#include <iostream>
#include <nlohmann/json.hpp>

#include "check/infer_check.h"
#include "commands.h"
#include "core/error.h"
#include "core/output_file.h"
#include "core/util.h"
#include "run_files.h"
#include "viz_render.h"

namespace cplab::app {

int check_infer_action(const CheckInferArgs& a) {
  InferFields f = infer_fields(a.cp, a.io, false);
  require(!a.inputs.empty(), "--inputs needs a value, got an empty string");
  require(!a.outputs.empty(), "--outputs needs a value, got an empty string");
  std::error_code ec;
  const bool in_dir = std::filesystem::is_directory(a.inputs, ec);
  if (ec && ec != std::errc::no_such_file_or_directory)
    throw Error("--inputs " + a.inputs + ": cannot use it as a folder (" + ec.message() + ")");
  require(in_dir, "--inputs " + a.inputs + ": not a directory (it must hold q.npy, k.npy and v.npy)");
  const std::filesystem::path in(a.inputs);
  for (const char* name : {"q.npy", "k.npy", "v.npy"}) {
    const bool there = std::filesystem::exists(in / name, ec);
    if (ec && ec != std::errc::no_such_file_or_directory)
      throw Error((in / name).string() + ": cannot look at it (" + ec.message() + ")");
    require(there, (in / name).string() +
                       " is missing: --inputs needs q.npy (T, heads, head-dim), k.npy and v.npy (P+T, kv-heads, dim)");
  }
  // the sizes come from the files; a size also given on the command line must agree with them
  auto given = [&](const char* name, index_t v) { return a.cp.given(name) ? v : index_t{0}; };
  index_t t = 0, kv = 0, h = given("heads", f.heads), hk = given("kv-heads", f.kv_heads);
  index_t d = given("head-dim", f.head_dim), dv = given("v-head-dim", f.v_head_dim);
  header3(TensorSource::file((in / "q.npy").string()), "Q", t, h, d);
  header3(TensorSource::file((in / "k.npy").string()), "K", kv, hk, d);
  header3(TensorSource::file((in / "v.npy").string()), "V", kv, hk, dv);
  f.heads = h, f.kv_heads = hk, f.head_dim = d, f.v_head_dim = dv;
  if (!a.cp.given("seq") && !a.cp.given("cu-seqlens")) f.fresh = {t};
  // --sinks: the logits from --sink-logits FILE, else sinks.npy of --inputs (InferSpec checks one per head)
  if (f.sinks && f.sink_logits.empty()) f.sink_logits = read_sink_logits(a.inputs, h);
  const InferSpec spec(f);
  if (a.tolerance)
    require(*a.tolerance > 0 && *a.tolerance < 1, "--tolerance " + approx(*a.tolerance) + " must be in (0, 1)");
  // the limits of a step of this size (memory, CPU work), before any data is read
  validate(InferRunSpec{spec, "double", 0, a.allow_long});
  std::string viz;
  std::vector<std::string> prefix;
  if (!a.png.empty()) {
    require(a.png.size() > 4 && a.png.substr(a.png.size() - 4) == ".png",
            "--out " + a.png + ": the picture is a PNG file; name it FILE.png");
    check_writable(a.png, "--out");
    viz = find_viz();
    prefix = headless_prefix();
  }
  const InferCheckData data = load_infer_check_data(spec, a.inputs, a.outputs);  // shapes named with infer_input_shapes
  if (check_only) return 0;                                                      // tests/fuzz: the inputs are checked
  CheckOptions opt;
  opt.tolerance = a.tolerance;
  const CheckReport r = run_infer_check(spec, data, opt);
  const std::string json = check_json(r).dump(2);
  if (a.json)
    std::cout << json << "\n";
  else
    std::cout << check_text(r);
  std::cout.flush();
  if (!a.png.empty()) {
    render_check_png(viz, prefix, json, a.png);
    if (!a.json) std::cout << "picture: " << a.png << " (cplab-viz --view check)\n";
  }
  return r.exit_status();
}

}  // namespace cplab::app
