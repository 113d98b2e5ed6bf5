// test_viz_scene.cpp: every cplab-viz view's scene JSON (viz/scene/scene_json.h) checked against the
// reference, over every mode x layout x packing x causal at cp 1, 2, 3, 4 and 8 (issue 20, item 1).
//
// The masks: full, causal, a causal sliding window, a two-sided window and causal chunks. For each
// configuration the reference accepts: the ring view at every step of the forward and the
// backward, the masks view, the ownership view and the timeline view are built, written as scene
// JSON, and checked: every tile drawn is a tile of the trace at that step (rank, KV block, query
// and key positions, mask), the cells it colours are exactly as many as the pairs the reference
// counted, its primitives stay inside its panel; every message drawn is a send of the trace with its
// bytes; an all-to-all step is drawn from the token split to the head split for inputs and back for
// outputs; every rank's tokens are the partition's; nothing is drawn off the canvas. The four false
// pictures of issue 20 (a2a masks spilling out of their panels, half-cell triangles above the
// diagonal, packed tiles drawn as full squares, the output all-to-all drawn as the input one) each
// fail one of these checks.
// What it is not: a test of pixels (tests/viz_render_check.sh renders PNGs) or of the app.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <sstream>
#include <tuple>

#include "core/error.h"
#include "scene_json.h"
#include "views.h"

using namespace cplab;
using namespace cplab::viz;
using nlohmann::json;

namespace {

constexpr float kW = 1264, kH = 640;  // the canvas of a 1280 x 720 window without the controls pane

json spans_json(const std::vector<Span>& spans) {
  json a = json::array();
  for (const Span& sp : spans) a.push_back({sp.begin, sp.count, sp.stride});
  return a;
}

// a tile's identity: rank, KV block's rank, positions, mask
using TileKey = std::tuple<int, int, std::string, std::string, std::string>;
TileKey key_of(const json& t) { return {t["rank"].get<int>(), t["peer"].get<int>(), t["rows"].dump(), t["cols"].dump(), t["mask"].get<std::string>()}; }
TileKey key_of(const Event& e) { return {e.rank, e.peer, spans_json(e.rows).dump(), spans_json(e.cols).dump(), e.mask}; }

// nothing off the canvas; every tile's primitives inside its panel (0.5 px of rounding)
void check_geometry(const Scene& s) {
  for (const Prim& p : s.prims) {
    const size_t n = p.kind == Prim::Kind::circle ? 2 : p.kind == Prim::Kind::text ? 2 : p.pts.size();
    for (size_t i = 0; i + 1 < n; i += 2) {
      INFO("primitive '" << p.tag << "' at (" << p.pts[i] << ", " << p.pts[i + 1] << ")");
      CHECK(p.pts[i] >= -0.5f);
      CHECK(p.pts[i] <= s.width + 0.5f);
      CHECK(p.pts[i + 1] >= -0.5f);
      CHECK(p.pts[i + 1] <= s.height + 0.5f);
    }
    if (p.tile < 0) continue;
    const PanelRec& b = s.panels.at(static_cast<size_t>(s.tiles.at(static_cast<size_t>(p.tile)).panel));
    for (size_t i = 0; i + 1 < p.pts.size(); i += 2) {
      INFO("tile primitive '" << p.tag << "' of rank " << p.rank << " at (" << p.pts[i] << ", " << p.pts[i + 1] << ") outside panel '"
                              << b.name << "' [" << b.x0 << ", " << b.x1 << "] x [" << b.y0 << ", " << b.y1 << "]");
      CHECK(p.pts[i] >= b.x0 - 0.5f);
      CHECK(p.pts[i] <= b.x1 + 0.5f);
      CHECK(p.pts[i + 1] >= b.y0 - 0.5f);
      CHECK(p.pts[i + 1] <= b.y1 + 0.5f);
    }
  }
}

// the tiles a scene JSON shows (of one panel, or all) are exactly `want`, each with its pairs drawn
void check_tiles(const json& j, const std::vector<const Event*>& want, const std::string& panel_prefix) {
  std::multiset<TileKey> got, expect;
  for (const json& t : j["tiles"]) {
    if (t["panel"].get<std::string>().rfind(panel_prefix, 0) != 0) continue;
    got.insert(key_of(t));
    const double pairs = t["pairs"].get<double>(), drawn = t["drawn_pairs"].get<double>();
    INFO("panel '" << t["panel"].get<std::string>() << "', rank " << t["rank"] << " x KV of " << t["peer"] << ", rows " << t["rows"].dump()
                   << ", cols " << t["cols"].dump() << ", mask " << t["mask"]);
    CHECK(std::fabs(drawn - pairs) <= 1e-3 * std::max(1.0, pairs));
  }
  for (const Event* e : want) expect.insert(key_of(*e));
  std::vector<TileKey> missing, extra;
  std::set_difference(expect.begin(), expect.end(), got.begin(), got.end(), std::back_inserter(missing));
  std::set_difference(got.begin(), got.end(), expect.begin(), expect.end(), std::back_inserter(extra));
  auto show = [](const std::vector<TileKey>& v) {
    std::string o;
    for (const auto& [r, p, rows, cols, mask] : v)
      o += " [rank " + std::to_string(r) + " x " + std::to_string(p) + ", rows " + rows + ", cols " + cols + ", " + mask + "]";
    return o;
  };
  INFO("panel '" << panel_prefix << "': trace tiles not drawn:" << show(missing) << "; drawn, not in the trace:" << show(extra));
  CHECK(got == expect);
}

// the configurations: mode x layout x packing x causal at cp P; what the reference refuses is
// returned in `refused` (mode, layout, rule) so the caller can see that it is the rule, not a bug
std::vector<VizParams> configurations(index_t P, std::vector<std::string>& refused) {
  std::vector<VizParams> out;
  for (Mode mode : {Mode::p2p, Mode::allgather, Mode::a2a, Mode::a2a_p2p})
    for (Layout layout : {Layout::contiguous, Layout::zigzag, Layout::striped})
      for (bool packed : {false, true})
        // the mask: full, causal, a causal window, a two-sided window, causal chunks (mask_rule.h)
        for (const auto& [causal, window, chunk] : {std::tuple<bool, index_t, index_t>{false, 0, 0}, {true, 0, 0}, {true, 3, 0},
                                                    {false, 5, 0}, {true, 0, 6}}) {
          std::vector<std::pair<index_t, index_t>> hcp = {{0, 0}};
          if (mode == Mode::a2a_p2p) {
            hcp.clear();
            for (index_t i = 1; i <= P; ++i)
              if (P % i == 0) hcp.push_back({i, P / i});
          }
          for (auto [icp, ocp] : hcp) {
            VizParams p;
            p.cp.mode = mode, p.cp.layout = layout, p.cp.cp = P, p.cp.icp = icp, p.cp.ocp = ocp;
            p.cp.heads = 24, p.cp.kv_heads = 24, p.cp.head_dim = 8;  // heads divisible by every a2a size here
            p.cp.causal = causal;
            if (window > 0) p.cp.window = window;
            if (chunk > 0) p.cp.chunk = chunk;
            if (packed) p.cp.cu_seqlens = {0, 5, 18, 25}, p.cp.pad = true;  // three sequences, padded to the layout's factor
            else p.cp.seq = 2 * P * 4;
            try {
              (void)p.run_spec();
              out.push_back(p);
            } catch (const Error& e) {
              refused.push_back(to_string(mode) + " " + to_string(layout) + (packed ? " packed" : "") + ": " + e.what());
            }
          }
        }
  return out;
}

std::string describe(const CpSpec& c) {
  std::ostringstream o;
  o << to_string(c.mode()) << " " << to_string(c.layout()) << " cp " << c.P();
  if (c.mode() == Mode::a2a_p2p) o << " (" << c.icp() << "x" << c.ocp() << ")";
  o << (c.thd() ? " packed" : "") << " " << c.mask_name();
  return o.str();
}

}  // namespace

