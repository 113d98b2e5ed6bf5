// test_viz_timeline.cpp: cplab-viz's timeline view and its run model's times (viz/scene), checked
// without a display: a planned run on cplab plan's alpha-beta model (reference/plan/perf_model.h),
// its exposed communication against predict() and the planner, and a trace file's measured times.
// What it is not: the other views (test_viz.cpp, test_viz_scene.cpp) or PNGs.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "plan/perf_model.h"
#include "plan/planner.h"
#include "plan/trace_plan.h"
#include "views.h"
#include "viz_helpers.h"

using namespace cplab;
using namespace cplab::viz;

using namespace cplab::viz::test;

TEST_CASE("viz timeline: one compute rectangle per rank and step at small sizes, planned traces are modelled") {
  const RunModel m = RunModel::build(run_params(Mode::p2p, Layout::zigzag, 4, 32));
  CHECK(m.timing == RunModel::Timing::model);
  const Scene s = timeline_view(m, ViewState{}, 1200, 600);
  std::map<int, int> per_rank;
  for (const Prim* p : s.find("compute")) ++per_rank[p->rank];
  REQUIRE(per_rank.size() == 4);
  for (const auto& [r, c] : per_rank) CHECK(c == 8);  // 4 forward + 4 backward steps
  std::map<int, int> comm;
  for (const Prim* p : s.find("comm")) ++comm[p->rank];
  for (const auto& [r, c] : comm) CHECK(c >= 7);  // 3 forward steps send, 4 backward; send and recv lanes merge
}

TEST_CASE("viz timeline: cplab plan's model hides the transfers of p2p cp 8 x 128K on NVLink and exposes them on 100 GbE") {
  // the run of the view's "done when": MHA (32 heads of 128, Llama 2 7B's attention), so that a KV
  // block weighs as much as its tile computes; plan's defaults otherwise (h100, 8 GPUs per node)
  for (const std::string link : {"nvlink4", "eth100"}) {
    CAPTURE(link);
    VizParams p = run_params(Mode::p2p, Layout::zigzag, 8, 131072);
    p.cp.heads = 32, p.cp.kv_heads = 32, p.cp.head_dim = 128;
    p.perf.intra = p.perf.inter = link;  // --link
    const RunModel m = RunModel::build(p);
    REQUIRE(m.timing == RunModel::Timing::model);
    REQUIRE(m.pred.has_value());
    // the view's numbers are predict()'s, called directly, and cplab plan's for the same run
    PerfAssumptions a;
    a.intra = a.inter = link_preset(link);
    const PerfPrediction want = predict(plan_trace(*m.spec), *m.spec, a);
    CHECK((m.pred->exposed_comm_us == want.exposed_comm_us && m.pred->fwd_us == want.fwd_us && m.pred->bwd_us == want.bwd_us));
    const auto plan = plan_options(PlanProblem{131072, 32, 32, 128, 8, true, true}, a);
    const auto zigzag = std::find_if(plan.begin(), plan.end(), [](const PlanOption& o) { return o.label == "p2p zigzag"; });
    REQUIRE(zigzag != plan.end());
    CHECK(zigzag->pred.exposed_comm_us == want.exposed_comm_us);
    const Scene s = timeline_view(m, ViewState{}, 1200, 600);
    CHECK(s.title.find("exposed communication " + fixed(want.exposed_comm_us / 1e3, 3) + " ms (red), forward " + fixed(want.fwd_us / 1e3, 3) +
                       " ms, backward " + fixed(want.bwd_us / 1e3, 3) + " ms") != std::string::npos);
    REQUIRE_FALSE(s.notes.empty());
    const std::vector<std::string> notes = {"intra-node " + link, "inter-node " + link, "8 GPUs per node", "2 bytes per element", "h100 "};
    for (const std::string& note : notes) CHECK(s.notes[0].find(note) != std::string::npos);
    ViewState over;  // the mouse on rank 0's comm lane at the start of step 0: the KV block it receives
    over.mx = 72, over.my = 24 + 1.5f * (600 - 24 - 40) / 16.0f;
    const std::string hover = timeline_view(m, over, 1200, 600).hover;
    CAPTURE(hover);
    CHECK(hover.find("recv kv (p2p) rank 7 -> rank 0, 512 MiB in the trace's float, 256 MiB") != std::string::npos);  // 16K tokens x 32 x 128 x K, V
    CHECK(hover.find("on the wire at 2 bytes per element, modelled 0 ns .. " + human_time_us(want.steps[0].rank_comm_us[7])) != std::string::npos);
    const auto exposed = s.find("exposed");
    if (link == "nvlink4") {
      CHECK(want.exposed_comm_us == 0);
      CHECK(exposed.empty());
    } else {
      CHECK(want.exposed_comm_us > 0.5 * want.total_us());  // 11.5 GB/s carries a 32-head KV block slower than it is computed
      REQUIRE_FALSE(exposed.empty());
      double px = 0;  // the bands over the lanes cover the exposed share of the axis, to a pixel per band
      int bands = 0;
      for (const Prim* q : exposed)
        if (q->pts[3] - q->pts[1] > 10) px += q->pts[2] - q->pts[0], ++bands;
      CHECK(std::abs(px - want.exposed_comm_us / want.total_us() * (1200 - 80)) <= bands + 1.0);
    }
    // the time axis: steps one after another; a rank's tiles from its step's start to its compute,
    // a send for its rank's comm, a receive for its sender's
    double t = 0;
    for (size_t k = 0; k < m.steps.size(); t += want.steps[k].time_us, ++k) CHECK(m.step_span[k].t0 == t);
    const auto& ev = m.trace.events();
    std::map<std::pair<size_t, int>, double> tiles_end;  // (step, rank)
    for (size_t i = 0; i < ev.size(); ++i) {
      const auto k = static_cast<size_t>(m.step_of[i]);
      const double t0 = m.step_span[k].t0;
      if (ev[i].kind == EventKind::tile) {
        tiles_end[{k, ev[i].rank}] = std::max(tiles_end[{k, ev[i].rank}], m.timed[i].t1 - t0);
      } else {
        const int sender = ev[i].kind == EventKind::send ? ev[i].rank : ev[i].peer;
        CHECK(m.timed[i].t0 == t0);
        CHECK(m.timed[i].t1 - t0 == doctest::Approx(want.steps[k].rank_comm_us[static_cast<size_t>(sender)]));
      }
    }
    for (const auto& [kr, end] : tiles_end) CHECK(end == doctest::Approx(want.steps[kr.first].rank_compute_us[static_cast<size_t>(kr.second)]));
  }
  // cp 12 on nodes of 8: the timeline says the rule (cplab plan's) it breaks; the other views draw the run
  const RunModel m = RunModel::build(run_params(Mode::p2p, Layout::zigzag, 12, 96));
  CHECK(m.why_no_model == "cp 12 must fill whole nodes of gpus-per-node = 8");
  CHECK(timeline_view(m, ViewState{}, 1200, 600).title.find("cp 12 must fill whole nodes") != std::string::npos);
  CHECK_FALSE(ring_view(m, ViewState{}, 1200, 600).find("tile").empty());
}

