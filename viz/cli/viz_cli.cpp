// viz_cli.cpp: cplab-viz's options and their rules; the models its view needs (viz_cli.h).
#include "viz_cli.h"

#include <algorithm>
#include <string>

#include "cli_common.h"
#include "core/checked.h"
#include "core/error.h"
#include "infer/infer_table.h"
#include "layout/layout_index.h"
#include "layout/thd.h"
#include "lesson_mode.h"
#include "mask_options.h"
#include "views.h"

namespace cplab::viz {

namespace {

// "p2p | allgather | a2a | a2a+p2p", from the mode table
std::string mode_choices() {
  std::string t;
  for (const ModeInfo& i : mode_table()) t += (t.empty() ? "" : " | ") + std::string(i.name);
  return t;
}

// WIDTHxHEIGHT, each a whole number (1280x720x3 and 1280x720px are refused)
std::pair<int, int> parse_size(const std::string& s) {
  const size_t x = s.find('x');
  require(x != std::string::npos, "--size " + s + " is not WIDTHxHEIGHT (e.g. 1280x720)");
  const auto w = parse_int(s.substr(0, x), "--size width", 320, 8192);
  const auto h = parse_int(s.substr(x + 1), "--size height", 200, 8192);
  return {static_cast<int>(w), static_cast<int>(h)};
}

}  // namespace

VizLaunch parse_viz_args(CLI::App& cli, int argc, const char* const* argv) {
  VizLaunch L;
  VizParams& p = L.params;
  CpFields& s = p.cp;  // the run as given; RunModel::build constructs (and so validates) its CpSpec
  std::string view = "ring", size = "1280x720", mode = to_string(s.mode), layout = "zigzag", cu, phase = "fwd", hcp;
  int step = 0;
  long long seed = 0;
  cli.option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::Throw);  // as cplab: a repeated option is refused
  cli.add_flag("--headless", L.headless, "render one view to --out FILE.png and exit (under xvfb-run without a display)");
  cli.add_option("--view", view, "ownership | ring | masks | scheduler | timeline | check")->capture_default_str();
  cli.add_option("--out", L.out, "PNG file (with --headless)");
  cli.add_option("--size", size, "window / image size WIDTHxHEIGHT")->capture_default_str();
  cli.add_option("--scene-json", L.scene_json,
                 "with --headless: also write what the view drew as data (tiles with their visible pairs, messages, "
                 "tokens; viz/scene/scene_json.h)");
  cli.add_flag("--controls", L.controls, "with --headless: draw the controls pane too");
  app::int_range(cli.add_option("--frames", L.frames, "with --headless: frames rendered before the PNG is taken")
                     ->capture_default_str(),
                 1, 1000);
  app::int_range(cli.add_option("--bench-frames", L.bench,
                                "build N frames (1..100000) without a display and print the mean wall time\n"
                                "per frame (refused when they would take more than a minute)"),
                 1, 100000);
  cli.add_option("--mode", mode, mode_choices() + "; with --kv-cache, an inference variant: " + infer_mode_names())
      ->capture_default_str();
  // an inference step (issue 37; reference/infer/infer_spec.h), as cplab run takes it
  cli.add_option("--kv-cache", p.kv_cache,
                 "an inference step: P cached tokens per request (\"4\", or one per request \"100,200\"; 0: a first\n"
                 "prefill) before the --seq (or --cu-seqlens) new tokens; --mode p2p (pass-KV), pass-q, decode-pass-q, decode-ag");
  cli.add_option("--cache-layout", p.cache_layout, "with --kv-cache: how the cache is sharded: zigzag | interleaved")
      ->capture_default_str();
  cli.add_option("--cp", s.cp, "context-parallel size")->capture_default_str();
  cli.add_option("--seq", s.seq, "tokens (unpacked)")->capture_default_str();
  cli.add_option("--heads", s.heads, "query heads")->capture_default_str();
  cli.add_option("--kv-heads", s.kv_heads, "key/value heads")->capture_default_str();
  cli.add_option("--head-dim", s.head_dim, "dimension per head")->capture_default_str();
  cli.add_option("--layout", layout, "contiguous | zigzag | striped")->capture_default_str();
  // on by default: each has a flag to turn it off (two plain flags, so --help shows no "{false}")
  CLI::Option* causal = cli.add_flag_callback("--causal", [&s] { s.causal = true; }, "causal mask (the default)");
  cli.add_flag_callback("--no-causal", [&s] { s.causal = false; }, "no mask (bidirectional attention)")->excludes(causal);
  app::MaskOptions mask;  // --window, --chunk: cplab run's options and rules (app/mask_options.h)
  app::add_mask_options(&cli, mask, false);
  CLI::Option* bwd = cli.add_flag_callback("--backward", [&p] { p.backward = true; }, "trace the backward too (the default)");
  cli.add_flag_callback("--no-backward", [&p] { p.backward = false; }, "trace the forward only")->excludes(bwd);
  cli.add_option("--hcp", hcp, "a2a+p2p sizes ICP,OCP: inner all-to-all groups of ICP adjacent ranks,\n"
                               "outer rings of OCP ranks strided by ICP; ICP x OCP = cp (as in cplab run)");
  cli.add_option("--cu-seqlens", cu, "packed sequences, e.g. 0,12,36,42");
  cli.add_flag("--pad", s.pad, "pad packed sequences to the layout's multiple");
  cli.add_flag("--replicate-kv", s.replicate_kv, "a2a, a2a+p2p: repeat each KV head when kv-heads is not divisible\n"
                                                 "by the all-to-all size (as in cplab run)");
  cli.add_option("--dtype", p.dtype, "float | double: the element type, which sets the bytes of every message\n"
                                     "(as in cplab run)")->capture_default_str();
  cli.add_option("--phase", phase, "ring view: fwd | bwd")->capture_default_str();
  app::int_range(cli.add_option("--step", step, "ring view: the step of that phase")->capture_default_str(), 0,
                 INT32_MAX);
  app::int_range(cli.add_option("--zoom-from", L.zoom0, "ownership view: first token of the token-level strip (< seq)"),
                 0, kMaxPackedTokens);
  cli.add_option("--trace", p.trace_file, "timeline view: a trace file from `cplab run --trace` or `cplab-bench cp --trace`\n"
                                          "(its measured times; without it the run is modelled as by cplab plan)");
  // the timeline's model: cplab plan's options, defaults and rules (plan/perf_options.h)
  PerfOptions& perf = p.perf;
  std::string link;
  cli.add_option("--gpu", perf.gpu, "timeline: GPU preset: " + preset_choices(gpu_preset_names()))->capture_default_str();
  CLI::Option* intra = cli.add_option("--intra", perf.intra, "timeline: link inside a node: " + preset_choices(link_preset_names()))
                           ->capture_default_str();
  CLI::Option* inter = cli.add_option("--inter", perf.inter, "timeline: link across nodes: " + preset_choices(link_preset_names()))
                           ->capture_default_str();
  cli.add_option("--link", link, "timeline: one link preset for both --intra and --inter")->excludes(intra)->excludes(inter);
  cli.add_option("--gpus-per-node", perf.gpus_per_node, "timeline: GPUs per node (the intra link inside, the inter link across);\n"
                                                        "cp must fill whole nodes, as in cplab plan")->capture_default_str();
  cli.add_option("--tau-us", perf.tau_us, "timeline: fixed cost per tile in microseconds")->capture_default_str();
  std::string check_report;
  cli.add_option("--check-report", check_report, "check view: a `cplab check --json` report (its error heat map)");
  cli.add_option("--ranks", p.ranks, "scheduler: ranks")->capture_default_str();
  cli.add_option("--max-seqlen-per-rank", p.max_per_rank, "scheduler: tokens per rank")->capture_default_str();
  cli.add_option("--lengths", p.lengths, "scheduler: the batch")->capture_default_str();
  cli.add_option("--dist", p.dist, "scheduler: draw the batch from a distribution file (data/dcp/*.json)");
  cli.add_option("--batch-size", p.batch_size, "scheduler with --dist: sequences per batch (0: the file's)");
  cli.add_option("--seed", seed, "scheduler with --dist: seed")->capture_default_str();
  cli.add_option("--schedule-json", p.schedule_json, "scheduler: the batch of a `cplab schedule --json` file");
  cli.add_option("--cost", p.cost, "scheduler: l2 | overhead")->capture_default_str();
  cli.add_option("--cost-param", p.cost_params, "scheduler: a=..,alpha=..,beta=..,o=..");
  int lesson = 0, page = 1;  // a lesson's page: lesson_mode.h (its arguments, parsed by this function)
  CLI::Option* lesson_opt =
      cli.add_option("--lesson", lesson,
                     "open lesson N's page (1.." + std::to_string(lesson::viz_lessons().size()) +
                         "): its view, run and step beside its explanation, with Previous / Next;\n"
                         "only --page and the display options may be given beside it");
  // values an int holds go on to lesson_mode.h's rules (--lesson 17: there are 16 lessons); others stop here
  const std::string lessons = std::to_string(lesson::viz_lessons().size());
  size_t most_pages = 0;
  for (const auto& l : lesson::viz_lessons()) most_pages = std::max(most_pages, l.pages.size());
  app::int_range(lesson_opt, INT32_MIN, INT32_MAX,
                 "is not a lesson: there are " + lessons + " lessons (1.." + lessons + ")");
  app::int_range(cli.add_option("--page", page, "with --lesson: the lesson's page K")->capture_default_str(), INT32_MIN,
                 INT32_MAX, "is not a page: a lesson has at most " + std::to_string(most_pages) + " pages");
  app::strict_numbers(cli);
  cli.parse(argc, argv);
  if (cli.get_option("--lesson")->count() > 0 || cli.get_option("--page")->count() > 0) return launch_lesson(cli, lesson, page);

