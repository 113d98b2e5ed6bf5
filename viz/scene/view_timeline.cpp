// view_timeline.cpp: per-rank compute and communication lanes of a trace (see views.h).
//
// The time axis is the model's (model.h RunModel::timed): for a planned trace, cplab plan's
// alpha-beta model (perf_model.h predict: each rank's tiles and transfers per step, a step as long
// as its slowest rank's max(compute, comm)), with the part of every step after its slowest compute
// (exposed communication, the sum `cplab plan` prints) marked by a red band tagged "exposed", the
// forward and backward spans labelled above the lanes, and the totals and assumptions in the title
// and notes; for a trace file, its measured tile times (the CPU reference's or a GPU's), a message
// spanning its step. Items narrower than a pixel merge with their neighbours of the same kind, so
// 64 ranks x 128 steps stay a few thousand rectangles; every rectangle keeps its first event, and
// the hover names the event under the mouse.
// What it is not: the model (perf_model.h) or the time axis (model.cpp): nothing here computes a time.
#include <algorithm>
#include <cmath>

#include "core/util.h"
#include "views.h"
#include "views_infer.h"

namespace cplab::viz {

namespace {

inline constexpr Rgba kExposed{230, 60, 60, 255};

std::string ms(double us) { return fixed(us / 1e3, 3) + " ms"; }  // as cplab plan's table prints times

// "nvlink4 370/370/320, alpha 15 us": GB/s for p2p / all-gather / all-to-all, as cplab plan lists them
std::string link_text(const LinkPreset& l) {
  return l.name + " " + approx(l.p2p_GBps) + "/" + approx(l.allgather_GBps) + "/" + approx(l.a2a_GBps) + ", alpha " + approx(l.alpha_us) + " us";
}

std::string title_of(const RunModel& m, double end) {
  using T = RunModel::Timing;
  if (m.timing == T::model) {
    const PerfPrediction& p = *m.pred;
    return "timeline (cplab plan's model): exposed communication " + ms(p.exposed_comm_us) + " (red), forward " + ms(p.fwd_us) +
           ", backward " + ms(p.bwd_us);
  }
  if (m.timing == T::measured_gpu)
    return "timeline: measured GPU times of the tiles on " + m.trace.meta().at("measured_on") + " (a `cplab-bench cp --trace` file), " +
           human_time_us(end) + " in all";
  if (m.timing == T::measured_cpu)
    return "timeline: measured CPU times of the reference's tiles (a `cplab run --trace` file), " + human_time_us(end) + " in all";
  return "timeline: the trace file records no times: tiles drawn as FLOPs at " + fixed(RunModel::kFileTflops, 0) +
         " TFLOP/s (a placeholder), " + human_time_us(end) + " in all";
}

}  // namespace

Scene timeline_view(const RunModel& m, const ViewState& v, float W, float H) {
  if (m.infer) return infer_timeline_view(*m.infer, v, W, H);  // an inference step (issue 37): views_infer.h
  Scene s;
  s.width = W, s.height = H;
  if (m.timing == RunModel::Timing::model && !m.pred) {
    s.title = "timeline: no model of this run: " + m.why_no_model;
    return s;
  }
  const bool model = m.timing == RunModel::Timing::model;
  const int P = m.trace.cp();
  const auto& ev = m.trace.events();
  double end = 0;
  for (const auto& t : m.step_span) end = std::max(end, t.t1);
  if (end <= 0) end = 1;
  const double t0 = v.t1 > v.t0 ? v.t0 : 0, t1 = v.t1 > v.t0 ? v.t1 : end;
  s.title = title_of(m, end);
  const float x0 = 70, w = W - x0 - 10, y0 = 24, lane_h = std::max(1.0f, (H - y0 - 40) / static_cast<float>(2 * P));
  const float lanes_end = y0 + static_cast<float>(2 * P) * lane_h;
  auto X = [&](double t) { return x0 + static_cast<float>((t - t0) / (t1 - t0) * w); };
  auto clip = [&](double t) { return std::clamp(X(t), x0, x0 + w); };
  const auto in_box = [&](float a, float b, float ya, float yb) { return v.my >= ya && v.my < yb && v.mx >= a && v.mx < std::max(b, a + 1); };
  // the forward and backward spans, labelled above the lanes
  for (Phase ph : {Phase::fwd, Phase::bwd}) {
    double a = INFINITY, b = -INFINITY;
    for (size_t k = 0; k < m.steps.size(); ++k)
      if (m.steps[k].first == ph) a = std::min(a, m.step_span[k].t0), b = std::max(b, m.step_span[k].t1);
    if (!(b > a) || b < t0 || a > t1) continue;
    const float xa = clip(a), xb = clip(b);
    s.rect(xa, 2, std::max(xb - 1, xa + 1), 18, ph == Phase::fwd ? Rgba{60, 75, 95, 255} : Rgba{75, 60, 95, 255}, kNone, "phase");
    s.prims.back().info = to_string(ph);
    const std::string label = (ph == Phase::fwd ? "forward " : "backward ") + human_time_us(b - a);
    if (xb - xa > 8 * static_cast<float>(label.size())) s.text(xa + 4, 3, label, kText);
  }
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
    auto describe = [&](size_t i) {
      const Event& e = ev[i];
      const std::string when = (model ? ", modelled " : comm ? ", its step " : ", measured ") + human_time_us(m.timed[i].t0) + " .. " +
                               human_time_us(m.timed[i].t1);
      if (!comm)
        return "rank " + std::to_string(r) + ": " + to_string(e.phase) + " step " + std::to_string(e.step) + ": " + section_label(e.section) + ", " + e.mask +
               ", " + human_count(static_cast<double>(e.flops)) + " FLOP" + when;
      const int from = e.kind == EventKind::send ? e.rank : e.peer, to = e.kind == EventKind::send ? e.peer : e.rank;
      std::string bytes = human_bytes(static_cast<double>(e.bytes));
      if (model)
        bytes += " in the trace's " + m.spec->dtype + ", " + human_bytes(static_cast<double>(e.bytes) * wire_scale(*m.spec, m.assumptions)) +
                 " on the wire at " + fixed(m.assumptions.bytes_per_element, 0) + " bytes per element";
      return to_string(e.kind) + " " + e.tensor + " (" + e.op + ") rank " + std::to_string(from) + " -> rank " + std::to_string(to) + ", " +
             bytes + when + (model && e.kind == EventKind::recv ? " (its sender's transfer)" : "");
    };
    for (size_t i : m.lanes[static_cast<size_t>(lane)]) {
      const Event& e = ev[i];
      if (m.timed[i].t1 < t0 || m.timed[i].t0 > t1) continue;
      if (e.kind == EventKind::send)  // the message as data: its modelled (or its step's) times
        s.messages.push_back(MessageRec{e.rank, e.peer, to_string(e.phase), e.op, e.tensor, e.step, e.bytes, m.timed[i].t0, m.timed[i].t1});
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
      if (in_box(a, b, y, y + lane_h)) s.hover = describe(i);
    }
    flush();
  }
  if (model) {
    // exposed communication: per step, from its slowest compute to its end, over every lane (bands
    // closer than a pixel merge, as the lanes' rectangles do)
    const PerfPrediction& p = *m.pred;
    float ba = -1, bb = -1;
    auto band = [&]() {
      if (bb < 0) return;
      s.rect(ba, y0, std::max(bb, ba + 1), lanes_end, with_alpha(kExposed, 90), kExposed, "exposed");
      s.rect(ba, lanes_end + 1, std::max(bb, ba + 1), lanes_end + 5, kExposed, kNone, "exposed");
    };
    for (size_t k = 0; k < p.steps.size(); ++k) {
      const StepTime& st = p.steps[k];
      if (!(st.time_us > st.compute_us)) continue;
      const double ea = m.step_span[k].t0 + st.compute_us, eb = m.step_span[k].t1;
      if (eb < t0 || ea > t1) continue;
      const float a = clip(ea), b = clip(eb);
      if (bb >= 0 && a <= bb + 1) bb = std::max(bb, b);
      else band(), ba = a, bb = b;
      if (in_box(a, b, y0, lanes_end + 5))
        s.hover = to_string(st.phase) + " step " + std::to_string(st.step) + ": exposed communication " + human_time_us(st.time_us - st.compute_us) +
                  " (the step lasts " + human_time_us(st.time_us) + ": slowest compute " + human_time_us(st.compute_us) + ", slowest comm " +
                  human_time_us(st.comm_us) + ")";
    }
    band();
  }
  s.line(x0, H - 34, x0 + w, H - 34, kLight);
  for (int k = 0; k <= 4; ++k) {
    const double t = t0 + (t1 - t0) * k / 4;
    s.text(X(t) - (k == 4 ? 60 : 0), H - 30, human_time_axis(t, t1), kLight);  // one unit on the whole axis
  }
  if (model) {
    const PerfAssumptions& a = m.assumptions;
    const index_t nodes = (P + a.gpus_per_node - 1) / a.gpus_per_node;
    s.notes.push_back("assumed: " + a.gpu.name + " " + approx(a.gpu.fwd_tflops) + "/" + approx(a.gpu.bwd_tflops) + " TFLOP/s fwd/bwd, HBM " +
                      approx(a.gpu.hbm_TBps) + " TB/s; GB/s p2p/all-gather/all-to-all: intra-node " + link_text(a.intra) + "; inter-node " +
                      link_text(a.inter) + "; " + std::to_string(a.gpus_per_node) + " GPUs per node (" + std::to_string(nodes) +
                      (nodes == 1 ? " node" : " nodes") + "); " + approx(a.bytes_per_element) + " bytes per element (bf16); " +
                      approx(a.tau_us) + " us per tile");
    s.notes.push_back("a step lasts max(compute, comm) of its slowest rank; red: after its slowest compute; a message: its sender's transfer");
  } else {
    s.notes.push_back("lanes: compute (forward in the rank's colour, backward darker) and communication (send light, recv dark); "
                      "steps are lockstep, a message spans its step");
  }
  return s;
}

}  // namespace cplab::viz
