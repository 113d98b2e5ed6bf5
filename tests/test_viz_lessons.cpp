// test_viz_lessons.cpp: cplab-viz's lesson pages (tutorials/viz_pages.json through
// viz/cli/lesson_mode.h), without a display: every page's arguments parse with cplab-viz's own
// option parser, and the Scene of its view shows every number its explanation quotes as shown
// (`numbers`: in the title, notes, texts or primitives' info) and none of those it says the view does
// not show (`lesson_only`); Next / Previous walk every page of every lesson in order; --lesson and
// --page obey their rules; the lesson programs' closing commands are the pages' arguments.
// What it is not: the check that the lesson programs print those numbers (tutorials/
// check_viz_pages.py runs them), or of the pane's drawing (the headless renders of that check).
#include <doctest/doctest.h>

#include <algorithm>
#include <cctype>
#include <string>
#include <vector>

#include "core/error.h"
#include "lesson_mode.h"
#include "viz_pages.h"

using namespace cplab;
using namespace cplab::viz;

namespace {

// `number` occurs in `text` as a whole number: no digit, letter or '.' right before it (when it starts
// with a digit) and none right after it (when it ends with one), except trailing zeros after a
// decimal point ("176.5" is in "176.50", "192" in "192.00"; "1.0878" is not in "1.08782").
// check_viz_pages.py applies the same rule to the lessons' output.
bool appears(const std::string& text, const std::string& number) {
  auto alnum = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0; };
  auto digit = [](char c) { return std::isdigit(static_cast<unsigned char>(c)) != 0; };
  for (size_t at = text.find(number); at != std::string::npos; at = text.find(number, at + 1)) {
    if (digit(number.front()) && at > 0 && (alnum(text[at - 1]) || text[at - 1] == '.')) continue;
    size_t e = at + number.size();
    if (!digit(number.back()) || e == text.size()) return true;
    bool point = number.find('.') != std::string::npos;
    if (!point && text[e] == '.' && e + 1 < text.size() && digit(text[e + 1])) point = true, ++e;
    if (point)
      while (e < text.size() && text[e] == '0') ++e;
    if (e == text.size() || !(alnum(text[e]) || (text[e] == '.' && e + 1 < text.size() && digit(text[e + 1])))) return true;
  }
  return false;
}

// everything a Scene says: title, notes, hover, each primitive's text and info
std::string scene_text(const Scene& s) {
  std::string t = s.title + "\n" + s.hover + "\n";
  for (const std::string& n : s.notes) t += n + "\n";
  for (const Prim& p : s.prims) t += p.text + "\n" + p.info + "\n";
  return t;
}

VizLaunch parse(std::vector<std::string> args) {
  args.insert(args.begin(), "cplab-viz");
  std::vector<const char*> argv;
  for (const std::string& a : args) argv.push_back(a.c_str());
  CLI::App cli;
  return parse_viz_args(cli, static_cast<int>(argv.size()), argv.data());
}

