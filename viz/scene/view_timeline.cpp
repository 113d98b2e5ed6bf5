// view_timeline.cpp: per-rank compute and communication lanes of a trace (see views.h).
//
// The time axis is the trace's own (Trace::timeline, the same as its Chrome form): measured tile
// times for a run, FLOPs at RunModel::kModelTflops for a planned trace. Items narrower than a pixel
// merge with their neighbours of the same kind, so 64 ranks x 128 steps stay a few thousand
// rectangles.
#include <algorithm>

#include "views.h"

namespace cplab::viz {

Scene timeline_view(const RunModel& m, const ViewState& v, float W, float H) {
  Scene s;
  s.width = W, s.height = H;
  const int P = m.trace.cp();
  const auto& ev = m.trace.events();
  double end = 0;
  for (const auto& t : m.timed) end = std::max(end, t.t1);
  if (end <= 0) end = 1;
  const double t0 = v.t1 > v.t0 ? v.t0 : 0, t1 = v.t1 > v.t0 ? v.t1 : end;
  s.title = std::string("timeline: ") + (m.modelled_time ? "tile time modelled as FLOPs at " + fixed(RunModel::kModelTflops, 0) +
                                                                " TFLOP/s (a planned trace records no times)"
                                                          : "measured CPU time of the reference's tiles") +
            ", " + human_time_us(end) + " in all";
  const float x0 = 70, w = W - x0 - 10, y0 = 24, lane_h = std::max(1.0f, (H - y0 - 40) / static_cast<float>(2 * P));
  auto X = [&](double t) { return x0 + static_cast<float>((t - t0) / (t1 - t0) * w); };
  for (int lane = 0; lane < 2 * P; ++lane) {
    const int r = lane / 2;
    const bool comm = lane % 2 == 1;
    const float y = y0 + static_cast<float>(lane) * lane_h;
    if (lane_h >= 7 && P <= 32) s.text(4, y - 3, "r" + std::to_string(r) + (comm ? " comm" : " comp"), comm ? kLight : kText);
    // merge items closer than a pixel and of one kind
    float cx0 = -1, cx1 = -1;
    int cur_step = -1;
    Rgba cur{};
    size_t first = 0;  // the first event of the current rectangle
    auto flush = [&]() {
      if (cx1 > cx0) {
        s.rect(cx0, y, std::max(cx1 - (cx1 - cx0 > 4 ? 1.0f : 0.0f), cx0 + 1), y + lane_h * 0.85f, cur, kNone, comm ? "comm" : "compute", r);
        s.prims.back().id = static_cast<int>(first);
      }
    };
    auto describe = [&](const Event& e) {
      return comm ? to_string(e.kind) + " " + e.tensor + " (" + e.op + ", " + human_bytes(static_cast<double>(e.bytes)) + ") " +
                        (e.kind == EventKind::send ? "to" : "from") + " rank " + std::to_string(e.peer)
                  : to_string(e.phase) + " step " + std::to_string(e.step) + ": " + e.section + ", " + e.mask + ", " +
                        human_count(static_cast<double>(e.flops)) + " FLOP";
    };
    for (size_t i : m.lanes[static_cast<size_t>(lane)]) {
      const Event& e = ev[i];
      if (m.timed[i].t1 < t0 || m.timed[i].t0 > t1) continue;
      const float a = std::max(x0, X(m.timed[i].t0)), b = std::min(x0 + w, X(m.timed[i].t1));
      const Rgba c = comm ? (e.kind == EventKind::send ? Rgba{110, 150, 200, 255} : Rgba{80, 110, 150, 255})
                          : (e.phase == Phase::fwd ? rank_color(r, P) : mix(rank_color(r, P), kBlack, 0.35));
      // one rectangle per step, unless items are under two pixels wide (then they merge)
      if (cx1 >= 0 && c == cur && a <= cx1 + 1 && (m.step_of[i] == cur_step || b - a < 2)) {
        cx1 = std::max(cx1, b);
      } else {
        flush();
        cx0 = a, cx1 = b, cur = c, cur_step = m.step_of[i], first = i;
      }
      if (v.my >= y && v.my < y + lane_h && v.mx >= a && v.mx < std::max(b, a + 1))
        s.hover = "rank " + std::to_string(r) + ": " + describe(e) + ", " + human_time_us(m.timed[i].t0) + " .. " + human_time_us(m.timed[i].t1);
    }
    flush();
  }
  s.line(x0, H - 34, x0 + w, H - 34, kLight);
  for (int k = 0; k <= 4; ++k) {
    const double t = t0 + (t1 - t0) * k / 4;
    s.text(X(t) - (k == 4 ? 60 : 0), H - 30, human_time_axis(t, t1), kLight);  // one unit on the whole axis
  }
  s.notes.push_back("lanes: compute (forward in the rank's colour, backward darker) and communication (send light, recv dark); "
                    "steps are lockstep, a message spans its step");
  return s;
}

}  // namespace cplab::viz
