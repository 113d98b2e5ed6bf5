// view_infer_timeline.cpp: the two variants an inference step chooses between, stacked, step by step
// (see views_infer.h): prefill pass-KV (p2p) against pass-Q (pass-q), decode decode-pass-q against
// decode-ag, each from its own planned trace of the same step.
//
// Each variant is a band of lanes, one per rank, and a column per trace step (the ring's steps, then
// pass-Q's closing all-to-all; decode-ag: gather, tiles, all-to-all). In a rank's cell, the upper bar is
// the bytes it sends at that step and the lower bar its FLOPs, both on one scale for the two
// variants, so the longer bar is the larger tensor. The axis is steps, not time: cplab plan prices the
// traces (its alpha-beta model); this view shows what that model is given. Every bar's message is a
// send of its trace (MessageRec; the scene test compares them).
#include <algorithm>

#include "views_infer.h"

namespace cplab::viz {

Scene infer_timeline_view(const InferModel& m, const ViewState&, float W, float H) {
  Scene s;
  s.width = W, s.height = H;
  const int N = static_cast<int>(m.spec().N());
  const size_t V = m.pair_traces.size();
  // per variant, per (step, rank): bytes sent and FLOPs; one scale for both variants
  std::vector<std::vector<std::pair<Phase, int>>> steps(V);
  std::vector<std::vector<double>> bytes(V), flops(V);
  double max_b = 1, max_f = 1;
  for (size_t t = 0; t < V; ++t) {
    steps[t] = m.pair_traces[t].steps();
    bytes[t].assign(steps[t].size() * static_cast<size_t>(N), 0);
    flops[t].assign(steps[t].size() * static_cast<size_t>(N), 0);
    for (const Event& e : m.pair_traces[t].events()) {
      if (e.phase != Phase::fwd || (e.kind != EventKind::send && e.kind != EventKind::tile)) continue;
      const auto k = static_cast<size_t>(std::find(steps[t].begin(), steps[t].end(), std::make_pair(e.phase, e.step)) - steps[t].begin());
      const size_t c = k * static_cast<size_t>(N) + static_cast<size_t>(e.rank);
      if (e.kind == EventKind::send) bytes[t][c] += static_cast<double>(e.bytes);
      else flops[t][c] += static_cast<double>(e.flops);
    }
    for (double b : bytes[t]) max_b = std::max(max_b, b);
    for (double x : flops[t]) max_f = std::max(max_f, x);
  }
  std::vector<double> tot(V, 0);
  std::string head;
  for (size_t t = 0; t < V; ++t) {
    const std::vector<double> per = infer_per_rank(m.pair_traces[t], EventKind::send, N);
    tot[t] = *std::max_element(per.begin(), per.end());
    head += (t ? " against " : "") + infer_variant_label(m.pair_runs[t].spec.mode());
  }
  s.title = head + ": the most bytes a rank sends " + (V == 2 ? std::to_string(static_cast<std::int64_t>(tot[0])) + " vs " +
                                                                  std::to_string(static_cast<std::int64_t>(tot[1]))
                                                            : std::string());
  const float x0 = 90, w = W - x0 - 12, band = (H - 40) / static_cast<float>(std::max<size_t>(1, V));
  for (size_t t = 0; t < V; ++t) {
    const InferSpec& sp = m.pair_runs[t].spec;
    const float y0 = 8 + static_cast<float>(t) * band;
    const size_t K = steps[t].size();
    const float colw = w / static_cast<float>(std::max<size_t>(1, K));
    const float lane = std::min(30.0f, (band - 40) / static_cast<float>(N));
    s.text(8, y0, infer_variant_label(sp.mode()) + ": " + sp.info().travels + " travels", kWhite, "variant");
    const float ly = y0 + 20;
    s.panel(infer_variant_label(sp.mode()), x0, ly, x0 + w, ly + lane * static_cast<float>(N));
    for (size_t k = 0; k < K; ++k) {
      const float cx = x0 + static_cast<float>(k) * colw;
      s.line(cx, ly, cx, ly + lane * static_cast<float>(N), kDim, 1.0f);
      if (colw > 40 || k == 0) s.text(cx + 2, ly + lane * static_cast<float>(N) + 2, "step " + std::to_string(steps[t][k].second), kLight);
      for (int r = 0; r < N; ++r) {
        const size_t c = k * static_cast<size_t>(N) + static_cast<size_t>(r);
        const float ry = ly + static_cast<float>(r) * lane, bw = colw - 6;
        const Rgba rc = rank_color(r, N);
        if (bytes[t][c] > 0) {
          s.rect(cx + 3, ry + 2, cx + 3 + std::max(1.0f, static_cast<float>(bytes[t][c] / max_b) * bw), ry + lane / 2, rc, kNone, "comm_bar", r);
          s.prims.back().info = std::to_string(static_cast<std::int64_t>(bytes[t][c])) + " bytes sent";
          if (bw > 90 && lane >= 16) s.text(cx + 5, ry + 1, human_bytes(bytes[t][c]), kBlack);
        }
        if (flops[t][c] > 0) {
          s.rect(cx + 3, ry + lane / 2, cx + 3 + std::max(1.0f, static_cast<float>(flops[t][c] / max_f) * bw), ry + lane - 2,
                 mix(rc, kBackground, 0.5), kNone, "compute_bar", r);
          s.prims.back().info = human_count(flops[t][c]) + " FLOPs";
        }
      }
    }
    for (int r = 0; r < N && lane >= 10; ++r) s.text(8, ly + static_cast<float>(r) * lane + lane / 2 - 7, "rank " + std::to_string(r), rank_color(r, N));
    for (const Event& e : m.pair_traces[t].events())
      if (e.kind == EventKind::send && e.phase == Phase::fwd)
        s.messages.push_back(MessageRec{e.rank, e.peer, to_string(e.phase), e.op, e.tensor, e.step, e.bytes, -1, -1});
    if (N <= 16)
      s.notes.push_back(infer_variant_label(sp.mode()) + ": bytes sent per rank " + count_list(infer_per_rank(m.pair_traces[t], EventKind::send, N)) +
                        ", messages per rank " + count_list([&] {
                          std::vector<double> v;
                          for (std::int64_t x : m.pair_traces[t].messages_sent_per_rank()) v.push_back(static_cast<double>(x));
                          return v;
                        }()));
  }
  s.notes.push_back("per rank and step: upper bar = bytes sent, lower bar = FLOPs, each on one scale for both variants; the axis "
                    "is the trace's steps, not time (cplab plan prices them)");
  return s;
}

}  // namespace cplab::viz
