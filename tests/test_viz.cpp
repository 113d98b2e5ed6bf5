// test_viz.cpp: the scene logic of cplab-viz (viz/scene), checked against the reference without a
// display: which tokens, tiles, arrows, cells and rectangles each view shows for a configuration,
// and that the run model holds the CpSpec built from the parameters (modes/cp_spec.h).
// What it is not: a test of the app's window or PNGs (tests/viz_render_check.sh renders those).
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "dcp/dcp_cost.h"
#include "core/error.h"
#include "core/mask.h"
#include "layout/thd.h"
#include "modes/ring_schedule.h"
#include "plan/planner.h"
#include "plan/trace_plan.h"
#include "views.h"
#include "viz_helpers.h"

using namespace cplab;
using namespace cplab::viz;

using namespace cplab::viz::test;

TEST_CASE("viz ownership: every zoomed token shows its owner and local index, strips are single-rank where the layout is") {
  for (Layout l : {Layout::contiguous, Layout::zigzag, Layout::striped}) {
    const RunModel m = RunModel::build(run_params(Mode::p2p, l, 4, 32));
    const Scene s = ownership_view(m, ViewState{}, 1000, 500);
    const auto tokens = s.find("token");
    REQUIRE(tokens.size() == 32);  // 32 tokens fit the zoom strip
    for (const Prim* t : tokens) {
      const RankLocal o = m.cp().partition().owner(t->id);
      CHECK(t->rank == o.rank);
      CHECK(t->info == "local " + std::to_string(o.local));
    }
  }
  // 1M tokens on 64 ranks over 1000 pixels: contiguous strips are single-rank runs whose end
  // tokens belong to their rank; striped is one mixed run (every pixel holds every rank)
  const RunModel big = RunModel::build(run_params(Mode::p2p, Layout::zigzag, 64, 1 << 20));
  const Scene s = ownership_view(big, ViewState{}, 1150, 500);
  std::map<std::string, std::vector<const Prim*>> by_layout;
  for (const Prim* p : s.find("strip")) by_layout[p->info].push_back(p);
  REQUIRE(by_layout.size() == 3);
  CHECK(by_layout["striped"].size() == 1);
  CHECK(by_layout["striped"][0]->rank == -1);
  const Partition contiguous(Layout::contiguous, 1 << 20, 64);
  const float x0 = by_layout["contiguous"].front()->pts[0], w = by_layout["contiguous"].back()->pts[2] - x0;
  int single = 0;
  for (const Prim* p : by_layout["contiguous"]) {
    if (p->rank < 0) continue;
    ++single;
    const auto first = static_cast<index_t>((p->pts[0] - x0) / w * (1 << 20)) + 1;
    const auto last = static_cast<index_t>((p->pts[2] - x0) / w * (1 << 20)) - 1;
    CHECK(contiguous.owner(first).rank == p->rank);
    CHECK(contiguous.owner(last).rank == p->rank);
  }
  CHECK(single == 64);
  // zigzag: each rank owns two chunks, 128 in all, but rank 63's two chunks (63 and 64) touch: 127 runs
  int zz = 0;
  for (const Prim* p : by_layout["zigzag"]) zz += p->rank >= 0;
  CHECK(zz == 127);
  // hover names the token's facts
  ViewState v;
  v.mx = 150, v.my = 0;  // the strips start at x = 150
  for (const Prim* p : s.find("strip"))
    if (p->info == "zigzag") v.my = p->pts[1] + 3;
  CHECK(ownership_view(big, v, 1150, 500).hover.find("zigzag: token 0: rank 0, local index 0") == 0);
}

