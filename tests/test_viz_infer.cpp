// test_viz_infer.cpp: cplab-viz's inference views (issue 37, item 3; viz/scene/views_infer.h) checked
// against the reference, as tests/test_viz_scene.cpp checks the training views.
//
// Over every inference variant x cache layout x new-token layout x cached tokens P x new tokens T x
// one or two requests x mask (causal, causal window, causal chunks) at cp 1, 2, 3 and 4, each view is
// built, written as scene JSON and checked:
//   ownership  every rank's cached and new tokens drawn are the spec's (cache_rows, q_kv_rows), and
//              together they hold every KV row once
//   ring       at every step of the planned trace, the tiles drawn in the matrix are exactly the
//              trace's tiles of that step, each colouring as many cells as the pairs the reference
//              counted; the messages drawn are exactly the step's sends (Q blocks, KV blocks, the
//              gathered Q, the all-to-all of partials) with their bytes
//   masks      the T x (P+T) rectangle's cells are the visible pairs counted here straight from the
//              rule (new token t of a request with P cached sees key j iff j <= P + t, within the
//              window, in the same chunk: the paper's causal mask with an offset of P), and the trace's
//              tiles are drawn with their pairs, summing to the same count
//   timeline   the messages drawn are the sends of the two variants' traces, nothing else
// and nothing is drawn off the canvas, no tile's primitive outside its panel. Then cplab-viz's
// options for an inference step: accepted, and each broken rule refused with its name.
// What it is not: a test of the variants (tests/test_infer.cpp) or of pixels.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <sstream>
#include <tuple>

#include "core/error.h"
#include "scene_json.h"
#include "viz_cli.h"
#include "views.h"
#include "views_infer.h"

using namespace cplab;
using namespace cplab::viz;
using nlohmann::json;

