// lesson_mode.cpp: cplab-viz's lesson pages: rules, navigation, launch (see lesson_mode.h).
#include "lesson_mode.h"

#include <algorithm>

#include "core/error.h"
#include "views.h"

namespace cplab::viz {

namespace {

// the options a page may not be given beside: everything but these (a page sets the view and the run)
const std::vector<std::string> kDisplay = {"--lesson", "--page", "--headless", "--out", "--scene-json", "--size",
                                           "--controls", "--frames", "--bench-frames"};
const std::vector<std::string> kDisplayFlags = {"--headless", "--controls"};

std::string display_list() {
  std::string t;
  for (size_t i = 1; i < kDisplay.size(); ++i) t += (i > 1 ? ", " : "") + kDisplay[i];
  return t;
}

}  // namespace

const lesson::VizLesson& lesson_of(int lesson) {
  const auto& all = lesson::viz_lessons();
  const std::string n = std::to_string(all.size());
  require(lesson >= 1 && lesson <= static_cast<int>(all.size()),
          "--lesson " + std::to_string(lesson) + ": there are " + n + " lessons (1.." + n + ")");
  return all[static_cast<size_t>(lesson - 1)];
}

const lesson::VizPage& page_of(PageRef r) {
  const lesson::VizLesson& l = lesson_of(r.lesson);
  const std::string n = std::to_string(l.pages.size());
  require(r.page >= 1 && r.page <= static_cast<int>(l.pages.size()),
          "--page " + std::to_string(r.page) + ": lesson " + std::to_string(r.lesson) + " has " + n +
              (l.pages.size() == 1 ? " page (1)" : " pages (1.." + n + ")"));
  return l.pages[static_cast<size_t>(r.page - 1)];
}

PageRef next_page(PageRef r) {
  page_of(r);
  if (r.page < static_cast<int>(lesson_of(r.lesson).pages.size())) return {r.lesson, r.page + 1};
  if (r.lesson < static_cast<int>(lesson::viz_lessons().size())) return {r.lesson + 1, 1};
  return {};
}

PageRef prev_page(PageRef r) {
  page_of(r);
  if (r.page > 1) return {r.lesson, r.page - 1};
  if (r.lesson > 1) return {r.lesson - 1, static_cast<int>(lesson_of(r.lesson - 1).pages.size())};
  return {};
}

std::string page_heading(PageRef r) {
  page_of(r);
  const lesson::VizLesson& l = lesson_of(r.lesson);
  return l.title + " - page " + std::to_string(r.page) + " of " + std::to_string(l.pages.size());
}

std::string page_command(PageRef r) { return "cplab-viz " + page_of(r).args; }

VizLaunch launch_page(PageRef r, const std::vector<std::string>& extra) {
  const lesson::VizPage& pg = page_of(r);
  std::vector<std::string> args = {"cplab-viz"};
  for (const std::string& a : pg.argv()) {
    // a page gives view and run options only (and so never opens a lesson itself)
    require(std::find(kDisplay.begin(), kDisplay.end(), a) == kDisplay.end(),
            "tutorials/viz_pages.json: lesson " + std::to_string(r.lesson) + " page " + std::to_string(r.page) + " passes " +
                a + " (a page gives view and run options only)");
    args.push_back(a);
  }
  args.insert(args.end(), extra.begin(), extra.end());
  std::vector<const char*> argv;
  for (const std::string& a : args) argv.push_back(a.c_str());
  CLI::App cli{"cplab-viz lesson page", "cplab-viz"};
  VizLaunch L = parse_viz_args(cli, static_cast<int>(argv.size()), argv.data());
  L.lesson = r.lesson, L.page = r.page;
  return L;
}

VizLaunch launch_lesson(const CLI::App& cli, int lesson, int page) {
  require(cli.get_option("--lesson")->count() > 0, "--page " + std::to_string(page) + " needs --lesson N (the page of which lesson?)");
  std::vector<std::string> extra;  // the display options given, as given
  for (const CLI::Option* o : cli.get_options()) {
    if (o->count() == 0 || o->get_lnames().empty()) continue;
    const std::string name = "--" + o->get_lnames()[0];
    require(std::find(kDisplay.begin(), kDisplay.end(), name) != kDisplay.end(),
            name + " cannot be given with --lesson: the page sets the view and the run its explanation describes "
                   "(beside --lesson only " + display_list() + "; to vary the run, start from the page's command, shown in its pane)");
    if (name == "--lesson" || name == "--page") continue;
    extra.push_back(name);
    if (std::find(kDisplayFlags.begin(), kDisplayFlags.end(), name) == kDisplayFlags.end()) extra.push_back(o->results().back());
  }
  return launch_page({lesson, page}, extra);
}

Scene launch_scene(const VizLaunch& L, float W, float H) {
  ViewState vs;
  vs.step = L.step, vs.zoom0 = L.zoom0;
  const std::string& v = view_names()[static_cast<size_t>(L.view)];
  if (v == "scheduler") return scheduler_view(L.sched.value(), vs, W, H);
  const RunModel& m = L.run.value();
  if (v == "ownership") return ownership_view(m, vs, W, H);
  if (v == "ring") return ring_view(m, vs, W, H);
  if (v == "masks") return masks_view(m, vs, W, H);
  return timeline_view(m, vs, W, H);
}

}  // namespace cplab::viz
