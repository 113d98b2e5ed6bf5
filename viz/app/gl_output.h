// gl_output.h: where cplab-viz's frames go: a window, a PNG (headless), or nowhere (--bench-frames).
//
// What it is: run_window (GLFW + OpenGL3 window; interactive until closed, or `frames` frames then
// the last one encoded with stb_image_write and written to a PNG whole or not at all,
// core/output_file.h), and bench_frames (ImGui without any backend: builds N frames on the CPU and
// returns the mean time per frame; needs no display).
// No display: run_window returns an error naming the fixes (xvfb-run, DISPLAY), never crashes.
// What it is not: what a frame contains (app.h).
#pragma once

#include <string>

#include "app.h"
#include "core/output_file.h"

namespace cplab::viz {

// returns a process exit code; png empty = interactive; a png path that cannot be written throws
// cplab::Error before anything is drawn; the PNG is staged in out (committed by the caller, with
// the other outputs of the call), a failed write is exit 2 with the path and the reason
int run_window(AppState& app, int W, int H, const std::string& png, int frames, OutputSet& out);
// mean CPU milliseconds to build one frame (scene + ImGui draw lists), over n frames; cplab::Error
// when the first timed frame shows that n of them would take more than kMaxBenchSeconds
inline constexpr double kMaxBenchSeconds = 60;
double bench_frames(AppState& app, int W, int H, int n);

}  // namespace cplab::viz
