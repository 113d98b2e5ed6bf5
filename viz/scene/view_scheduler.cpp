// view_scheduler.cpp: a DCP batch under Megatron v1 and cplab, ranks x time (see views.h).
//
// Two panels on one time scale: rows are ranks, each sample a rectangle over its group's ranks
// from its start to its end (group begin + the samples before it in the group, t(L, size) each from
// the cost model), rounds separated by vertical lines, the lower bound as a dashed line.
#include <algorithm>
#include <cmath>

#include "views.h"

namespace cplab::viz {

namespace {

Rgba sample_color(int i, int n) {
  const Rgba a = rank_color(i % 10, 10), b = rank_color(i, std::max(n, 11));
  return n <= 10 ? a : b;
}

void panel(Scene& s, const SchedModel& m, const DcpSchedule& d, const std::string& name, float x, float y, float w,
           float h, double tmax, const ViewState& v) {
  const float unit_h = h / static_cast<float>(m.ranks);
  auto X = [&](double t) { return x + static_cast<float>(t / tmax * w); };
  s.text(x, y - 18,
         name + ": makespan " + fixed(d.makespan, 2) + ", lower bound " + fixed(m.bound.moldable, 2) + ", ratio " +
             fixed(d.makespan / m.bound.moldable, 4) + ", utilization " + fixed(d.utilization, 3) + ", " +
             std::to_string(d.rounds.size()) + " round(s), " + (d.aligned ? "all groups aligned" : "UNALIGNED groups"),
         d.aligned ? kText : Rgba{240, 110, 110, 255});
  s.rect(x, y, x + w, y + h, Rgba{34, 34, 40, 255}, kDim, "frame");
  double t0 = 0;
  const int n = static_cast<int>(m.lengths.size());
  for (size_t ri = 0; ri < d.rounds.size(); ++ri) {
    const DcpRound& r = d.rounds[ri];
    for (const DcpGroup& g : r.groups) {
      double t = t0 + g.begin;
      for (int smp : g.samples) {
        const double dt = m.cost.time(m.lengths[static_cast<size_t>(smp)], g.size);
        const float y0 = y + static_cast<float>(g.start) * unit_h, y1 = y + static_cast<float>(g.start + g.size) * unit_h;
        s.rect(X(t), y0 + 1, X(t + dt), y1 - 1, sample_color(smp, n), kBackground, "sample", smp);
        Prim& p = s.prims.back();
        p.id = static_cast<int>(ri);
        p.peer = static_cast<int>(g.size);
        p.info = name + " round " + std::to_string(ri) + ": sample " + std::to_string(smp) + " (" +
                 std::to_string(m.lengths[static_cast<size_t>(smp)]) + " tokens) on ranks " + std::to_string(g.start) + ".." +
                 std::to_string(g.start + g.size - 1) + " (CP " + std::to_string(g.size) + "), time " + fixed(t, 2) + ".." +
                 fixed(t + dt, 2);
        s.samples.push_back(SampleRec{name, static_cast<int>(ri), smp, m.lengths[static_cast<size_t>(smp)], g.start, g.size, t, t + dt});
        if (X(t + dt) - X(t) > 26 && y1 - y0 > 13) s.text(X(t) + 2, y0 + 1, "s" + std::to_string(smp), kBlack);
        if (v.mx >= X(t) && v.mx < X(t + dt) && v.my >= y0 && v.my < y1) s.hover = p.info;
        t += dt;
      }
    }
    t0 += r.length();
    s.line(X(t0), y, X(t0), y + h, kWhite, 1.5f);
  }
  // the lower bound, dashed
  const float xb = X(m.bound.moldable);
  for (float yy = y; yy < y + h; yy += 8) s.line(xb, yy, xb, std::min(y + h, yy + 4), Rgba{255, 220, 90, 255}, 2.0f);
  if (m.ranks <= 32)
    for (std::int64_t q = 0; q < m.ranks; ++q) s.text(x - 34, y + static_cast<float>(q) * unit_h + unit_h / 2 - 7, "r" + std::to_string(q), kLight);
}

}  // namespace

Scene scheduler_view(const SchedModel& m, const ViewState& v, float W, float H) {
  Scene s;
  s.width = W, s.height = H;
  s.title = "DCP: " + std::to_string(m.lengths.size()) + " sequences on " + std::to_string(m.ranks) + " ranks, at most " +
            std::to_string(m.max_per_rank) + " tokens per rank, " + m.source;
  const double tmax = std::max({m.megatron.makespan, m.cplab.makespan, m.bound.moldable}) * 1.02;
  // two panels and a time axis inside the canvas: 26 px title, 44 px between, 22 px of axis
  const float x = 44, w = W - x - 12, ph = std::max(20.0f, (H - 26 - 44 - 22) / 2);
  panel(s, m, m.megatron, "Megatron v1", x, 26, w, ph, tmax, v);
  const float y2 = 26 + ph + 44;
  panel(s, m, m.cplab, "cplab", x, y2, w, ph, tmax, v);
  // time ticks under the second panel, in the cost model's units
  const double step = std::pow(10.0, std::floor(std::log10(tmax / 5)));
  const double tick = tmax / step > 25 ? 5 * step : tmax / step > 10 ? 2 * step : step;
  for (double t = 0; t <= tmax; t += tick) {
    const float xt = x + static_cast<float>(t / tmax * w);
    s.line(xt, y2 + ph, xt, y2 + ph + 4, kLight);
    const std::string label = fixed(t, tick < 1 ? 2 : 0);
    s.text(std::min(xt, x + w - text_width(label)), y2 + ph + 5, label, kLight, "tick");
  }
  s.notes.push_back("time in cost units ->; white lines: ends of rounds; yellow dashes: the lower bound; "
                    "a rectangle = one sequence on its group of ranks (s3 = sample 3)");
  s.notes.push_back("cost: " + m.cost.describe());
  return s;
}

}  // namespace cplab::viz
