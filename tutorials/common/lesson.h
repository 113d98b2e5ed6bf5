// lesson.h: what every tutorial program shares: steps, pauses, and printing numbers a reader can
// check.
//
// What it is: Lesson, built from main's arguments (--interactive: pause for Enter between steps;
// --help), with step("title") printing "== Step N: title ==" (and, interactively, waiting for
// Enter first, never hanging when stdin ends), and small printers (vectors, matrices, tables of
// per-rank values) with fixed formats, so a lesson's README can quote the output and a test can
// find its key lines. Every number a lesson prints comes from the library (reference/, viz scene
// data); a lesson never carries its own copy of an algorithm, and where it works a closed form out
// by hand to teach it, agrees() checks that against the library's value.
// What it is not: a test framework (tutorials/check_lesson.py checks the printed lines), or a UI.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "run/experiment.h"

namespace cplab::lesson {

class Lesson {
 public:
  // parses --interactive / --help; title and summary are printed at the start
  Lesson(int argc, char** argv, std::string title, std::string summary);
  bool interactive() const { return interactive_; }
  bool help_requested() const { return help_; }
  // a new step: pauses first when interactive (after the first step), then prints its header
  void step(const std::string& title);
  // the closing lines: the cplab-viz commands that show the same thing, which are lesson `number`'s
  // pages in tutorials/viz_pages.json (viz_pages.h: the one definition, also what cplab-viz --lesson
  // opens), then cplab commands to try; each "command   (comment)": check_lesson.py runs every one of
  // them, so they must work. Exits 1 if the title differs from the lesson's title in viz_pages.json.
  void finish(int number, const std::vector<std::string>& try_commands);

 private:
  std::string title_;
  bool interactive_ = false, help_ = false;
  int steps_ = 0;
};

// "name = value" with a fixed number format (%.6g for doubles), the form tests look for
std::string fmt(double x);
void show(const std::string& name, double x);
void show(const std::string& name, std::int64_t x);
void show(const std::string& name, const std::string& text);
// "yes" / "no"
inline std::string yes(bool b) { return b ? "yes" : "no"; }
// a lesson's own worked arithmetic must equal the library's (e.g. a closed form it derives by hand
// against CpSpec::comm_per_rank): prints nothing when it does; otherwise says so on stderr, exits 1
void agrees(const std::string& what, std::int64_t lesson, std::int64_t library);
// "error of O = ..." for each error the run measured (O, LSE, dQ, dK, dV: max|x - ref| / max|ref|)
void show_errors(const RunReport& rep);
// [a, b, c] with fmt()
std::string list(const std::vector<double>& v);
std::string list(const std::vector<std::int64_t>& v);
// a rows x cols matrix, row-major, each entry fmt()'d right-aligned in `width` after a space
void matrix(const std::string& name, const std::vector<double>& m, std::int64_t rows, std::int64_t cols, int width = 9);
// a table: a header row and rows of cells, columns padded to their widest cell
void table(const std::vector<std::string>& header, const std::vector<std::vector<std::string>>& rows);

}  // namespace cplab::lesson