TEST_CASE("viz ring: the tiles and arrows of a step are the reference's") {
  for (Layout l : {Layout::contiguous, Layout::zigzag, Layout::striped}) {
    const index_t P = 4, S = 32, n = S / P;
    const RunModel m = RunModel::build(run_params(Mode::p2p, l, P, S));
    for (int i = 0; i < P; ++i) {
      ViewState v;
      v.step = step_index(m, Phase::fwd, i);
      REQUIRE(v.step >= 0);
      const Scene s = ring_view(m, v, 1200, 700);
      for (index_t r = 0; r < P; ++r) {
        const RingTile t = ring_tile(l, true, P, r, ring_fwd_kv_block(P, r, i), n);
        std::set<std::string> sections;
        for (const Prim* p : s.find("tile"))
          if (p->rank == r) sections.insert(p->info.substr(0, p->info.find(',')));
        const bool skipped = std::any_of(s.prims.begin(), s.prims.end(), [&](const Prim& p) { return p.tag == "skipped" && p.rank == r; });
        if (t.skipped) {
          CHECK(sections.empty());
          CHECK(skipped);
        } else {
          CHECK(sections == std::set<std::string>{section_label(t.section)});  // the words, not the trace's string
          CHECK_FALSE(skipped);
        }
      }
      // KV goes r -> r+1 at every forward step but the last
      const auto arrows = s.find("arrow");
      CHECK(arrows.size() == (i < P - 1 ? 4u : 0u));
      for (const Prim* a : arrows) CHECK(a->peer == (a->rank + 1) % P);
    }
  }
  // all-to-all step of Ulysses: the transpose panel, before and after in every rank's colour
  VizParams up = run_params(Mode::a2a, Layout::zigzag, 4, 32);
  up.cp.kv_heads = 4;
  const RunModel u = RunModel::build(up);
  ViewState v;
  v.step = step_index(u, Phase::fwd, 0);
  const Scene s = ring_view(u, v, 1200, 700);
  std::set<int> before, after;
  for (const Prim* p : s.find("a2a_before")) before.insert(p->rank);
  for (const Prim* p : s.find("a2a_after")) after.insert(p->rank);
  CHECK(before == std::set<int>{0, 1, 2, 3});
  CHECK(after == std::set<int>{0, 1, 2, 3});
  // one arrow per message of the step (P <= 8: collectives are drawn message by message)
  std::multiset<std::pair<int, int>> sent, drawn;
  for (const Event& e : u.trace.events())
    if (e.kind == EventKind::send && e.phase == Phase::fwd && e.step == 0) sent.insert({e.rank, e.peer});
  for (const Prim* a : s.find("arrow")) drawn.insert({a->rank, a->peer});
  CHECK(sent.size() == 3 * 4 * 3);  // q, k and v, every rank to each of the 3 others
  CHECK(drawn == sent);
}

TEST_CASE("viz masks: one shape per forward tile with the reference's section, contiguous skips above the diagonal") {
  const index_t P = 4, S = 32;
  for (Layout l : {Layout::contiguous, Layout::zigzag}) {
    const RunModel m = RunModel::build(run_params(Mode::p2p, l, P, S));
    const Scene s = masks_view(m, ViewState{}, 1500, 600);
    const auto cells = s.find("kind_tile");  // a tile's shape: its visible cells, one or more rects
    std::set<std::pair<int, int>> tiles;
    for (const Prim* c : cells) tiles.insert({c->rank, c->peer});
    REQUIRE(tiles.size() == static_cast<size_t>(P * P));
    for (const Prim* c : cells) {
      const RingTile t = ring_tile(l, true, P, c->rank, c->peer, S / P);
      CHECK(c->info == section_label(t.skipped ? std::string("skipped") : t.section));  // the words, not the trace's string
      CHECK((c->kind == Prim::Kind::rect && c->fill.a == 0) == t.skipped);  // skipped: an outline only
    }
  }
}

TEST_CASE("viz scheduler: one rectangle per sample and schedule, on its group's ranks, for the 8-sample example") {
  VizParams p;  // the defaults: the 8-sample batch on 8 ranks, 4096 tokens per rank, overhead cost
  const SchedModel m = SchedModel::build(p);
  const float H = 600;
  const Scene s = scheduler_view(m, ViewState{}, 1200, H);
  const auto samples = s.find("sample");
  REQUIRE(samples.size() == 2 * m.lengths.size());
  // the Megatron panel comes first: match its rectangles to its groups
  size_t k = 0;
  for (const DcpSchedule* d : {&m.megatron, &m.cplab})
    for (size_t ri = 0; ri < d->rounds.size(); ++ri)
      for (const DcpGroup& g : d->rounds[ri].groups)
        for (int smp : g.samples) {
          REQUIRE(k < samples.size());
          const Prim* r = samples[k++];
          CHECK(r->rank == smp);
          CHECK(r->id == static_cast<int>(ri));
          CHECK(r->peer == g.size);
          CHECK(r->info.find("on ranks " + std::to_string(g.start) + ".." + std::to_string(g.start + g.size - 1)) != std::string::npos);
          CHECK(r->pts[2] - r->pts[0] > 0);
        }
  // the example's 32K sample runs on all 8 ranks in Megatron's first round
  CHECK(samples[0]->rank == 0);
  CHECK(samples[0]->peer == 8);
}

TEST_CASE("viz models name the rule a bad configuration breaks") {
  CHECK_THROWS_WITH_AS(RunModel::build(run_params(Mode::p2p, Layout::zigzag, 8, 1000)),
                       doctest::Contains("multiple of 2*cp = 16"), Error);
  VizParams p;
  p.ranks = 6;
  CHECK_THROWS_AS(SchedModel::build(p), Error);
  p = VizParams{};
  p.trace_file = "/nonexistent/trace.json";
  CHECK_THROWS_WITH_AS(RunModel::build(p), doctest::Contains("cannot open"), Error);
}

