// viz_pages.cpp: the embedded tutorials/viz_pages.json, parsed and checked once (see viz_pages.h).
#include "viz_pages.h"

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "viz_pages_json.h"

namespace cplab::lesson {

namespace {

std::string text_of(const nlohmann::json& j, const char* key, const std::string& where) {
  require(j.contains(key) && j.at(key).is_string() && !j.at(key).get<std::string>().empty(),
          "tutorials/viz_pages.json: " + where + " needs a non-empty string '" + key + "'");
  return j.at(key).get<std::string>();
}

std::vector<std::string> strings_of(const nlohmann::json& j, const char* key, const std::string& where) {
  std::vector<std::string> v;
  if (!j.contains(key)) return v;
  require(j.at(key).is_array(), "tutorials/viz_pages.json: " + where + ": '" + key + "' must be a list of strings");
  for (const auto& x : j.at(key)) {
    require(x.is_string(), "tutorials/viz_pages.json: " + where + ": '" + key + "' must be a list of strings");
    v.push_back(x.get<std::string>());
  }
  return v;
}

std::vector<VizLesson> parse() {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(kVizPagesJson);
  } catch (const nlohmann::json::exception& e) {
    throw Error(std::string("tutorials/viz_pages.json is not valid JSON: ") + e.what());
  }
  require(j.contains("lessons") && j.at("lessons").is_array(), "tutorials/viz_pages.json needs a list 'lessons'");
  std::vector<VizLesson> out;
  for (const auto& l : j.at("lessons")) {
    VizLesson x;
    x.number = static_cast<int>(out.size()) + 1;
    const std::string where = "lesson " + std::to_string(x.number);
    require(l.contains("lesson") && l.at("lesson") == x.number, "tutorials/viz_pages.json: the lessons must be numbered 1, 2, ... in order (" + where + ")");
    x.dir = text_of(l, "dir", where);
    x.title = text_of(l, "title", where);
    require(l.contains("pages") && l.at("pages").is_array() && !l.at("pages").empty(), "tutorials/viz_pages.json: " + where + " needs a non-empty list 'pages'");
    for (const auto& p : l.at("pages")) {
      const std::string pw = where + " page " + std::to_string(x.pages.size() + 1);
      VizPage g;
      g.title = text_of(p, "title", pw);
      g.args = text_of(p, "args", pw);
      // the explanation: a list of lines, joined into one paragraph (the app wraps it)
      for (const std::string& line : strings_of(p, "text", pw)) g.text += (g.text.empty() ? "" : " ") + line;
      require(!g.text.empty(), "tutorials/viz_pages.json: " + pw + " needs its explanation 'text'");
      g.numbers = strings_of(p, "numbers", pw);
      g.lesson_only = strings_of(p, "lesson_only", pw);
      x.pages.push_back(std::move(g));
    }
    out.push_back(std::move(x));
  }
  require(!out.empty(), "tutorials/viz_pages.json lists no lesson");
  return out;
}

}  // namespace

std::vector<std::string> VizPage::argv() const {
  std::vector<std::string> v;
  size_t i = 0;
  while (i < args.size()) {
    const size_t e = args.find(' ', i);
    const std::string w = args.substr(i, e == std::string::npos ? std::string::npos : e - i);
    if (!w.empty()) v.push_back(w);
    if (e == std::string::npos) break;
    i = e + 1;
  }
  return v;
}

const std::vector<VizLesson>& viz_lessons() {
  static const std::vector<VizLesson> lessons = parse();
  return lessons;
}

std::vector<std::string> viz_commands(int lesson) {
  const auto& all = viz_lessons();
  require(lesson >= 1 && lesson <= static_cast<int>(all.size()), "lesson " + std::to_string(lesson) + ": there are " +
                                                                     std::to_string(all.size()) + " lessons (1.." +
                                                                     std::to_string(all.size()) + ")");
  const VizLesson& l = all[static_cast<size_t>(lesson - 1)];
  std::vector<std::string> v = {"cplab-viz --lesson " + std::to_string(lesson) + "   (" +
                                (l.pages.size() == 1 ? "the view below" : "the views below") + " with explanations, in the app)"};
  for (const VizPage& p : l.pages) v.push_back("cplab-viz " + p.args + "   (" + p.title + ")");
  return v;
}

}  // namespace cplab::lesson