TEST_CASE("viz trace file: the model has the file's trace and no spec") {
  const RunModel planned = RunModel::build(run_params(Mode::p2p, Layout::zigzag, 4, 32));
  const auto path = std::filesystem::temp_directory_path() / "cplab_test_viz_trace.json";
  std::ofstream(path) << planned.trace.to_json().dump();
  VizParams p = run_params(Mode::p2p, Layout::zigzag, 3, 1000);  // a spec that would be refused: unused
  p.trace_file = path.string();
  const RunModel m = RunModel::build(p);
  std::filesystem::remove(path);
  CHECK(m.from_file());
  CHECK_FALSE(m.spec.has_value());
  CHECK(m.trace.events().size() == planned.trace.events().size());
  CHECK(m.steps == planned.steps);
  CHECK(ownership_view(m, ViewState{}, 1000, 500).title.find("needs a run's parameters") != std::string::npos);
  CHECK(timeline_view(m, ViewState{}, 1200, 600).find("compute").size() == planned.trace.cp() * 8u);
  // a planned trace records no times: a placeholder, said so; no model, no exposed band
  CHECK(m.timing == RunModel::Timing::flops);
  CHECK(timeline_view(m, ViewState{}, 1200, 600).title.find("records no times") != std::string::npos);
  CHECK(timeline_view(m, ViewState{}, 1200, 600).find("exposed").empty());
  // measured times are kept (Trace::timeline with dur_us): the reference's on the CPU, or a GPU's
  Trace timed(planned.trace.cp());
  for (Event e : planned.trace.events()) {
    if (e.kind == EventKind::tile) e.dur_us = 10.0 + e.rank;
    timed.add(e);
  }
  const auto expect = timed.timeline([](const Event& e) { return e.dur_us; });
  for (const bool gpu : {false, true}) {
    if (gpu) timed.meta()["measured_on"] = "NVIDIA H100 80GB HBM3";
    std::ofstream(path) << timed.to_json().dump();
    const RunModel t = RunModel::build(p);
    std::filesystem::remove(path);
    CHECK(t.timing == (gpu ? RunModel::Timing::measured_gpu : RunModel::Timing::measured_cpu));
    REQUIRE(t.timed.size() == expect.size());
    for (size_t i = 0; i < expect.size(); ++i) CHECK((t.timed[i].t0 == expect[i].t0 && t.timed[i].t1 == expect[i].t1));
    CHECK(timeline_view(t, ViewState{}, 1200, 600).title.find(gpu ? "measured GPU times of the tiles on NVIDIA H100" : "measured CPU times") !=
          std::string::npos);
  }
}