  const auto names = view_names();
  const auto it = std::find(names.begin(), names.end(), view);
  require(it != names.end(), "--view " + view + " is not one of: ownership, ring, masks, scheduler, timeline, check");
  L.view = static_cast<int>(it - names.begin());
  require(phase == "fwd" || phase == "bwd", "--phase " + phase + " is not fwd or bwd");
  require(seed >= 0, "--seed " + std::to_string(seed) + " must be >= 0");
  require(L.frames >= 1 && L.frames <= 1000, "--frames " + std::to_string(L.frames) + " must be in [1, 1000]");
  require(L.bench >= 0 && L.bench <= 100000, "--bench-frames " + std::to_string(L.bench) + " must be in [1, 100000]");
  require(L.zoom0 >= 0, "--zoom-from " + std::to_string(L.zoom0) + " must be >= 0");
  require(!L.headless || !L.out.empty(), "--headless needs --out FILE.png");
  require(L.out.empty() || L.headless, "--out needs --headless");
  require(L.scene_json.empty() || L.headless, "--scene-json needs --headless (it records the frame the PNG shows)");
  if (cli.get_option("--link")->count() > 0) perf.intra = perf.inter = link;  // an empty or unknown name: link_preset says so
  for (const auto& [name, text] : {std::pair<const char*, const std::string*>{"--trace", &p.trace_file},
                                   {"--dist", &p.dist}, {"--schedule-json", &p.schedule_json}, {"--out", &L.out},
                                   {"--scene-json", &L.scene_json}})
    require(!(cli.get_option(name)->count() > 0 && text->empty()), std::string(name) + " needs a value, got an empty string");
  p.seed = static_cast<std::uint64_t>(seed);
  s.layout = parse_layout(layout);
  app::apply_mask_options(mask, s);  // after --causal / --no-causal: CpSpec checks the rules
  if (!cu.empty()) s.cu_seqlens = parse_cu_seqlens(cu);
  if (!hcp.empty()) parse_hcp(hcp, s);
  std::tie(L.W, L.H) = parse_size(size);
  if (cli.get_option("--kv-cache")->count() > 0) {  // an inference step: its own rules (infer_spec.h), its own views
    require(!p.kv_cache.empty(), "--kv-cache needs a value, got an empty string");
    require(view != "scheduler" && view != "check",
            "--kv-cache is for the ownership, ring, masks and timeline views (an inference step), not --view " + view);
    for (const char* name : {"--hcp", "--pad", "--replicate-kv", "--trace", "--backward", "--zoom-from", "--gpu", "--intra",
                             "--inter", "--link", "--gpus-per-node", "--tau-us"})
      require(cli.get_option(name)->count() == 0,
              std::string(name) + " is not for an inference step (--kv-cache): inference has no backward, its timeline shows "
                                  "each variant's bytes and FLOPs per step, and its cache layout is --cache-layout");
    require(is_infer_mode(mode), "--mode " + mode + " is not an inference variant: " + infer_mode_names() + " (with --kv-cache)");
    p.infer_mode = mode;
  } else {
    require(cli.get_option("--cache-layout")->count() == 0, "--cache-layout needs --kv-cache P (an inference step)");
    require(!is_infer_mode(mode) || mode_choices().find(mode) != std::string::npos,
            "--mode " + mode + " is an inference variant: it needs --kv-cache P (the cached tokens; 0 for a first prefill)");
    s.mode = parse_mode(mode);  // modes/mode_table.h: the one parser of mode names
  }

