// main.cpp: the cplab-viz command line: an interactive window, one view rendered to a PNG
// (--headless), or the frame-build benchmark (--bench-frames).
//
//   cplab-viz [run and batch options]                                  the app (needs a display)
//   cplab-viz --headless --view V --out FILE.png [--size WxH] [...]     one view to a PNG (its title and
//                                                                      notes printed), then exit
//             [--scene-json FILE.json]                                 and what it drew, as data
//   cplab-viz --bench-frames N --view V [...]                           mean CPU time to build a frame
//   cplab-viz --lesson N [--page K] [display options]                   a lesson's page, its explanation above
// The options, their rules and the models they build are viz/cli/viz_cli.h's; every exception ends
// as "cplab-viz: error: <rule>" and exit 2 (app/cli_common.h).
// What it is not: the app's frame (app.h) or the validation of a run (modes/cp_spec.h does that).
#include <cstdio>

#include "app.h"
#include "cli_common.h"
#include "core/error.h"
#include "core/runtime_env.h"
#include "core/output_file.h"
#include "gl_output.h"
#include "scene_json.h"
#include "viz_cli.h"

using namespace cplab;
using namespace cplab::viz;

int main(int argc, char** argv) {
  cplab::prepare_runtime(argv);  // OpenMP and OpenBLAS settings, read at load time (reference/core/runtime_env.h)
  CLI::App cli{"cplab-viz: context parallelism, drawn from the reference's own layouts, traces and schedules", "cplab-viz"};
  return app::cli_main("cplab-viz", cli, argc, argv, [&] {
    VizLaunch L = parse_viz_args(cli, argc, argv);
    AppState app;
    app.params = L.params;
    app.view = L.view;
    app.vs.step = L.step;
    app.vs.zoom0 = L.zoom0;
    if (L.run) app.run = std::move(*L.run), app.run_ok = true;
    if (L.sched) app.sched = std::move(*L.sched), app.sched_ok = true;
    if (L.check) app.check = std::move(*L.check), app.check_ok = true;
    app.lesson = L.lesson, app.page = L.page;  // --lesson: the pane above the canvas (panel_lesson.cpp)
    if (L.bench > 0) {
      app.controls = true;
      const double ms = bench_frames(app, L.W, L.H, L.bench);
      std::printf("cplab-viz: view %s, %dx%d, %d frames: mean %.3f ms wall time per frame to build it on the CPU (scene + ImGui draw lists, controls pane included; no GPU drawing)\n",
                  view_names()[static_cast<size_t>(L.view)].c_str(), L.W, L.H, L.bench, ms);
      return 0;
    }
    app.controls = !L.headless || L.controls;
    if (!L.headless) {  // the interactive app shows every view: build the other model too, tolerating errors
      if (!app.run_ok) app.rebuild_run();
      if (!app.sched_ok) app.rebuild_sched();
    }
    if (!L.scene_json.empty()) {
      require(!same_file(L.scene_json, L.out), "--scene-json " + L.scene_json + " is the --out file");
      check_writable(L.scene_json, "--scene-json");
    }
    OutputSet outputs;  // the PNG and --scene-json's file: both written, then committed together
    const int rc = run_window(app, L.W, L.H, L.out, L.headless ? L.frames : 0, outputs);
    if (rc != 0) return rc;
    if (!L.scene_json.empty()) {
      const std::string text = scene_json(app.last, view_names()[static_cast<size_t>(L.view)]).dump(1) + "\n";
      outputs.stage(L.scene_json, "--scene-json", [&](std::ostream& out) { out << text; });
    }
    outputs.commit();
    if (L.headless) {
      std::printf("cplab-viz: wrote %s (%dx%d)\n", L.out.c_str(), L.W, L.H);
      // the picture's words, for a reader or a script (tests/viz_plan_check.py)
      std::printf("  %s\n", app.last.title.c_str());
      for (const std::string& n : app.last.notes) std::printf("  %s\n", n.c_str());
    }
    if (!L.scene_json.empty()) std::printf("cplab-viz: wrote %s\n", L.scene_json.c_str());
    return rc;
  });
}
