// lesson_mode.h: cplab-viz --lesson N [--page K], without a window: which page is open, which comes
// next, its heading and explanation, and the launch (view, run, step, models) its arguments give.
//
// What it is: PageRef (lesson and page, 1-based) and the navigation across pages and lessons
// (Next on a lesson's last page opens the next lesson's first page), the pane's heading, and
// launch_page, which parses a page's arguments with parse_viz_args exactly as if they had been typed
// after `cplab-viz`, so a page obeys every rule of the command line. The pages themselves are
// tutorials/viz_pages.json (tutorials/common/viz_pages.h), embedded at build time.
// Beside --lesson only the display options may be given (--page, --headless, --out, --scene-json, --size,
// --controls, --frames, --bench-frames): a page's view and run options are the ones its explanation
// quotes numbers from, so an explicit --cp, --view, ... is refused with the rule, not merged.
// No ImGui here: the app (viz/app/panel_lesson.cpp) draws the pane; tests/test_viz_lessons.cpp
// checks every page without a display.
// What it is not: the pages' content (viz_pages.json) or the option parser (viz_cli.h).
#pragma once

#include <string>
#include <vector>

#include "scene.h"
#include "viz_cli.h"
#include "viz_pages.h"

namespace cplab::viz {

struct PageRef {
  int lesson = 0, page = 0;  // 1-based; lesson 0: no lesson open (before the first, after the last)
  bool open() const { return lesson > 0; }
  bool operator==(const PageRef&) const = default;
};

// the lesson and page data; a lesson or page that does not exist throws cplab::Error naming the rule:
// "--lesson 17: there are 16 lessons (1..16)", "--page 4: lesson 3 has 2 pages (1..2)"
const lesson::VizLesson& lesson_of(int lesson);
const lesson::VizPage& page_of(PageRef r);
// the page after (before) r, across lessons; a closed PageRef after the last (before the first)
PageRef next_page(PageRef r);
PageRef prev_page(PageRef r);
// "Lesson 3: a naive ring: KV moves, Q stays - page 1 of 2" (ASCII: ImGui's default font has no em dash)
std::string page_heading(PageRef r);
// "cplab-viz --view ring --cp 4 ...": the same view and run without the lesson pane
std::string page_command(PageRef r);
// the page's arguments, then `extra` (display options), parsed by parse_viz_args: the models built,
// lesson and page set in the result
VizLaunch launch_page(PageRef r, const std::vector<std::string>& extra = {});
// parse_viz_args's --lesson / --page branch, after cli parsed them: checks the rules above and
// launches the page with the display options the command line gave
VizLaunch launch_lesson(const CLI::App& cli, int lesson, int page);
// the Scene of the launch's view, step and zoom, W x H pixels (what the app's canvas draws first)
Scene launch_scene(const VizLaunch& L, float W, float H);

}  // namespace cplab::viz
