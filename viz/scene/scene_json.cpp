// scene_json.cpp: a Scene's records as JSON (see scene_json.h).
#include "scene_json.h"

namespace cplab::viz {

namespace {
nlohmann::json spans_json(const std::vector<Span>& spans) {
  nlohmann::json a = nlohmann::json::array();
  for (const Span& sp : spans) a.push_back({sp.begin, sp.count, sp.stride});
  return a;
}
}  // namespace

nlohmann::json scene_json(const Scene& s, const std::string& view) {
  nlohmann::json j;
  j["format"] = "cplab-viz scene";
  j["version"] = 1;
  j["view"] = view;
  j["width"] = s.width, j["height"] = s.height;
  j["title"] = s.title;
  j["notes"] = s.notes;
  j["panels"] = nlohmann::json::array();
  for (const PanelRec& p : s.panels) j["panels"].push_back({{"name", p.name}, {"box", {p.x0, p.y0, p.x1, p.y1}}});
  j["tiles"] = nlohmann::json::array();
  for (size_t t = 0; t < s.tiles.size(); ++t) {
    const TileRec& r = s.tiles[t];
    j["tiles"].push_back({{"panel", r.panel >= 0 ? s.panels[static_cast<size_t>(r.panel)].name : std::string()},
                          {"rank", r.rank},
                          {"peer", r.peer},
                          {"phase", r.phase},
                          {"step", r.step},
                          {"rows", spans_json(r.rows)},
                          {"cols", spans_json(r.cols)},
                          {"section", r.section},
                          {"mask", r.mask},
                          {"pairs", r.pairs},
                          {"drawn_pairs", s.drawn_cells(static_cast<int>(t))}});
  }
  j["messages"] = nlohmann::json::array();
  for (const MessageRec& m : s.messages) {
    nlohmann::json x = {{"sender", m.sender}, {"receiver", m.receiver}, {"phase", m.phase}, {"step", m.step},
                        {"op", m.op},         {"tensor", m.tensor},     {"bytes", m.bytes}};
    if (m.t1_us >= 0) x["start_us"] = m.t0_us, x["end_us"] = m.t1_us;
    j["messages"].push_back(std::move(x));
  }
  j["tokens"] = nlohmann::json::array();
  for (const TokenRec& t : s.tokens) j["tokens"].push_back({{"rank", t.rank}, {"layout", t.layout}, {"spans", spans_json(t.spans)}});
  j["samples"] = nlohmann::json::array();
  for (const SampleRec& x : s.samples)
    j["samples"].push_back({{"schedule", x.schedule}, {"round", x.round},         {"sample", x.sample}, {"length", x.length},
                            {"first_rank", x.first_rank}, {"ranks", x.ranks}, {"start", x.t0},      {"end", x.t1}});
  return j;
}

}  // namespace cplab::viz