std::string error_of(const std::vector<std::string>& args) {
  try {
    parse(args);
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

}  // namespace

TEST_CASE("viz lessons: the number rule of the pages' checks") {
  CHECK(appears("makespan 192.00, lower bound 176.50", "192"));
  CHECK(appears("makespan 192.00, lower bound 176.50", "176.5"));
  CHECK(appears("this step [512, 512]", "512"));
  CHECK(appears("4 x 256 B, 1 KiB", "256 B"));
  CHECK_FALSE(appears("ratio 1.08782", "1.0878"));
  CHECK_FALSE(appears("1920 and 1.2", "192"));
  CHECK_FALSE(appears("4096", "409"));
  CHECK_FALSE(appears("s0 and CP8", "8"));
  CHECK_FALSE(appears("0.5120", "512"));
}

TEST_CASE("viz lessons: every page opens with cplab-viz's own parser and its view shows the numbers its text quotes") {
  const auto& lessons = lesson::viz_lessons();
  CHECK(lessons.size() == 16);
  for (const lesson::VizLesson& l : lessons) {
    CHECK(l.pages.size() >= 1);
    CHECK(l.pages.size() <= 3);
    for (size_t k = 0; k < l.pages.size(); ++k) {
      const lesson::VizPage& pg = l.pages[k];
      const PageRef at{l.number, static_cast<int>(k) + 1};
      INFO("lesson " << l.number << " page " << at.page << ": cplab-viz " << pg.args);
      const VizLaunch L = launch_page(at);
      CHECK(L.lesson == at.lesson);
      CHECK(L.page == at.page);
      // the page's own command opens the same launch (no lesson pane): same view, step and parameters
      const VizLaunch plain = parse(pg.argv());
      CHECK(plain.lesson == 0);
      CHECK(plain.view == L.view);
      CHECK(plain.step == L.step);
      CHECK(plain.params.cp.cp == L.params.cp.cp);
      const std::string shown = scene_text(launch_scene(L, 1280, 560));
      for (const std::string& n : pg.numbers) {
        INFO("number " << n);
        CHECK(appears(pg.text, n));
        CHECK(appears(shown, n));
      }
      for (const std::string& n : pg.lesson_only) {
        INFO("lesson_only number " << n << " (the view shows it: move it to `numbers`)");
        CHECK(appears(pg.text, n));
        CHECK_FALSE(appears(shown, n));
      }
      const std::string words = pg.text + pg.title;  // ASCII: ImGui's default font has nothing else
      CHECK(std::all_of(words.begin(), words.end(), [](char c) { return c >= 32 && c < 127; }));
    }
  }
}

TEST_CASE("viz lessons: Next and Previous walk every page of every lesson in order, across lessons") {
  const auto& lessons = lesson::viz_lessons();
  std::vector<PageRef> all;
  for (const lesson::VizLesson& l : lessons)
    for (size_t k = 0; k < l.pages.size(); ++k) all.push_back({l.number, static_cast<int>(k) + 1});
  PageRef at{1, 1};
  for (size_t i = 0; i < all.size(); ++i) {
    CHECK(at == all[i]);
    const PageRef next = next_page(at);
    if (i + 1 < all.size()) CHECK(prev_page(next) == at);
    at = next;
  }
  CHECK_FALSE(at.open());  // after the last page of the last lesson: none
  CHECK_FALSE(prev_page({1, 1}).open());
  const int n3 = static_cast<int>(lessons[2].pages.size());
  CHECK(next_page({3, n3}) == PageRef{4, 1});  // Next on a lesson's last page: the next lesson's first page
  CHECK(prev_page({4, 1}) == PageRef{3, n3});
  CHECK(page_heading({3, 1}) == lessons[2].title + " - page 1 of " + std::to_string(n3));
  CHECK(page_command({3, 1}) == "cplab-viz " + lessons[2].pages[0].args);
  CHECK_THROWS_AS(next_page({static_cast<int>(lessons.size()) + 1, 1}), Error);  // past the last lesson
}

TEST_CASE("viz lessons: --lesson and --page obey their rules, exit-2 errors naming them") {
  const std::string n = std::to_string(lesson::viz_lessons().size()), past = std::to_string(lesson::viz_lessons().size() + 1);
  const int pages3 = static_cast<int>(lesson::viz_lessons()[2].pages.size());
  CHECK(error_of({"--lesson", past}) == "--lesson " + past + ": there are " + n + " lessons (1.." + n + ")");
  CHECK(error_of({"--lesson", "0"}) == "--lesson 0: there are " + n + " lessons (1.." + n + ")");
  CHECK(error_of({"--lesson", "3", "--page", "9"}) ==
        "--page 9: lesson 3 has " + std::to_string(pages3) + " pages (1.." + std::to_string(pages3) + ")");
  CHECK(error_of({"--lesson", "1", "--page", "2"}) == "--page 2: lesson 1 has 1 page (1)");
  CHECK(error_of({"--page", "2"}).find("needs --lesson") != std::string::npos);
  // a page sets the view and the run: an explicit run or view option is refused, naming it
  CHECK(error_of({"--lesson", "3", "--cp", "8"}).rfind("--cp cannot be given with --lesson", 0) == 0);
  CHECK(error_of({"--lesson", "3", "--view", "masks"}).rfind("--view cannot be given with --lesson", 0) == 0);
  CHECK(error_of({"--lesson", "3", "--no-causal"}).rfind("--no-causal cannot be given with --lesson", 0) == 0);
  // the display options pass through, and their rules still hold
  const VizLaunch L = parse({"--lesson", "3", "--page", "2", "--headless", "--out", "x.png", "--size", "800x600", "--frames", "2"});
  CHECK(L.lesson == 3);
  CHECK(L.page == 2);
  CHECK(L.headless);
  CHECK(L.out == "x.png");
  CHECK((L.W == 800 && L.H == 600 && L.frames == 2));
  CHECK(L.params.cp.seq == parse(lesson::viz_lessons()[2].pages[1].argv()).params.cp.seq);
  CHECK(parse({"--lesson", "4"}).page == 1);
  CHECK(error_of({"--lesson", "3", "--headless"}) == "--headless needs --out FILE.png");
}

TEST_CASE("viz lessons: the lesson programs' closing cplab-viz commands are the pages' arguments") {
  for (const lesson::VizLesson& l : lesson::viz_lessons()) {
    const std::vector<std::string> c = lesson::viz_commands(l.number);
    REQUIRE(c.size() == l.pages.size() + 1);
    CHECK(c[0].rfind("cplab-viz --lesson " + std::to_string(l.number) + "   (", 0) == 0);
    for (size_t k = 0; k < l.pages.size(); ++k)
      CHECK(c[k + 1] == "cplab-viz " + l.pages[k].args + "   (" + l.pages[k].title + ")");
  }
  CHECK_THROWS_AS(lesson::viz_commands(0), Error);
}