namespace {

constexpr float kW = 1264, kH = 640;

json spans_json(const std::vector<Span>& spans) {
  json a = json::array();
  for (const Span& sp : spans) a.push_back({sp.begin, sp.count, sp.stride});
  return a;
}

using TileKey = std::tuple<int, int, int, std::string, std::string, std::string>;  // rank, peer, step, rows, cols, mask
TileKey key_of(const json& t) {
  return {t["rank"].get<int>(), t["peer"].get<int>(), t["step"].get<int>(), t["rows"].dump(), t["cols"].dump(), t["mask"].get<std::string>()};
}
TileKey key_of(const Event& e) { return {e.rank, e.peer, e.step, spans_json(e.rows).dump(), spans_json(e.cols).dump(), e.mask}; }

// nothing off the canvas; a tile's primitives inside its panel (0.5 px of rounding)
bool geometry_ok(const Scene& s) {
  for (const Prim& p : s.prims) {
    const size_t n = p.kind == Prim::Kind::circle || p.kind == Prim::Kind::text ? 2 : p.pts.size();
    for (size_t i = 0; i + 1 < n; i += 2)
      if (p.pts[i] < -0.5f || p.pts[i] > s.width + 0.5f || p.pts[i + 1] < -0.5f || p.pts[i + 1] > s.height + 0.5f) {
        MESSAGE("primitive '" << p.tag << "' '" << p.text << "' off the canvas at (" << p.pts[i] << ", " << p.pts[i + 1] << ")");
        return false;
      }
    if (p.tile < 0) continue;
    const PanelRec& b = s.panels.at(static_cast<size_t>(s.tiles.at(static_cast<size_t>(p.tile)).panel));
    for (size_t i = 0; i + 1 < p.pts.size(); i += 2)
      if (p.pts[i] < b.x0 - 0.5f || p.pts[i] > b.x1 + 0.5f || p.pts[i + 1] < b.y0 - 0.5f || p.pts[i + 1] > b.y1 + 0.5f) {
        MESSAGE("tile primitive outside panel '" << b.name << "'");
        return false;
      }
  }
  return true;
}

// the tiles of a panel are exactly `want`, each with its pairs drawn
void check_tiles(const json& j, const std::vector<const Event*>& want, const std::string& panel) {
  std::multiset<TileKey> got, expect;
  for (const json& t : j["tiles"]) {
    if (t["panel"] != panel) continue;
    got.insert(key_of(t));
    const double pairs = t["pairs"].get<double>(), drawn = t["drawn_pairs"].get<double>();
    if (std::fabs(drawn - pairs) > 1e-3 * std::max(1.0, pairs)) {
      INFO("panel '" << panel << "', rank " << t["rank"] << ", rows " << t["rows"].dump() << ", cols " << t["cols"].dump());
      CHECK(drawn == doctest::Approx(pairs));
    }
  }
  for (const Event* e : want) expect.insert(key_of(*e));
  CHECK(got == expect);
}

// the visible (new token, key) pairs of the step, from the rule itself (not token_mask, not the trace)
std::int64_t pairs_by_rule(const InferSpec& s) {
  std::int64_t n = 0;
  const PositionRule r = s.rule();
  for (index_t b = 0; b < s.B(); ++b) {
    const index_t P = s.fields().cached[static_cast<size_t>(b)], T = s.fields().fresh[static_cast<size_t>(b)];
    for (index_t t = 0; t < T; ++t)
      for (index_t j = 0; j < P + T; ++j) {
        const index_t i = P + t;  // the new token's position: after the cache
        bool v = !r.causal || j <= i;
        if (r.window > 0) v = v && (r.causal ? i - r.window < j : std::abs(i - j) < r.window);
        if (r.chunk > 0) v = v && i / r.chunk == j / r.chunk;
        n += v ? 1 : 0;
      }
  }
  return n;
}

struct Case {
  VizParams p;
  std::string name;
};

std::vector<Case> cases(index_t N) {
  std::vector<Case> out;
  for (const InferInfo& info : infer_table())
    for (const char* cache_layout : {"zigzag", "interleaved"})
      for (Layout layout : info.decode_layout ? std::vector<Layout>{Layout::zigzag}
                                              : std::vector<Layout>{Layout::zigzag, Layout::contiguous, Layout::striped})
        for (index_t P : {0, 1, 7, 13})
          for (index_t T : {index_t{1}, std::max<index_t>(1, N - 1), 2 * N, index_t{11}})
            for (bool packed : {false, true})
              for (int mask = 0; mask < 3; ++mask) {
                if (layout != Layout::zigzag && (mask != 0 || packed)) continue;  // the other layouts: one mask, one request
                Case c;
                VizParams& p = c.p;
                p.cp.cp = N, p.cp.layout = layout, p.cp.heads = 4, p.cp.kv_heads = 2, p.cp.head_dim = 8, p.cp.causal = true;
                if (mask == 1) p.cp.window = 3;
                if (mask == 2) p.cp.chunk = 4;
                if (packed) p.cp.cu_seqlens = {0, T, T + 3}, p.kv_cache = std::to_string(P) + ",5";
                else p.cp.seq = T, p.kv_cache = std::to_string(P);
                p.infer_mode = info.name, p.cache_layout = cache_layout, p.dtype = "double";
                std::ostringstream o;
                o << info.name << " cache " << cache_layout << " layout " << to_string(layout) << " cp " << N << " P " << p.kv_cache
                  << " T " << (packed ? std::to_string(T) + ",3" : std::to_string(T)) << " mask " << mask;
                c.name = o.str();
                out.push_back(std::move(c));
              }
  return out;
}

}  // namespace