TEST_CASE("viz scene JSON: every view x mode x layout x packing x causal at cp 1, 2, 3, 4, 8 shows the reference's tiles, pairs and messages") {
  std::map<std::string, int> checked;  // per mode: configurations checked
  for (index_t P : {1, 2, 3, 4, 8}) {
    std::vector<std::string> refused;
    const std::vector<VizParams> runs = configurations(P, refused);
    std::set<std::string> rules;  // each refusal once
    for (const std::string& r : refused) rules.insert(r.substr(r.find(": ") + 2));
    for (const std::string& r : rules) MESSAGE("cp " << P << ", refused by the reference (not drawn): " << r);
    for (const VizParams& p : runs) {
      const RunModel m = RunModel::build(p);
      const CpSpec& c = m.cp();
      INFO(describe(c));
      ++checked[to_string(c.mode())];
      const auto& ev = m.trace.events();
      // ring view: every step, forward and backward
      for (size_t si = 0; si < m.steps.size(); ++si) {
        const auto [phase, step] = m.steps[si];
        INFO(to_string(phase) << " step " << step);
        ViewState v;
        v.step = static_cast<int>(si);
        const Scene s = ring_view(m, v, kW, kH);
        const json j = scene_json(s, "ring");
        check_geometry(s);
        std::vector<const Event*> tiles;
        std::multiset<std::tuple<int, int, std::string, std::int64_t>> sends, drawn;
        bool a2a = false, input = false;
        for (const Event& e : ev) {
          if (e.phase != phase || e.step != step) continue;
          if (e.kind == EventKind::tile) tiles.push_back(&e);
          if (e.kind != EventKind::send) continue;
          sends.insert({e.rank, e.peer, e.tensor, e.bytes});
          a2a |= e.op == "all_to_all";
          input |= e.tensor == "q" || e.tensor == "k" || e.tensor == "v" || e.tensor == "do";
        }
        for (const json& msg : j["messages"])
          drawn.insert({msg["sender"].get<int>(), msg["receiver"].get<int>(), msg["tensor"].get<std::string>(), msg["bytes"].get<std::int64_t>()});
        CHECK(drawn == sends);
        if (a2a) {
          // the transpose: inputs go from the token split to the head split, outputs back
          std::set<std::string> panels;
          for (const json& pn : j["panels"]) panels.insert(pn["name"].get<std::string>());
          CHECK(panels == (input ? std::set<std::string>{"tokens split (before)", "heads split (after)"}
                                 : std::set<std::string>{"heads split (before)", "tokens split (after)"}));
          CHECK(j["tiles"].empty());
        } else {
          check_tiles(j, tiles, "matrix");
        }
      }
      // masks view: every forward tile in the rank-order panel and in the tile-kinds panel
      {
        const Scene s = masks_view(m, ViewState{}, kW, kH);
        const json j = scene_json(s, "masks");
        check_geometry(s);
        std::vector<const Event*> fwd;
        for (const Event& e : ev)
          if (e.kind == EventKind::tile && e.phase == Phase::fwd) fwd.push_back(&e);
        check_tiles(j, fwd, "rank order");
        check_tiles(j, fwd, "tile kinds");
      }
      // ownership: the run's layout's tokens per rank are the partition's
      {
        const Scene s = ownership_view(m, ViewState{}, kW, kH);
        const json j = scene_json(s, "ownership");
        check_geometry(s);
        int seen = 0;
        for (const json& t : j["tokens"]) {
          if (t["layout"] != to_string(c.layout())) continue;
          ++seen;
          CHECK(t["spans"] == spans_json(c.partition().spans(t["rank"].get<int>())));
        }
        CHECK(seen == c.P());
      }
      // timeline: nothing off the canvas; every send of the trace drawn once, with its bytes and a time
      {
        const Scene s = timeline_view(m, ViewState{}, kW, kH);
        check_geometry(s);
        const json j = scene_json(s, "timeline");
        std::multiset<std::tuple<std::string, int, int, int, std::string, std::int64_t>> want, got;
        for (const Event& e : ev)
          if (e.kind == EventKind::send) want.insert({to_string(e.phase), e.step, e.rank, e.peer, e.tensor, e.bytes});
        for (const json& x : j["messages"]) {
          got.insert({x["phase"].get<std::string>(), x["step"].get<int>(), x["sender"].get<int>(), x["receiver"].get<int>(),
                      x["tensor"].get<std::string>(), x["bytes"].get<std::int64_t>()});
          REQUIRE(x.contains("start_us"));
          CHECK(x["start_us"].get<double>() >= 0);
          CHECK(x["end_us"].get<double>() >= x["start_us"].get<double>());
        }
        CHECK(got == want);
      }
    }
  }
  // the reference accepts every mode somewhere in this grid (a refusal is a rule, a missing mode a bug)
  for (const char* mode : {"p2p", "allgather", "a2a", "a2a+p2p"}) {
    INFO(mode);
    CHECK(checked[mode] >= 25);
  }
  MESSAGE("configurations checked per mode: p2p " << checked["p2p"] << ", allgather " << checked["allgather"] << ", a2a "
                                                   << checked["a2a"] << ", a2a+p2p " << checked["a2a+p2p"]);
}

