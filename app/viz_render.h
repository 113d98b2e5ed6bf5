// viz_render.h: a picture of a report drawn by cplab-viz's own renderer, from the cplab command.
//
// What it is: find_viz (cplab-viz beside this cplab: the same folder when installed, ../viz/ in a
// build tree; else CPLAB_VIZ, else PATH), headless_prefix (nothing with a DISPLAY, else `xvfb-run -a`,
// found on PATH), both checked before any work so that a missing renderer is a clear error up front;
// and render_check_png, which writes `cplab check --json`'s report to a temporary file and runs
// `cplab-viz --view check --check-report TMP --headless --out FILE.png` (no shell: arguments passed
// as they are), which writes the PNG whole (core/output_file.h) or not at all.
// What it is not: a renderer (viz/ draws; cplab links no OpenGL) or the check view (viz/scene/view_check.cpp).
#pragma once

#include <string>
#include <vector>

namespace cplab::app {

// the cplab-viz program to run; cplab::Error naming where it looked when there is none
std::string find_viz();
// the command that gives cplab-viz a display: {} when DISPLAY is set, {xvfb-run, -a} otherwise;
// cplab::Error when neither is there
std::vector<std::string> headless_prefix();
// runs cplab-viz on report_json (the check's JSON text) to write png; cplab::Error if it fails
void render_check_png(const std::string& viz, const std::vector<std::string>& prefix, const std::string& report_json,
                      const std::string& png);

}  // namespace cplab::app