TEST_CASE("viz run model: holds the CpSpec built from the parameters, packed total and partition included") {
  VizParams p = run_params(Mode::p2p, Layout::zigzag, 2, 32);
  p.cp.cu_seqlens = {0, 12, 36, 42};
  p.cp.pad = true;  // sequences of 12, 24, 6 padded to multiples of 2*cp = 4: 12, 24, 8
  const RunModel m = RunModel::build(p);
  REQUIRE_FALSE(m.from_file());
  const CpSpec& c = m.cp();
  CHECK(c.S() == 44);  // --seq is the unpacked length: packed runs take their total
  CHECK(c.packed());
  CHECK(c.partition().seq() == 44);
  CHECK(c.packing().num_seqs() == 3);
  CHECK(c.fields().cu_seqlens == p.cp.cu_seqlens);
  CHECK(m.spec->backward);
  REQUIRE(m.layouts.size() == 1);  // packed: only the run's layout is drawn, from the spec's partition
  for (index_t r = 0; r < 2; ++r) CHECK(m.layouts[0].spans[static_cast<size_t>(r)] == c.partition().spans(r));
  const Scene s = ownership_view(m, ViewState{}, 1000, 500);
  CHECK(s.find("sequence").size() == 3);
  CHECK(s.find("padding").size() == 1);
}

TEST_CASE("viz a2a+p2p: the mode enum drives the hierarchical grid, and a refused spec names its rule") {
  VizParams p = run_params(Mode::a2a_p2p, Layout::zigzag, 8, 64);
  CHECK_THROWS_WITH_AS(RunModel::build(p), doctest::Contains("a2a+p2p needs --hcp"), Error);
  p.cp.icp = 2, p.cp.ocp = 4;
  const RunModel m = RunModel::build(p);
  CHECK(m.cp().mode() == Mode::a2a_p2p);
  std::set<int> ranks;
  const Scene grid = ownership_view(m, ViewState{}, 1000, 600);  // find() points into the scene: keep it
  for (const Prim* q : grid.find("hcp_rank")) ranks.insert(q->rank);
  CHECK(ranks.size() == 8);
  // the same layout for p2p draws no grid
  CHECK(ownership_view(RunModel::build(run_params(Mode::p2p, Layout::zigzag, 8, 64)), ViewState{}, 1000, 600)
            .find("hcp_rank")
            .empty());
}

namespace {

// the cells (query, key) the ring view colours for each rank at a step: every "tile" rect inside the
// "matrix" frame, read back to tokens. A polygon there fails: at these sizes every cell is drawn
std::map<int, std::set<std::pair<index_t, index_t>>> coloured_cells(const Scene& s, index_t S, const char* tag = "tile",
                                                                      size_t frame = 0) {
  const auto frames = s.find("matrix");
  REQUIRE(frames.size() > frame);
  const std::vector<float>& f = frames[frame]->pts;  // x0 y0 x1 y1
  const double cell = (f[2] - f[0]) / static_cast<double>(S);
  std::map<int, std::set<std::pair<index_t, index_t>>> out;
  for (const Prim* p : s.find(tag)) {
    if (p->pts[0] < f[0] - 0.5f || p->pts[0] > f[2] + 0.5f) continue;  // a tile outside the matrix (legend)
    REQUIRE(p->kind == Prim::Kind::rect);
    const auto k0 = std::lround((p->pts[0] - f[0]) / cell), q0 = std::lround((p->pts[1] - f[1]) / cell);
    const auto k1 = std::lround((p->pts[2] - f[0]) / cell), q1 = std::lround((p->pts[3] - f[1]) / cell);
    for (auto q = q0; q < q1; ++q)
      for (auto k = k0; k < k1; ++k) out[p->rank].insert({q, k});
  }
  return out;
}

}  // namespace