  // build the models the view needs; a broken rule ends here with its message
  require(check_report.empty() || view == "check", "--check-report is for --view check");
  if (view == "check") {
    require(!check_report.empty(), "--view check needs --check-report FILE (the output of cplab check --json)");
    L.check = CheckModel::load(check_report);
    L.check_report = check_report;
    return L;
  }
  if (view == "scheduler") {
    L.sched = SchedModel::build(p);
    return L;
  }
  L.run = RunModel::build(p);
  require(view != "timeline" || L.run->why_no_model.empty(), L.run->why_no_model);  // the timeline's model needs it; other views do not
  if (cli.get_option("--zoom-from")->count() > 0 && !L.run->from_file())
    require(L.zoom0 < L.run->cp().S(),
            "--zoom-from " + std::to_string(L.zoom0) + " must be in [0, " + std::to_string(L.run->cp().S() - 1) +
                "]: the first token of the strip is one of the run's " + std::to_string(L.run->cp().S()) + " tokens");
  const Phase ph = phase == "bwd" ? Phase::bwd : Phase::fwd;
  const auto& st = L.run->steps;
  const auto at = std::find(st.begin(), st.end(), std::make_pair(ph, step));
  if (view == "ring") {
    int lo = -1, hi = -1;
    for (const auto& x : st)
      if (x.first == ph) lo = lo < 0 ? x.second : std::min(lo, x.second), hi = std::max(hi, x.second);
    require(at != st.end(), "--phase " + phase + " --step " + std::to_string(step) + " is not in the trace" +
                                (lo >= 0 ? " (its " + phase + " steps are " + std::to_string(lo) + ".." + std::to_string(hi) + ")"
                                         : " (it has no " + phase + " steps: add --backward)"));
  }
  L.step = at == st.end() ? 0 : static_cast<int>(at - st.begin());
  return L;
}

}  // namespace cplab::viz
