// lesson.cpp: Lesson and the printers (see lesson.h).
#include "lesson.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <iostream>

#include "viz_pages.h"

namespace cplab::lesson {

Lesson::Lesson(int argc, char** argv, std::string title, std::string summary) : title_(title) {
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--interactive") interactive_ = true;
    else if (a == "--help" || a == "-h") help_ = true;
    else {
      std::fprintf(stderr, "%s: unknown argument '%s' (use --interactive to pause between steps, --help)\n", argv[0], a.c_str());
      std::exit(2);
    }
  }
  if (help_) {
    std::printf("%s\n%s\n\nusage: %s [--interactive]\n  --interactive  pause for Enter between steps (default: run straight through)\n",
                title.c_str(), summary.c_str(), argv[0]);
    std::exit(0);
  }
  std::printf("%s\n%s\n", title.c_str(), summary.c_str());
}

void Lesson::step(const std::string& title) {
  if (interactive_ && steps_ > 0) {
    std::printf("\n[press Enter for step %d] ", steps_ + 1);
    std::fflush(stdout);
    std::string line;
    if (!std::getline(std::cin, line)) interactive_ = false;  // stdin ended: run through the rest
  }
  ++steps_;
  std::printf("\n== Step %d: %s ==\n", steps_, title.c_str());
}

void Lesson::finish(int number, const std::vector<std::string>& try_commands) {
  const std::vector<VizLesson>& pages = viz_lessons();
  if (number < 1 || number > static_cast<int>(pages.size()) || pages[static_cast<size_t>(number - 1)].title != title_) {
    std::fprintf(stderr, "lesson error: '%s' is not lesson %d of tutorials/viz_pages.json\n", title_.c_str(), number);
    std::exit(1);
  }
  std::printf("\n== See it, try it ==\n");
  for (const std::string& v : viz_commands(number)) std::printf("  %s\n", v.c_str());
  for (const std::string& c : try_commands) std::printf("  %s\n", c.c_str());
}

std::string fmt(double x) {
  if (std::isinf(x)) return x > 0 ? "inf" : "-inf";
  char b[32];
  std::snprintf(b, sizeof b, "%.6g", x);
  return b;
}
void show(const std::string& name, double x) { std::printf("%s = %s\n", name.c_str(), fmt(x).c_str()); }
void show(const std::string& name, std::int64_t x) { std::printf("%s = %lld\n", name.c_str(), static_cast<long long>(x)); }
void show(const std::string& name, const std::string& text) { std::printf("%s = %s\n", name.c_str(), text.c_str()); }

void agrees(const std::string& what, std::int64_t lesson, std::int64_t library) {
  if (lesson == library) return;
  std::fprintf(stderr, "lesson error: %s = %lld by the lesson's arithmetic, %lld by the library\n", what.c_str(),
               static_cast<long long>(lesson), static_cast<long long>(library));
  std::exit(1);
}

void show_errors(const RunReport& rep) {
  const std::pair<const char*, const std::optional<double>*> errs[] = {
      {"O", &rep.err_o}, {"LSE", &rep.err_lse}, {"dQ", &rep.err_dq}, {"dK", &rep.err_dk}, {"dV", &rep.err_dv}};
  for (const auto& [name, e] : errs)
    if (e->has_value()) show(std::string("error of ") + name, **e);
}

std::string list(const std::vector<double>& v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + fmt(v[i]);
  return s + "]";
}
std::string list(const std::vector<std::int64_t>& v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s + "]";
}

void matrix(const std::string& name, const std::vector<double>& m, std::int64_t rows, std::int64_t cols, int width) {
  std::printf("%s (%lld x %lld):\n", name.c_str(), static_cast<long long>(rows), static_cast<long long>(cols));
  for (std::int64_t r = 0; r < rows; ++r) {
    std::printf("  ");
    for (std::int64_t c = 0; c < cols; ++c) std::printf(" %*s", width, fmt(m[static_cast<size_t>(r * cols + c)]).c_str());
    std::printf("\n");
  }
}

void table(const std::vector<std::string>& header, const std::vector<std::vector<std::string>>& rows) {
  std::vector<size_t> w(header.size(), 0);
  for (size_t c = 0; c < header.size(); ++c) w[c] = header[c].size();
  for (const auto& r : rows)
    for (size_t c = 0; c < r.size() && c < w.size(); ++c) w[c] = std::max(w[c], r[c].size());
  auto line = [&](const std::vector<std::string>& r) {
    std::printf(" ");
    for (size_t c = 0; c < w.size(); ++c) std::printf(" %*s", static_cast<int>(w[c]), c < r.size() ? r[c].c_str() : "");
    std::printf("\n");
  };
  line(header);
  for (const auto& r : rows) line(r);
}

}  // namespace cplab::lesson
