// view_infer_common.cpp: what the inference views share: the T x (P+T) frame, its cells from the
// reference's mask, a tile's record (see views_infer.h).
#include <algorithm>
#include <cmath>
#include <vector>

#include "layout/thd.h"
#include "views_infer.h"

namespace cplab::viz {

InferFrame infer_frame(const InferSpec& sp, float x, float y, float w, float h) {
  InferFrame f;
  f.x = x, f.y = y, f.T = sp.T(), f.KV = sp.KV();
  f.cw = static_cast<double>(w) / static_cast<double>(f.KV);
  f.ch = std::min(static_cast<double>(h) / static_cast<double>(f.T), 28.0);
  return f;
}

void draw_infer_frame(Scene& s, const InferModel& m, const InferFrame& f) {
  const InferSpec& sp = m.spec();
  const auto X = [&](index_t k) { return f.x + static_cast<float>(f.cw * static_cast<double>(k)); };
  const auto Y = [&](index_t i) { return f.y + static_cast<float>(f.ch * static_cast<double>(i)); };
  for (index_t b = 0; b < sp.B(); ++b) {
    const index_t k0 = sp.koff()[static_cast<size_t>(b)], k1 = sp.koff()[static_cast<size_t>(b) + 1];
    const index_t P = sp.fields().cached[static_cast<size_t>(b)];
    const index_t q0 = sp.qoff()[static_cast<size_t>(b)], q1 = sp.qoff()[static_cast<size_t>(b) + 1];
    // the request's block: its queries x its cache (darker) and its new tokens
    if (P > 0) s.rect(X(k0), Y(q0), X(k0 + P), Y(q1), Rgba{38, 38, 46, 255}, kNone, "cache_band", static_cast<int>(b));
    s.rect(X(k0 + P), Y(q0), X(k1), Y(q1), Rgba{48, 48, 58, 255}, kNone, "new_band", static_cast<int>(b));
    if (X(k0 + P) - X(k0) > 70) s.text(X(k0) + 2, f.y - 16, "cache " + std::to_string(P), kLight);
    if (X(k1) - X(k0 + P) > 50) s.text(X(k0 + P) + 2, f.y - 16, "new " + std::to_string(k1 - k0 - P), kLight);
    if (b > 0) {
      s.line(X(k0), f.y, X(k0), f.y1(), kLight, 1.0f);
      s.line(f.x, Y(q0), f.x1(), Y(q0), kLight, 1.0f);
    }
    if (P > 0) s.line(X(k0 + P), Y(q0), X(k0 + P), Y(q1), Rgba{120, 120, 135, 255}, 1.0f);
  }
  s.rect(f.x, f.y, f.x1(), f.y1(), kNone, kDim, "frame");
}

void draw_infer_cells(Scene& s, const InferModel& m, const InferFrame& f, const std::vector<index_t>& rows,
                      const std::vector<index_t>& cols, Rgba fill, const std::string& tag, int rank, const std::string& info) {
  if (rows.empty() || cols.empty()) return;
  const InferSpec& sp = m.spec();
  const Mask mk = token_mask(sp.kv_packing(), rows, cols, sp.rule());  // the variants' own mask (infer_attention.h)
  const auto nq = static_cast<index_t>(rows.size()), nk = static_cast<index_t>(cols.size());
  const bool exact = static_cast<double>(nq) * static_cast<double>(nk) <= static_cast<double>(kExactCells);
  const auto q_of = [&](index_t a) { return m.query_of_kv[static_cast<size_t>(rows[static_cast<size_t>(a)])]; };
  const auto X = [&](index_t k) { return f.x + static_cast<float>(f.cw * static_cast<double>(k)); };
  // run_end[b]: one past the last key of the run starting at key b (keys side by side in KV space,
  // or closer than a pixel when not exact), so that every row walks its runs, not its keys
  const auto joins = [&](size_t i) {
    const index_t gap = cols[i + 1] - cols[i];
    return gap == 1 || (!exact && static_cast<double>(gap) * f.cw < 1.0);
  };
  std::vector<index_t> run_end(static_cast<size_t>(nk));
  for (index_t b = nk - 1; b >= 0; --b)
    run_end[static_cast<size_t>(b)] = b + 1 < nk && joins(static_cast<size_t>(b)) ? run_end[static_cast<size_t>(b) + 1] : b + 1;
  index_t a = 0;
  while (a < nq) {
    // exact: one query row; otherwise the queries that follow it in query space inside one pixel row
    index_t a1 = a + 1;
    const auto px = [&](index_t i) { return static_cast<std::int64_t>(std::floor(f.ch * static_cast<double>(i))); };
    if (!exact)
      while (a1 < nq && q_of(a1) == q_of(a1 - 1) + 1 && px(q_of(a1)) == px(q_of(a))) ++a1;
    const float y0 = f.y + static_cast<float>(f.ch * static_cast<double>(q_of(a)));
    const float y1 = f.y + static_cast<float>(f.ch * static_cast<double>(q_of(a1 - 1) + 1));
    const KeyRange kr = mk.keys(a, nk);
    for (index_t b = kr.lo; b < kr.hi;) {  // runs of keys side by side in KV space (or within a pixel)
      const index_t e = std::min(run_end[static_cast<size_t>(b)], kr.hi);
      s.rect(X(cols[static_cast<size_t>(b)]), y0, X(cols[static_cast<size_t>(e) - 1] + 1), y1, fill, kNone, tag, rank);
      s.prims.back().info = info;
      b = e;
    }
    a = a1;
  }
}

void draw_infer_tile(Scene& s, const InferModel& m, const InferFrame& f, const Event& e, int panel, Rgba fill) {
  const size_t first = s.prims.size();
  draw_infer_cells(s, m, f, positions(e.rows), positions(e.cols), fill, "tile", e.rank,
                   "rank " + std::to_string(e.rank) + " x KV of rank " + std::to_string(e.peer) + ", step " + std::to_string(e.step) +
                       ", " + std::to_string(e.pairs) + " pairs");
  record_tile(s, e, panel, f.cw, f.ch, first);
}

std::string infer_variant_label(InferMode mode) {
  return infer_info(mode).title;  // the table's title names the --mode spelling
}

std::vector<double> infer_per_rank(const Trace& t, EventKind kind, int N) {
  std::vector<double> v(static_cast<size_t>(N), 0);
  for (const Event& e : t.events())
    if (e.kind == kind && e.phase == Phase::fwd && e.rank >= 0 && e.rank < N)
      v[static_cast<size_t>(e.rank)] += static_cast<double>(kind == EventKind::tile ? e.flops : e.bytes);
  return v;
}

}  // namespace cplab::viz