TEST_CASE("viz ring: the cells coloured are exactly the visible pairs of the reference's token mask (issue 20: no false triangles)") {
  // striped step 3 (query 0 against key 1 was half-drawn) and the packed ring (query 7, key 8)
  std::vector<VizParams> runs;
  for (Layout l : {Layout::contiguous, Layout::zigzag, Layout::striped}) runs.push_back(run_params(Mode::p2p, l, 4, 32));
  VizParams packed = run_params(Mode::p2p, Layout::zigzag, 2, 0);
  packed.cp.cu_seqlens = {0, 12, 36, 42};
  packed.cp.pad = true;
  runs.push_back(packed);
  for (const VizParams& p : runs) {
    const RunModel m = RunModel::build(p);
    const CpSpec& c = m.cp();
    const index_t P = c.P(), S = c.S();
    for (int i = 0; i < P; ++i) {
      ViewState v;
      v.step = step_index(m, Phase::fwd, i);
      REQUIRE(v.step >= 0);
      const auto drawn = coloured_cells(ring_view(m, v, 1200, 700), S);
      for (index_t r = 0; r < P; ++r) {
        const std::vector<index_t> q = c.partition().indices(r), k = c.partition().indices(ring_fwd_kv_block(P, r, i));
        std::vector<index_t> ks = k;
        std::sort(ks.begin(), ks.end());
        const Mask mask = token_mask(c.packing(), q, ks, true);
        std::set<std::pair<index_t, index_t>> visible;
        for (size_t a = 0; a < q.size(); ++a) {
          const KeyRange kr = mask.keys(static_cast<std::int64_t>(a), static_cast<std::int64_t>(ks.size()));
          for (auto b = kr.lo; b < kr.hi; ++b) visible.insert({q[a], ks[static_cast<size_t>(b)]});
        }
        const auto it = drawn.find(static_cast<int>(r));
        const std::set<std::pair<index_t, index_t>> got = it == drawn.end() ? std::set<std::pair<index_t, index_t>>{} : it->second;
        INFO("layout " << to_string(c.layout()) << (c.thd() ? " packed" : "") << ", step " << i << ", rank " << r);
        CHECK(got == visible);
      }
    }
  }
}

TEST_CASE("viz masks, packed: the rank-order panel colours exactly the visible pairs of the token mask (issue 20: no full squares)") {
  VizParams p = run_params(Mode::p2p, Layout::zigzag, 2, 0);
  p.cp.cu_seqlens = {0, 12, 36, 42};
  p.cp.pad = true;
  const RunModel m = RunModel::build(p);
  const CpSpec& c = m.cp();
  const index_t P = c.P(), S = c.S(), n = c.partition().local_len();
  const Scene sc = masks_view(m, ViewState{}, 1200, 680);
  const auto drawn = coloured_cells(sc, S, "ordered_tile", 1);  // frame 1: the rank-order panel
  for (index_t r = 0; r < P; ++r) {
    std::set<std::pair<index_t, index_t>> visible;
    const std::vector<index_t> q = c.partition().indices(r);
    for (index_t j = 0; j < P; ++j) {
      const std::vector<index_t> k = c.partition().indices(j);
      REQUIRE(std::is_sorted(k.begin(), k.end()));
      const Mask mask = token_mask(c.packing(), q, k, true);
      for (index_t a = 0; a < static_cast<index_t>(q.size()); ++a) {
        const KeyRange kr = mask.keys(a, static_cast<std::int64_t>(k.size()));
        for (auto b = kr.lo; b < kr.hi; ++b) visible.insert({r * n + a, j * n + b});
      }
    }
    const auto it = drawn.find(static_cast<int>(r));
    INFO("rank " << r);
    REQUIRE(it != drawn.end());
    CHECK(it->second == visible);
  }
  for (const Prim* t : sc.find("ordered_tile")) CHECK(t->stroke.a == 0);  // no "whole, marked" fallback drawn
}

TEST_CASE("viz ring, a2a: the output all-to-all goes from the head split back to the token split (issue 20)") {
  VizParams p = run_params(Mode::a2a, Layout::zigzag, 4, 32);
  p.cp.kv_heads = 4;
  const RunModel m = RunModel::build(p);
  auto widths = [&](int step, const char* tag) {
    ViewState v;
    v.step = step_index(m, Phase::fwd, step);
    REQUIRE(v.step >= 0);
    const Scene s = ring_view(m, v, 1200, 700);
    std::set<long> w;
    for (const Prim* q : s.find(tag)) w.insert(std::lround(q->pts[2] - q->pts[0]));
    REQUIRE(!w.empty());
    return w;
  };
  // a token split spans every head (one width, the panel's); a head split is a quarter of it (8 heads, 4 ranks)
  const std::set<long> in_before = widths(0, "a2a_before"), in_after = widths(0, "a2a_after");
  const std::set<long> out_before = widths(2, "a2a_before"), out_after = widths(2, "a2a_after");
  REQUIRE(in_before.size() == 1);
  CHECK(static_cast<double>(*in_after.rbegin() * 4) == doctest::Approx(static_cast<double>(*in_before.begin())).epsilon(0.03));  // input: tokens -> heads
  CHECK(out_after == in_before);                                                // output: heads -> tokens
  CHECK(out_before == in_after);
}
