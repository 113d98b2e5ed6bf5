// attention_config.cpp: argument checks, shape expansion, FLOPs and tolerances (attention_config.h).
//
// What it is: every rule `cplab-bench attention` imposes on its input, each with a message that
// names it. No CUDA: this runs before the program looks for a GPU.
// What it is not: the kernels' own rules (cuda/attention.h check_supported), which main.cpp adds.
#include "attention_config.h"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <sstream>
#include <system_error>

#include "core/error.h"
#include "core/output_file.h"
#include "core/util.h"

namespace cplab::bench {

namespace {

// "1024,2048" -> {1024, 2048}; anything else names the option
std::vector<std::int64_t> parse_list(const std::string& text, const std::string& option) {
  std::vector<std::int64_t> out;
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, ',')) {
    std::size_t used = 0;
    long long value = 0;
    try {
      value = std::stoll(item, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    require(!item.empty() && used == item.size(),
            option + " '" + text + "': '" + item + "' is not an integer (expected a comma-separated list, e.g. 1024,2048)");
    out.push_back(value);
  }
  require(!out.empty(), option + " is empty (expected a comma-separated list of integers)");
  return out;
}

}  // namespace

const char* to_string(Pass p) { return p == Pass::fwd ? "fwd" : "bwd"; }

// The folder of sdpa_baseline.py and sdpa_error.py: the environment's CPLAB_BENCH_DIR when set (a
// binary built on another machine, run from a copy of the source tree elsewhere: scripts/gpu-results.sh's
// prebuilt fallback), else this source tree's bench/ as compiled in.
static std::string bench_script(const char* name) {
  const char* env = std::getenv("CPLAB_BENCH_DIR");
  std::string dir = env && *env ? env : CPLAB_BENCH_DIR;
  std::string path = dir + "/" + name;
  std::error_code ec;
  if (env && *env)  // (the message is built only here: env may be null)
    require(std::filesystem::is_regular_file(path, ec),
            std::string("CPLAB_BENCH_DIR=") + env + " has no " + name + " (it must name cplab's bench/ folder)");
  return "python3 '" + path + "'";
}

std::string default_baseline_command() { return bench_script("sdpa_baseline.py"); }

std::string default_sdpa_error_command() { return bench_script("sdpa_error.py"); }

AttentionPlan make_plan(const AttentionArgs& a) {
  AttentionPlan p;
  require(a.dtype == "bf16" || a.dtype == "fp16" || a.dtype == "f16",
          "--dtype must be bf16 or fp16 (got '" + a.dtype + "'; the kernels under test take 16-bit inputs)");
  p.dtype = a.dtype == "bf16" ? DType::bf16 : DType::f16;
  require(a.kernel == "v2" || a.kernel == "v3" || a.kernel == "v1",
          "--kernel must be v2 (mma.sync), v3 (wgmma + TMA forward) or v1 (scalar) (got '" + a.kernel + "')");
  p.kernel = a.kernel == "v1" ? 1 : (a.kernel == "v2" ? 2 : 3);
  require(a.causal == "both" || a.causal == "yes" || a.causal == "no",
          "--causal must be both, yes or no (got '" + a.causal + "')");
  p.causal = a.causal;
  require(a.pass == "both" || a.pass == "fwd" || a.pass == "bwd",
          "--pass must be fwd, bwd or both (got '" + a.pass + "')");
  p.fwd = a.pass != "bwd";
  p.bwd = a.pass != "fwd";
  require(a.warmup >= 0, "--warmup must be >= 0 (got " + num(a.warmup) + ")");
  require(a.iters >= 1, "--iters must be >= 1 (got " + num(a.iters) + ")");
  p.warmup = a.warmup;
  p.iters = a.iters;
  require(a.tokens > 0, "--tokens must be positive (got " + num(a.tokens) + ")");
  require(a.hidden > 0, "--hidden must be positive (got " + num(a.hidden) + ")");
  require(a.heads >= 0 && a.kv_heads >= 0, "--heads and --kv-heads must be positive");
  p.tokens = a.tokens;
  p.hidden = a.hidden;
  p.heads_given = a.heads > 0;

  const std::vector<std::int64_t> dims = parse_list(a.head_dim, "--head-dim");
  const std::vector<std::int64_t> seqs = parse_list(a.seq, "--seq");
  for (const std::int64_t s : seqs) {
    require(s > 0 && s % 64 == 0, "--seq " + num(s) +
                                      " is not a positive multiple of 64 (every sequence length must be a whole number of "
                                      "64-key tiles)");
    require(s > a.tokens || a.tokens % s == 0,
            "--tokens " + num(a.tokens) + " is not divisible by --seq " + num(s) +
                " (each shape runs b = tokens / seq sequences of seq tokens; a seq above --tokens runs one sequence)");
  }
  for (const std::int64_t d : dims) {
    if (p.kernel >= 2)
      require(d == 64 || d == 128, "--head-dim " + num(d) + ": kernel " + a.kernel + " needs head dim 64 or 128");
    else  // v1's upper limit is the kernel's own rule (check_supported, called next by main.cpp)
      require(d >= 1, "--head-dim " + num(d) + " must be positive");
    if (!p.heads_given)
      require(a.hidden % d == 0, "--hidden " + num(a.hidden) + " is not divisible by --head-dim " + num(d) +
                                     " (heads = hidden / head dim; or give --heads)");
    const std::int64_t h = p.heads_given ? a.heads : a.hidden / d;
    const std::int64_t hk = a.kv_heads > 0 ? a.kv_heads : h;
    require(hk <= h && h % hk == 0, "heads " + num(h) + " (head dim " + num(d) + ") is not a multiple of --kv-heads " +
                                         num(hk) + " (GQA: every KV head serves heads / kv-heads query heads)");
  }

  std::vector<bool> causal;
  if (a.causal != "yes") causal.push_back(false);
  if (a.causal != "no") causal.push_back(true);
  for (const std::int64_t d : dims)
    for (const bool c : causal)
      for (const std::int64_t s : seqs) {
        Shape x;
        x.b = s > a.tokens ? 1 : a.tokens / s;
        x.s = s;
        x.d = d;
        x.h = p.heads_given ? a.heads : a.hidden / d;
        x.hk = a.kv_heads > 0 ? a.kv_heads : x.h;
        x.causal = c;
        p.shapes.push_back(x);
      }

  p.baseline_cmd = a.no_baseline ? "" : (a.baseline.empty() ? default_baseline_command() : a.baseline);
  p.sdpa_error_cmd = a.no_sdpa_error ? "" : (a.sdpa_error.empty() ? default_sdpa_error_command() : a.sdpa_error);
  require(a.keep_io.empty() || !p.sdpa_error_cmd.empty(),
          "--keep-io needs the SDPA error yardstick (not --no-sdpa-error)");
  p.keep_io = a.keep_io;
  if (!p.keep_io.empty()) {  // refuse a path that cannot hold the files now, not after the baseline ran
    std::error_code ec;
    std::filesystem::create_directories(p.keep_io, ec);
    require(std::filesystem::is_directory(p.keep_io, ec),
            "--keep-io " + p.keep_io + ": is not a directory and cannot be created as one" +
                (ec ? " (" + ec.message() + ")" : std::string()));
  }
  p.json_path = a.json_path;
  // refuse an unwritable path now, not after minutes of benchmarking; without creating or touching
  // the file (the report is written whole at the end, core/output_file.h)
  if (!p.json_path.empty()) check_writable(p.json_path, "--json");
  return p;
}

double attention_flops(const Shape& x, Pass p) {
  double f = 4.0 * static_cast<double>(x.b) * static_cast<double>(x.h) * static_cast<double>(x.s) *
             static_cast<double>(x.s) * static_cast<double>(x.d);
  if (x.causal) f /= 2.0;
  return p == Pass::fwd ? f : 2.5 * f;
}

std::vector<std::int64_t> sample_rows(std::int64_t s) {
  std::vector<std::int64_t> rows;
  for (std::int64_t i = 0; i < kSampleRows; ++i) rows.push_back(i * (s - 1) / (kSampleRows - 1));
  return rows;
}

bool is_yardstick_shape(const AttentionPlan& plan, const Shape& x) {
  std::int64_t smallest = 0, smallest_above = 0;  // over the plan's s at this (d, causal); 0 = none
  for (const Shape& y : plan.shapes) {
    if (y.d != x.d || y.causal != x.causal) continue;
    smallest = smallest == 0 ? y.s : std::min(smallest, y.s);
    if (y.s >= kYardstickMinSeq) smallest_above = smallest_above == 0 ? y.s : std::min(smallest_above, y.s);
  }
  return x.s == kYardstickSeq || x.s == (smallest_above != 0 ? smallest_above : smallest);
}

double tolerance(DType t) {
  if (t == DType::bf16) return kToleranceBf16;
  if (t == DType::f16) return kToleranceFp16;
  return 1e-4;  // f32 (not offered by the command line; v1 could run it)
}

}  // namespace cplab::bench
