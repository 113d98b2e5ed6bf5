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
  for (const Prim* t : masks_view(m, ViewState{}, 1264, 640).find("kind_tile")) {
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
