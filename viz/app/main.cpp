// main.cpp: the cplab-viz command line: an interactive window, one view rendered to a PNG
// (--headless), or the frame-build benchmark (--bench-frames).
//
//   cplab-viz [run and batch options]                                  the app (needs a display)
//   cplab-viz --headless --view V --out FILE.png [--size WxH] [...]     one view to a PNG, then exit
//   cplab-viz --bench-frames N --view V [...]                           mean CPU time to build a frame
// Every parameter the app edits has an option here (cplab run's and cplab schedule's names); they fill
// VizParams (model.h), whose CpFields become the run's CpSpec when its model is built.
// What it is not: the app's frame (app.h) or the validation of a run (modes/cp_spec.h does that).
#include <CLI/CLI.hpp>

#include <algorithm>
#include <cstdio>
#include <string>

#include "app.h"
#include "core/error.h"
#include "gl_output.h"
#include "layout/thd.h"
#include "core/omp_policy.h"

using namespace cplab;
using namespace cplab::viz;

namespace {

// "p2p | allgather | a2a | a2a+p2p", from the mode table
std::string mode_choices() {
  std::string t;
  for (const ModeInfo& i : mode_table()) t += (t.empty() ? "" : " | ") + std::string(i.name);
  return t;
}

std::pair<int, int> parse_size(const std::string& s) {
  const size_t x = s.find('x');
  require(x != std::string::npos, "--size " + s + " is not WIDTHxHEIGHT (e.g. 1280x720)");
  int w = 0, h = 0;
  try {
    w = std::stoi(s.substr(0, x));
    h = std::stoi(s.substr(x + 1));
  } catch (const std::exception&) {
    throw Error("--size " + s + " is not WIDTHxHEIGHT (e.g. 1280x720)");
  }
  require(w >= 320 && h >= 200 && w <= 8192 && h <= 8192, "--size " + s + ": width must be in [320, 8192] and height in [200, 8192]");
  return {w, h};
}

}  // namespace

