// test_viz_labels.cpp: what the ring and masks views write, as scene data: the tile labels say whose
// KV block a tile is (section_label), the ring's step is counted within its phase (step_label), no
// text of the ring view overlaps another text or an arrow (text extents from text_box), every panel
// and bar of the masks view is labelled, the masks view uses the canvas, and every view that draws
// blank never-computed tiles has a legend key for them.
// What it is not: a test of pixels (tests/viz_render_check.sh renders PNGs) or of the tiles' cells
// (test_viz.cpp, test_viz_scene.cpp).
#include <doctest/doctest.h>

#include <algorithm>
#include <set>

#include "viz_helpers.h"
#include "views.h"

using namespace cplab;
using namespace cplab::viz;
using cplab::viz::test::run_params;
using cplab::viz::test::step_index;

namespace {

bool has_text(const Scene& s, const std::string& tag, const std::string& words) {
  for (const Prim* p : s.find(tag))
    if (p->text.find(words) != std::string::npos) return true;
  return false;
}

}  // namespace

TEST_CASE("viz labels: a ring tile's section is shown as whose KV block it is, the trace keeps its strings") {
  CHECK(section_label("lower") == "KV of a lower rank (j<r)");
  CHECK(section_label("upper") == "KV of a higher rank (j>r)");
  CHECK(section_label("diagonal") == "own KV (j=r)");
  CHECK(section_label("lower", true) == "j<r");
  CHECK(section_label("heads 0..3") == "heads 0..3");  // not a ring section: unchanged
  // lesson 2's ring: zigzag, cp 4, step 1: rank 0 holds rank 3's block (j>r), ranks 1..3 a lower rank's
  VizParams p = run_params(Mode::p2p, Layout::zigzag, 4, 64);
  const RunModel m = RunModel::build(p);
  ViewState v;
  v.step = step_index(m, Phase::fwd, 1);
  const Scene s = ring_view(m, v, 1264, 640);
  const auto labels = s.find("tile_label");
  REQUIRE(!labels.empty());
  for (const Prim* l : labels) {
    INFO("tile label '" << l->text << "' of section " << l->info);
    CHECK(l->text != l->info);  // never the trace's bare "lower" / "upper"
    CHECK((l->text == section_label(l->info) || l->text == section_label(l->info, true)));
  }
  // the legend line defines j and r
  CHECK(std::any_of(s.notes.begin(), s.notes.end(), [](const std::string& n) { return n == section_legend(); }));
  // the masks view's hover and tiles say it in words too
  const Scene masks = masks_view(m, ViewState{}, 1264, 640);  // (alive while its primitives are read)
  for (const Prim* t : masks.find("kind_tile")) {
    CHECK(t->info != "lower");
    CHECK(t->info != "upper");
  }
}

TEST_CASE("viz labels: the ring's step is counted within the phase shown") {
  const RunModel m = RunModel::build(run_params(Mode::p2p, Layout::zigzag, 4, 64));  // forward and backward: 8 steps
  REQUIRE(m.steps.size() == 8);
  ViewState v;
  v.step = step_index(m, Phase::fwd, 1);
  CHECK(step_label(m, v.step) == "fwd step 1 (2 of 4 forward steps)");
  CHECK(ring_view(m, v, 1264, 640).title.find("fwd step 1 (2 of 4 forward steps)") != std::string::npos);
  CHECK(step_label(m, step_index(m, Phase::bwd, 0)) == "bwd step 0 (1 of 4 backward steps)");
}