TEST_CASE("viz scene JSON, scheduler: every sample once per schedule, on its group's ranks, for its cost's time, inside the canvas") {
  for (const char* lengths : {"32768,16384,8192,4096,4096,4096,4096,2048", "6144,2048,4096,4096,4096,12288,4096", "100,200,300"})
    for (const char* cost : {"l2", "overhead"}) {
      VizParams p;
      p.lengths = lengths, p.cost = cost;
      const SchedModel m = SchedModel::build(p);
      INFO(lengths << ", cost " << cost);
      const Scene s = scheduler_view(m, ViewState{}, kW, kH);
      check_geometry(s);
      const json j = scene_json(s, "scheduler");
      for (const auto& [name, d] : {std::pair<std::string, const DcpSchedule*>{"Megatron v1", &m.megatron}, {"cplab", &m.cplab}}) {
        std::multiset<std::tuple<int, std::int64_t, std::int64_t>> want, got;  // sample, first rank, ranks
        for (const DcpRound& r : d->rounds)
          for (const DcpGroup& g : r.groups)
            for (int smp : g.samples) want.insert({smp, g.start, g.size});
        for (const json& x : j["samples"]) {
          if (x["schedule"] != name) continue;
          got.insert({x["sample"].get<int>(), x["first_rank"].get<std::int64_t>(), x["ranks"].get<std::int64_t>()});
          const double dt = m.cost.time(m.lengths[x["sample"].get<size_t>()], x["ranks"].get<std::int64_t>());
          CHECK(x["end"].get<double>() - x["start"].get<double>() == doctest::Approx(dt));
          CHECK(x["end"].get<double>() <= d->makespan * (1 + 1e-12));
        }
        CHECK(got == want);
        CHECK(want.size() == m.lengths.size());
      }
    }
}