int main(int argc, char** argv) {
  cplab::passive_omp_wait(argv);  // idle OpenMP threads sleep (reference/core/omp_policy.h)
  CLI::App cli{"cplab-viz: context parallelism, drawn from the reference's own layouts, traces and schedules"};
  AppState app;
  VizParams& p = app.params;
  CpFields& s = p.cp;  // the run as given; RunModel::build constructs (and so validates) its CpSpec
  bool headless = false, controls = false;
  std::string view = "ring", out, size = "1280x720", mode = to_string(s.mode), layout = "zigzag", cu, phase = "fwd";
  int frames = 3, bench = 0, step = 0;
  long long seed = 0;
  cli.add_flag("--headless", headless, "render one view to --out FILE.png and exit (under xvfb-run without a display)");
  cli.add_option("--view", view, "ownership | ring | masks | scheduler | timeline")->capture_default_str();
  cli.add_option("--out", out, "PNG file (with --headless)");
  cli.add_option("--size", size, "window / image size WIDTHxHEIGHT")->capture_default_str();
  cli.add_flag("--controls", controls, "with --headless: draw the controls pane too");
  cli.add_option("--frames", frames, "with --headless: frames rendered before the PNG is taken")->capture_default_str();
  cli.add_option("--bench-frames", bench, "build N frames without a display and print the mean CPU time per frame");
  cli.add_option("--mode", mode, mode_choices())->capture_default_str();
  cli.add_option("--cp", s.cp, "context-parallel size")->capture_default_str();
  cli.add_option("--seq", s.seq, "tokens (unpacked)")->capture_default_str();
  cli.add_option("--heads", s.heads, "query heads")->capture_default_str();
  cli.add_option("--kv-heads", s.kv_heads, "key/value heads")->capture_default_str();
  cli.add_option("--head-dim", s.head_dim, "dimension per head")->capture_default_str();
  cli.add_option("--layout", layout, "contiguous | zigzag | striped")->capture_default_str();
  cli.add_flag("--causal,!--no-causal", s.causal, "causal mask (default) or not");
  cli.add_flag("--backward,!--no-backward", p.backward, "trace the backward too (default) or not");
  std::string hcp;
  cli.add_option("--hcp", hcp, "a2a+p2p sizes ICP,OCP: inner all-to-all groups of ICP adjacent ranks,\n"
                               "outer rings of OCP ranks strided by ICP; ICP x OCP = cp (as in cplab run)");
  cli.add_option("--cu-seqlens", cu, "packed sequences, e.g. 0,12,36,42");
  cli.add_flag("--pad", s.pad, "pad packed sequences to the layout's multiple");
  cli.add_option("--phase", phase, "ring view: fwd | bwd")->capture_default_str();
  cli.add_option("--step", step, "ring view: the step of that phase")->capture_default_str();
  cli.add_option("--zoom-from", app.vs.zoom0, "ownership view: first token of the token-level strip");
  cli.add_option("--trace", p.trace_file, "timeline view: a trace file from `cplab run --trace`");
  cli.add_option("--ranks", p.ranks, "scheduler: ranks")->capture_default_str();
  cli.add_option("--max-seqlen-per-rank", p.max_per_rank, "scheduler: tokens per rank")->capture_default_str();
  cli.add_option("--lengths", p.lengths, "scheduler: the batch")->capture_default_str();
  cli.add_option("--dist", p.dist, "scheduler: draw the batch from a distribution file (data/dcp/*.json)");
  cli.add_option("--batch-size", p.batch_size, "scheduler with --dist: sequences per batch (0: the file's)");
  cli.add_option("--seed", seed, "scheduler with --dist: seed")->capture_default_str();
  cli.add_option("--schedule-json", p.schedule_json, "scheduler: the batch of a `cplab schedule --json` file");
  cli.add_option("--cost", p.cost, "scheduler: l2 | overhead")->capture_default_str();
  cli.add_option("--cost-param", p.cost_params, "scheduler: a=..,alpha=..,beta=..,o=..");
  try {
    cli.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return cli.exit(e);
  }
  try {
    const auto names = view_names();
    const auto it = std::find(names.begin(), names.end(), view);
    require(it != names.end(), "--view " + view + " is not one of: ownership, ring, masks, scheduler, timeline");
    app.view = static_cast<int>(it - names.begin());
    require(phase == "fwd" || phase == "bwd", "--phase " + phase + " is not fwd or bwd");
    require(seed >= 0, "--seed must be >= 0");
    require(frames >= 1 && frames <= 1000, "--frames must be in [1, 1000]");
    require(bench >= 0 && bench <= 100000, "--bench-frames must be in [0, 100000]");
    require(!headless || !out.empty(), "--headless needs --out FILE.png");
    require(out.empty() || headless, "--out needs --headless");
    p.seed = static_cast<std::uint64_t>(seed);
    s.layout = parse_layout(layout);
    if (!cu.empty()) s.cu_seqlens = parse_cu_seqlens(cu);
    if (!hcp.empty()) parse_hcp(hcp, s);
    const auto [W, H] = parse_size(size);
    s.mode = parse_mode(mode);  // modes/mode_table.h: the one parser of mode names
    // build the models the view needs; a broken rule ends here with its message
    if (view == "scheduler") {
      app.sched = SchedModel::build(p);
      app.sched_ok = true;
    } else {
      app.run = RunModel::build(p);
      app.run_ok = true;
      const Phase ph = phase == "bwd" ? Phase::bwd : Phase::fwd;
      const auto& st = app.run.steps;
      const auto at = std::find(st.begin(), st.end(), std::make_pair(ph, step));
      if (view == "ring") {
        int lo = -1, hi = -1;
        for (const auto& x : st)
          if (x.first == ph) lo = lo < 0 ? x.second : std::min(lo, x.second), hi = std::max(hi, x.second);
        require(at != st.end(), "--phase " + phase + " --step " + std::to_string(step) + " is not in the trace" +
                                    (lo >= 0 ? " (its " + phase + " steps are " + std::to_string(lo) + ".." + std::to_string(hi) + ")"
                                             : " (it has no " + phase + " steps: add --backward)"));
      }
      app.vs.step = at == st.end() ? 0 : static_cast<int>(at - st.begin());
    }
    if (bench > 0) {
      app.controls = true;
      const double ms = bench_frames(app, W, H, bench);
      std::printf("cplab-viz: view %s, %dx%d, %d frames: mean %.3f ms CPU per frame (scene + ImGui draw lists, controls pane included)\n",
                  view.c_str(), W, H, bench, ms);
      return 0;
    }
    app.controls = !headless || controls;
    if (!headless) {  // the interactive app shows every view: build the other model too, tolerating errors
      if (!app.run_ok) app.rebuild_run();
      if (!app.sched_ok) app.rebuild_sched();
    }
    return run_window(app, W, H, out, headless ? frames : 0);
  } catch (const Error& e) {
    std::fprintf(stderr, "cplab-viz: %s\n", e.what());
    return 2;
  }
}