TEST_CASE("viz labels: no text of the ring view overlaps another text or an arrow, at cp 2, 4, 8 and 16") {
  for (index_t P : {2, 4, 8, 16})
    for (Layout l : {Layout::contiguous, Layout::zigzag})
      for (auto [W, H] : {std::pair<float, float>{1264, 640}, {960, 600}, {1600, 900}}) {
        const RunModel m = RunModel::build(run_params(Mode::p2p, l, P, 4 * P));
        for (int si = 0; si < static_cast<int>(m.steps.size()); ++si) {
          ViewState v;
          v.step = si;
          const Scene s = ring_view(m, v, W, H);
          std::vector<const Prim*> texts, arrows;
          for (const Prim& p : s.prims) (p.kind == Prim::Kind::text ? texts : arrows).push_back(&p);
          arrows.erase(std::remove_if(arrows.begin(), arrows.end(), [](const Prim* p) { return p->kind != Prim::Kind::arrow; }),
                       arrows.end());
          REQUIRE(s.find("holds_kv").size() == static_cast<size_t>(P));
          for (size_t a = 0; a < texts.size(); ++a) {
            const Box ba = text_box(texts[a]->pts[0], texts[a]->pts[1], texts[a]->text);
            INFO("cp " << P << ", " << to_string(l) << ", " << W << " x " << H << ", " << step_label(m, si) << ": '" << texts[a]->text << "' at ("
                       << ba.x0 << ", " << ba.y0 << ")");
            for (size_t b = a + 1; b < texts.size(); ++b) {
              INFO("over '" << texts[b]->text << "' at (" << texts[b]->pts[0] << ", " << texts[b]->pts[1] << ")");
              CHECK_FALSE(ba.hits(text_box(texts[b]->pts[0], texts[b]->pts[1], texts[b]->text)));
            }
            for (const Prim* r : arrows) {
              INFO("over the arrow " << r->rank << " -> " << r->peer);
              CHECK_FALSE(ba.hits_segment(r->pts[0], r->pts[1], r->pts[2], r->pts[3]));
            }
          }
        }
      }
}

TEST_CASE("viz labels: the text and arrow boxes (text_box, Box) see an overlap") {
  const Box b = text_box(10, 10, "KV of r0");  // 56 x 13
  CHECK(b.x1 == doctest::Approx(66));
  CHECK(b.y1 == doctest::Approx(23));
  CHECK(b.hits(text_box(60, 20, "x")));
  CHECK_FALSE(b.hits(text_box(66, 10, "x")));  // touching is not overlapping
  CHECK(b.hits_segment(0, 0, 100, 30));
  CHECK(b.hits_segment(20, 15, 30, 16));  // inside
  CHECK_FALSE(b.hits_segment(0, 0, 100, 0));
  CHECK_FALSE(b.hits_segment(70, 0, 70, 100));
}

TEST_CASE("viz labels: the masks view labels every panel and bar, uses the canvas, and keys its blank cells") {
  for (Layout l : {Layout::contiguous, Layout::zigzag}) {
    VizParams p = run_params(Mode::p2p, l, 4, 32);
    p.cp.window = 4;  // zigzag under a window: blocks no rank ever computes (lesson 14)
    const RunModel m = RunModel::build(p);
    for (auto [W, H] : {std::pair<float, float>{1264, 640}, {960, 600}, {800, 900}}) {
      const Scene s = masks_view(m, ViewState{}, W, H);
      INFO(to_string(l) << ", " << W << " x " << H);
      CHECK(s.find("panel_label").size() == 3);  // global, rank order, tile grid
      CHECK(s.find("bars_label").size() == 1);
      CHECK(s.find("bar_label").size() == s.find("flops_bar").size());
      CHECK(s.find("grid_label").size() >= 4);  // r0..r3 at least
      // the two matrices use the canvas (a row of three squares, or two over the tile grid): a
      // quarter of it at least (a row of three on a tall canvas covered 15%)
      const auto frames = s.find("matrix");
      REQUIRE(frames.size() == 2);
      float area = 0;
      for (const Prim* f : frames) area += (f->pts[2] - f->pts[0]) * (f->pts[3] - f->pts[1]);
      CHECK(area >= 0.25f * W * H);
      CHECK(has_text(s, "legend_text", "blank cell: a tile never computed"));
      CHECK(!s.find("cell").empty());
    }
  }
  // the ring view keys its blank cells too
  const RunModel r = RunModel::build(run_params(Mode::p2p, Layout::zigzag, 4, 32));
  CHECK(has_text(ring_view(r, ViewState{}, 1264, 640), "legend_text", "blank: computed by no rank so far"));
}