TEST_CASE("viz inference views: ownership, ring at every step, masks and timeline show the spec's and the trace's facts") {
  std::map<std::string, int> checked;
  std::set<std::string> refused;
  for (index_t N : {1, 2, 3, 4})
    for (const Case& c : cases(N)) {
      INFO(c.name);
      RunModel m;
      try {
        m = RunModel::build(c.p);
      } catch (const Error& e) {
        refused.insert(e.what());
        continue;
      }
      REQUIRE(m.infer);
      const InferModel& im = *m.infer;
      const InferSpec& sp = im.spec();
      ++checked[sp.info().name];
      const auto& ev = m.trace.events();
      // ownership
      {
        const Scene s = ownership_view(m, ViewState{}, kW, kH);
        CHECK(geometry_ok(s));
        const json j = scene_json(s, "ownership");
        std::vector<int> holders(static_cast<size_t>(sp.KV()), 0);
        int seen = 0;
        for (const json& t : j["tokens"]) {
          const int r = t["rank"].get<int>();
          const std::vector<index_t> want = t["layout"] == "cache" ? sp.cache_rows(r) : sp.q_kv_rows(r);
          CHECK((t["layout"] == "cache" || t["layout"] == "new"));
          CHECK(t["spans"] == spans_json(to_spans(want)));
          for (index_t k : want) ++holders[static_cast<size_t>(k)];
          ++seen;
        }
        CHECK(seen == 2 * N);
        CHECK(std::all_of(holders.begin(), holders.end(), [](int h) { return h == 1; }));
      }
      // ring: every step
      for (size_t si = 0; si < m.steps.size(); ++si) {
        const int step = m.steps[si].second;
        INFO("step " << step);
        ViewState v;
        v.step = static_cast<int>(si);
        const Scene s = ring_view(m, v, kW, kH);
        CHECK(geometry_ok(s));
        const json j = scene_json(s, "ring");
        std::vector<const Event*> tiles;
        std::multiset<std::tuple<int, int, std::string, std::string, std::int64_t>> sends, drawn;
        for (const Event& e : ev) {
          if (e.step != step) continue;
          if (e.kind == EventKind::tile) tiles.push_back(&e);
          if (e.kind == EventKind::send) sends.insert({e.rank, e.peer, e.op, e.tensor, e.bytes});
        }
        for (const json& x : j["messages"])
          drawn.insert({x["sender"].get<int>(), x["receiver"].get<int>(), x["op"].get<std::string>(), x["tensor"].get<std::string>(),
                        x["bytes"].get<std::int64_t>()});
        CHECK(drawn == sends);
        check_tiles(j, tiles, "matrix");
      }
      // masks
      {
        const Scene s = masks_view(m, ViewState{}, kW, kH);
        CHECK(geometry_ok(s));
        const json j = scene_json(s, "masks");
        const std::int64_t want = pairs_by_rule(sp);
        std::int64_t mask_pairs = -1;
        for (const json& t : j["tiles"])
          if (t["panel"] == "mask") {
            mask_pairs = t["pairs"].get<std::int64_t>();
            CHECK(t["drawn_pairs"].get<double>() == doctest::Approx(static_cast<double>(want)));
          }
        CHECK(mask_pairs == want);
        std::vector<const Event*> fwd;
        std::int64_t tile_pairs = 0;
        for (const Event& e : ev)
          if (e.kind == EventKind::tile) fwd.push_back(&e), tile_pairs += e.pairs;
        check_tiles(j, fwd, "tiles");
        CHECK(tile_pairs == want);
      }
      // timeline: the two variants' sends
      {
        const Scene s = timeline_view(m, ViewState{}, kW, kH);
        CHECK(geometry_ok(s));
        const json j = scene_json(s, "timeline");
        REQUIRE(im.pair_traces.size() == 2);
        std::multiset<std::tuple<int, int, int, std::string, std::int64_t>> want, got;
        for (const Trace& t : im.pair_traces)
          for (const Event& e : t.events())
            if (e.kind == EventKind::send) want.insert({e.step, e.rank, e.peer, e.tensor, e.bytes});
        for (const json& x : j["messages"])
          got.insert({x["step"].get<int>(), x["sender"].get<int>(), x["receiver"].get<int>(), x["tensor"].get<std::string>(),
                      x["bytes"].get<std::int64_t>()});
        CHECK(got == want);
        // the variant drawn is one of the pair, and its trace is the model's
        const bool decode = sp.info().decode_layout;
        CHECK(im.pair_runs[0].spec.mode() == (decode ? InferMode::decode_pass_q : InferMode::pass_kv));
        CHECK(im.pair_runs[1].spec.mode() == (decode ? InferMode::decode_ag : InferMode::pass_q));
      }
    }
  for (const std::string& r : refused) MESSAGE("refused by the reference (not drawn): " << r);
  for (const InferInfo& info : infer_table()) {
    INFO(info.name);
    CHECK(checked[info.name] >= 100);
  }
  MESSAGE("inference configurations checked: p2p " << checked["p2p"] << ", pass-q " << checked["pass-q"] << ", decode-pass-q "
                                                   << checked["decode-pass-q"] << ", decode-ag " << checked["decode-ag"]);
}

