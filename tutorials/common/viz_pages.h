// viz_pages.h: every lesson's cplab-viz pages, from tutorials/viz_pages.json (the one definition).
//
// What it is: VizLesson (a lesson's number, folder and title) and its VizPages in order, each with a
// title, the cplab-viz arguments that open it (view and run options, exactly what the lesson's "see
// it" command passes), a short explanation, and the numbers the explanation quotes: `numbers` the
// view shows and the lesson prints, `lesson_only` the lesson prints but the view does not show. The
// JSON is embedded at build time (tutorials/CMakeLists.txt), so an installed cplab-viz needs no
// source tree. The lesson programs print their "see it" commands from here (viz_commands), and
// cplab-viz --lesson N opens the same pages (viz/cli/lessons.h).
// What it is not: the option parser (viz/cli/viz_cli.h parses `args`), or the checks that the numbers
// are what the view shows and the lesson prints (tests/test_viz_lessons.cpp, tutorials/check_viz_pages.py).
#pragma once

#include <string>
#include <vector>

namespace cplab::lesson {

struct VizPage {
  std::string title;                     // also the comment of the lesson's printed command
  std::string args;                      // cplab-viz's options, separated by single spaces
  std::string text;                      // the explanation: plain ASCII, one paragraph
  std::vector<std::string> numbers;      // quoted in text, shown by the view, printed by the lesson
  std::vector<std::string> lesson_only;  // quoted in text, printed by the lesson, not shown by the view
  std::vector<std::string> argv() const;  // args split at the spaces
};

struct VizLesson {
  int number = 0;        // 1..viz_lessons().size(), in order
  std::string dir;       // tutorials/<dir>, e.g. 03_naive_ring
  std::string title;     // the README's heading, e.g. "Lesson 3: a naive ring: KV moves, Q stays"
  std::vector<VizPage> pages;
};

// every lesson, in order; parsed once (a malformed file throws cplab::Error naming what is wrong)
const std::vector<VizLesson>& viz_lessons();
// the lesson's closing cplab-viz lines, "cplab-viz ARGS   (TITLE)" per page after the one that opens
// them all with their explanations; throws cplab::Error for a lesson that does not exist
std::vector<std::string> viz_commands(int lesson);

}  // namespace cplab::lesson
