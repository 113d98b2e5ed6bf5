// viz_cli.h: the command line of cplab-viz, without a window: its options, their rules, and the
// models (viz/scene/model.h) the chosen view needs, built by the reference.
//
// What it is: VizLaunch (everything main needs to open the window, render a PNG or time frames)
// and parse_viz_args, which registers cplab-viz's options on a CLI11 app, parses argv (every
// numeric option strict: app/cli_common.h) and builds the models. Bad input throws (CLI::ParseError
// or cplab::Error naming the rule); app/cli_common.h's cli_main turns that into exit 2. --lesson N
// opens a lesson's page instead: its arguments, parsed here too (lesson_mode.h). It has no
// ImGui or OpenGL, so the sanitizer build (which has no cplab-viz) tests cplab-viz's parsing here.
// What it is not: the app (viz/app), or a rule of a run (modes/cp_spec.h) or a schedule (dcp/).
#pragma once

#include <CLI/CLI.hpp>
#include <optional>
#include <string>

#include "check_model.h"
#include "model.h"

namespace cplab::viz {

struct VizLaunch {
  VizParams params;
  int view = 1;             // index into view_names()
  int step = 0;             // ring view: index into RunModel::steps
  index_t zoom0 = 0;        // ownership view: first token of the zoom strip
  std::optional<RunModel> run;      // built when the view draws a run
  std::optional<SchedModel> sched;  // built for the scheduler view
  std::optional<CheckModel> check;  // read for the check view (--check-report)
  std::string check_report;         // that file
  int W = 1280, H = 720;    // --size
  bool headless = false, controls = false;
  std::string out;          // --headless: the PNG
  std::string scene_json;   // --headless: what the last frame's view drew, as JSON (scene_json.h)
  int frames = 3;           // --headless: frames before the PNG
  int bench = 0;            // --bench-frames
  int lesson = 0, page = 0; // --lesson N --page K (1-based; 0: no lesson): lesson_mode.h built the rest
};

// cli: an empty CLI11 app; argv as main got it. Throws CLI::ParseError (including CallForHelp)
// or cplab::Error.
VizLaunch parse_viz_args(CLI::App& cli, int argc, const char* const* argv);

}  // namespace cplab::viz