namespace {
VizLaunch parse(std::vector<std::string> args) {
  args.insert(args.begin(), "cplab-viz");
  std::vector<const char*> argv;
  for (const std::string& a : args) argv.push_back(a.c_str());
  CLI::App cli{"t", "cplab-viz"};
  return parse_viz_args(cli, static_cast<int>(argv.size()), argv.data());
}
std::string refusal(const std::vector<std::string>& args) {
  try {
    parse(args);
  } catch (const Error& e) {
    return e.what();
  } catch (const CLI::ParseError& e) {
    return e.what();
  }
  return "accepted";
}
}  // namespace

TEST_CASE("cplab-viz options of an inference step: --kv-cache, --mode's variants, --cache-layout, each broken rule named") {
  const VizLaunch L = parse({"--view", "ring", "--kv-cache", "24", "--seq", "8", "--cp", "4", "--mode", "pass-q", "--cache-layout",
                             "interleaved", "--step", "4"});
  REQUIRE(L.run);
  REQUIRE(L.run->infer);
  CHECK(L.run->infer->spec().mode() == InferMode::pass_q);
  CHECK(L.run->infer->spec().fields().cache_layout == CacheLayout::interleaved);
  CHECK(L.run->infer->spec().P_total() == 24);
  CHECK(L.run->steps.at(static_cast<size_t>(L.step)).second == 4);  // pass-Q's all-to-all after the 4 ring steps
  CHECK(refusal({"--kv-cache", "8", "--mode", "a2a"}).find("--mode a2a is not an inference variant") == 0);
  CHECK(refusal({"--mode", "pass-q"}).find("--mode pass-q is an inference variant: it needs --kv-cache") == 0);
  CHECK(refusal({"--cache-layout", "zigzag"}).find("--cache-layout needs --kv-cache") == 0);
  CHECK(refusal({"--kv-cache", "8", "--backward"}).find("--backward is not for an inference step") == 0);
  CHECK(refusal({"--kv-cache", "8", "--view", "timeline", "--link", "eth100"}).find("--link is not for an inference step") == 0);
  CHECK(refusal({"--kv-cache", "8", "--view", "scheduler"}).find("--kv-cache is for the ownership, ring, masks and timeline views") == 0);
  CHECK(refusal({"--kv-cache", "8", "--hcp", "2,2"}).find("--hcp is not for an inference step") == 0);
  CHECK(refusal({"--kv-cache", "8", "--view", "ring", "--step", "9"}).find("--phase fwd --step 9 is not in the trace") == 0);
  CHECK(refusal({"--kv-cache", "8", "--view", "ring", "--phase", "bwd"}).find("--phase bwd --step 0 is not in the trace") == 0);
  CHECK(refusal({"--kv-cache", "-1"}) != "accepted");  // the spec's rule (infer_spec.h parse_kv_cache), named there
  CHECK(refusal({"--kv-cache", "8", "--cache-layout", "striped"}) != "accepted");
  // a step too large to draw is refused before the spec allocates its token lists
  CHECK(refusal({"--kv-cache", "1099511627776", "--seq", "8"}).find("--kv-cache: the cache and new tokens add up to") == 0);
}
