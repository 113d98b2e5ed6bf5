// view_infer_ring.cpp: one step of an inference variant's planned trace (see views_infer.h).
//
// Left: the T x (P+T) matrix (new tokens down, cache then new tokens across, per request) with the
// tiles every rank computes at this step, cell by cell from token_mask, coloured by the computing rank
// (the earlier steps' tiles faint underneath).
// Top right: the ranks on a circle and this step's messages (the trace's sends: Q blocks on pass-Q's
// ring, KV blocks on pass-KV's, the gathered Q of decode-ag, the closing all-to-all of the partial
// (O, LSE)); bottom right: per rank, whose Q block and whose KV it computes with at this step (the
// owners of its tiles' rows and columns, from the spec). Notes: the step's and the whole step's bytes
// per rank, summed from the trace.
#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "views_infer.h"

namespace cplab::viz {

Scene infer_ring_view(const InferModel& m, const ViewState& v, float W, float H) {
  Scene s;
  s.width = W, s.height = H;
  const InferSpec& sp = m.spec();
  const int N = static_cast<int>(sp.N());
  const size_t si = static_cast<size_t>(std::clamp<int>(v.step, 0, std::max<int>(0, static_cast<int>(m.steps.size()) - 1)));
  const int step = m.steps.empty() ? 0 : m.steps[si].second;
  std::vector<const Event*> tiles, sends;
  for (const Event& e : m.trace.events()) {
    if (e.phase != Phase::fwd || e.step != step) continue;
    if (e.kind == EventKind::tile) tiles.push_back(&e);
    if (e.kind == EventKind::send) sends.push_back(&e);
  }
  const InferInfo& info = sp.info();
  std::string what = tiles.empty() && !sends.empty() ? "communication only" : std::to_string(tiles.size()) + " tiles";
  s.title = infer_variant_label(sp.mode()) + ", step " + std::to_string(step) + " of 0.." + std::to_string(m.steps.empty() ? 0 : m.steps.back().second) +
            ": " + what + ", " + std::to_string(sends.size()) + " messages; " + info.travels + " travels (" + std::to_string(sp.T()) +
            " new tokens over " + std::to_string(sp.P_total()) + " cached, " + std::to_string(N) + " ranks)";

  // left: the matrix
  const float region_w = std::max(100.0f, W * 0.58f);
  const InferFrame f = infer_frame(sp, 50, 30, region_w - 60, H - 60);
  const int panel = s.panel("matrix", f.x, f.y, f.x1(), f.y1());
  draw_infer_frame(s, m, f);
  // the earlier steps' tiles, faint (not records of this step): at pass-Q's all-to-all, every partial
  // still where it was computed
  for (const Event& e : m.trace.events())
    if (e.kind == EventKind::tile && e.phase == Phase::fwd && e.step < step)
      draw_infer_cells(s, m, f, positions(e.rows), positions(e.cols), with_alpha(rank_color(e.rank, N), 60), "earlier", e.rank,
                       "step " + std::to_string(e.step) + ": rank " + std::to_string(e.rank));
  for (const Event* e : tiles) draw_infer_tile(s, m, f, *e, panel, with_alpha(rank_color(e->rank, N), 230));
  s.text(f.x, f.y1() + 4, "queries: the " + std::to_string(sp.T()) + " new tokens; keys: cache then new, per request", kLight);

  // top right: ranks on a circle and the step's messages
  const float rx = region_w + 10, rw = W - rx - 10;
  const float R = std::max(20.0f, std::min(rw, H * 0.5f) * 0.34f), cx = rx + rw / 2, cy = 20 + R + 14;
  const float node = std::clamp(R * 3.0f / static_cast<float>(N), 3.0f, 14.0f);
  auto pos = [&](int r) {
    const double a = 2 * M_PI * r / N - M_PI / 2;
    return std::pair<float, float>{cx + R * static_cast<float>(std::cos(a)), cy + R * static_cast<float>(std::sin(a))};
  };
  std::map<std::string, std::pair<std::int64_t, std::int64_t>> by_tensor;  // count, bytes
  for (const Event* e : sends) {
    s.messages.push_back(MessageRec{e->rank, e->peer, to_string(e->phase), e->op, e->tensor, e->step, e->bytes, -1, -1});
    auto& bt = by_tensor[e->op + " '" + e->tensor + "'"];
    bt.first += 1, bt.second += e->bytes;
    if (N > 16 || e->rank == e->peer) continue;
    auto [x0, y0] = pos(e->rank);
    auto [x1, y1] = pos(e->peer);
    const float dx = x1 - x0, dy = y1 - y0, len = std::max(1.0f, std::sqrt(dx * dx + dy * dy));
    s.arrow(x0 + dx / len * node, y0 + dy / len * node, x1 - dx / len * node, y1 - dy / len * node,
            with_alpha(rank_color(e->rank, N), 220), e->op == "p2p" ? 2.0f : 1.0f, e->rank, e->peer, e->tensor);
  }
  for (int r = 0; r < N; ++r) {
    auto [x, y] = pos(r);
    s.circle(x, y, node, rank_color(r, N), kBackground, r);
    if (N <= 16) s.text(x - 4, y - 7, std::to_string(r), kBlack);
  }
  float ny = cy + R + node + 12;
  if (sends.empty()) s.text(rx, ny, "no messages at this step", kLight), ny += 16;
  for (const auto& [tensor, cb] : by_tensor) {  // the trace's bytes, exact (the lesson quotes them)
    s.text(rx, ny, tensor + ": " + std::to_string(cb.first) + " messages, " + std::to_string(cb.second) + " bytes", kLight, "message_sum");
    ny += 16;
  }

  // bottom right: what each rank computes with at this step (its tiles' rows' and columns' owners)
  if (!tiles.empty() && N <= 16) {
    std::vector<std::set<int>> q_of(static_cast<size_t>(N)), kv_of(static_cast<size_t>(N));
    for (const Event* e : tiles) {
      for (const Span& a : e->rows)
        for (index_t k = a.begin, c = 0; c < a.count; ++c, k += a.stride)
          q_of[static_cast<size_t>(e->rank)].insert(m.q_owner[static_cast<size_t>(m.query_of_kv[static_cast<size_t>(k)])]);
      for (const Span& b : e->cols)
        for (index_t k = b.begin, c = 0; c < b.count; ++c, k += b.stride) kv_of[static_cast<size_t>(e->rank)].insert(m.kv_owner[static_cast<size_t>(k)]);
    }
    auto names = [](const std::set<int>& x) {
      std::string t;
      for (int r : x) t += (t.empty() ? "r" : ", r") + std::to_string(r);
      return t.empty() ? std::string("-") : t;
    };
    ny += 8;
    s.text(rx, ny, "rank: Q of | KV of (whose tokens its tiles use)", kText);
    ny += 18;
    for (int r = 0; r < N && ny < H - 30; ++r, ny += 16) {
      s.text(rx, ny, "r" + std::to_string(r) + ": Q of " + names(q_of[static_cast<size_t>(r)]) + " | KV of " + names(kv_of[static_cast<size_t>(r)]),
             rank_color(r, N), "holds");
      s.prims.back().rank = r;
    }
  } else if (tiles.empty() && !sends.empty()) {
    const bool a2a = sends.front()->op == "all_to_all";
    s.text(rx, ny + 8, a2a ? "the partial (O, LSE) of every Q block" : "every new token's Q gathered", kText, "comm_step");
    s.text(rx, ny + 24, a2a ? "goes back to its owner, who merges them" : "on every rank", kText, "comm_step");
  }
  std::vector<double> now(static_cast<size_t>(N), 0);
  for (const Event* e : sends) now[static_cast<size_t>(e->rank)] += static_cast<double>(e->bytes);
  if (N <= 16) {
    s.notes.push_back("bytes sent per rank at this step " + count_list(now) + "; in the whole step " +
                      count_list(infer_per_rank(m.trace, EventKind::send, N)) + ", FLOPs " +
                      count_list(infer_per_rank(m.trace, EventKind::tile, N)));
  }
  s.notes.push_back("tiles: colour = rank computing it (faint: earlier steps); filled cells = the (new token, key) pairs the mask leaves (causal with "
                    "the request's cache as offset); darker columns = the cache");
  draw_rank_legend(s, rx, H - 14, rw, N);
  return s;
}

}  // namespace cplab::viz
