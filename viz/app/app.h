// app.h: cplab-viz's state and its frame: the controls pane and the current view's canvas.
//
// What it is: AppState (the parameters, the models the reference built from them, the view state,
// the play clock of the ring view, the open lesson page), draw_frame (one ImGui frame: controls +
// lesson pane + canvas, used alike by the interactive window, the headless PNG renderer and
// --bench-frames), and the per-panel control functions (one file each: panel_*.cpp) with the "(?)"
// help marker they share.
// What it is not: windowing or OpenGL (gl_output.h), or any drawing logic of a view (viz/scene).
#pragma once

#include <array>
#include <functional>
#include <map>
#include <string>

#include "model.h"
#include "typed_input.h"
#include "viz_cli.h"
#include "views.h"

namespace cplab::viz {

struct AppState {
  VizParams params;
  RunModel run;
  SchedModel sched;
  std::string run_error, sched_error;  // the rule the last edit broke (the previous model stays shown)
  bool run_ok = false, sched_ok = false;
  CheckModel check;  // the check view's report (--check-report)
  bool check_ok = false;
  std::string check_file;  // the report's file, when it came from one (the browser's address names it)
  std::string check_text;  // the text report of a check run in the app (the browser's dropped .npy files)
  int view = 0;  // index into view_names()
  ViewState vs;
  bool playing = false;
  float steps_per_second = 1.0f;
  double play_clock = 0;
  bool controls = true;  // the controls pane is shown
  Scene last;            // the canvas's scene of the last frame drawn (--scene-json writes it)
  float notes_h = 0;     // the canvas notes' wrapped height in the last frame (the canvas leaves room for them)
  // the open lesson page (viz/cli/lesson_mode.h; lesson 0: none) and the edits' generation: text
  // fields that keep their own buffer (cu_seqlens, lengths) reload it when params_version changes
  int lesson = 0, page = 0;
  int params_version = 0;
  std::string lesson_error;
  void rebuild_run();    // keep the old model and set run_error if the parameters break a rule
  void rebuild_sched();
  // open a lesson page: its parameters, view, step and models (both built, tolerating errors), as
  // cplab-viz --lesson N --page K would start; a page that cannot open sets lesson_error
  void open_page(int lesson, int page);
  // show what a command line (or a page address) opened: its view, step, parameters and models; the
  // models it did not build are built too, tolerating errors (every view can be chosen)
  void launch(VizLaunch&& L);
  // the platform's part of the controls pane, drawn at its end (the browser build's Open button and
  // its last error; none on the desktop), and the error it shows (empty: none)
  std::function<void(AppState&)> platform_controls;
  std::string page_error;
  // where some controls were drawn in the last frame, {x0, y0, x1, y1} in pixels, by name ("Next >",
  // "< Previous", "view:ring", ...): the browser build's tests click them where a user would
  std::map<std::string, std::array<float, 4>> items;
};

// records the last ImGui item's rectangle in app.items under name
void note_item(AppState& app, const std::string& name);

// the look both builds share (ImGui's dark style, square windows, the canvas's background)
void app_style();

// one frame of the whole app, W x H pixels (call between ImGui::NewFrame and ImGui::Render)
void draw_frame(AppState& app, float W, float H, double dt_seconds);
// the Scene of the current view on a W x H canvas (or the rule its model broke, as its title)
Scene build_view(const AppState& app, const ViewState& vs, float W, float H);

// the "(?)" marker: hovering it shows `text`
void help(const char* text);
// the rule the last edit broke, in red, wrapped at the pane's edge (never clipped)
void error_text(const std::string& text);
// shared run parameters (mode, cp, seq, heads, kv heads, layout, hcp sizes, cu_seqlens, causal);
// true when something changed
bool run_controls(AppState& app);
void panel_ownership(AppState& app);
void panel_ring(AppState& app);
void panel_masks(AppState& app);
void panel_scheduler(AppState& app);
void panel_timeline(AppState& app);
// the lesson pane at (x, 0), w wide, when a lesson page is open: heading, page title, explanation,
// Previous / Next (panel_lesson.cpp); returns its height (0 when no lesson is open)
float lesson_pane(AppState& app, float x, float w);

}  // namespace cplab::viz
