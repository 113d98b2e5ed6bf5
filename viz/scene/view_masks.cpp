// view_masks.cpp: the causal mask three ways (see views.h).
//
// Left: the global mask (queries down, keys across), each query row in its owner's colour.
// Middle: the same mask with rows and columns in rank order (rank 0's local tokens first, ...):
// block (r, j) is what rank r computes against rank j's KV, exactly the tile the trace records
// (its local rows and keys and its mask kind). Right: one cell per tile of the forward trace, rows
// = ranks, columns = the KV block's rank (ring) or the tile's order (other modes), drawn by shape:
// staircase = diagonal (causal: exactly its visible cells), full square, half rows (only some
// queries), half columns (only some keys), outline = skipped; FLOPs per rank beside each row. The
// notes count the trace's tiles by mask and list each rank's forward FLOPs (up to 16 ranks, exact).
#include <algorithm>
#include <optional>

#include "layout/thd.h"
#include "views.h"

namespace cplab::viz {

Scene masks_view(const RunModel& m, const ViewState& v, float W, float H) {
  Scene s;
  s.width = W, s.height = H;
  if (m.from_file()) {
    s.title = "masks: needs a run's parameters, not a trace file";
    return s;
  }
  const CpSpec& spec = m.cp();
  const Partition& part = spec.partition();
  const int P = static_cast<int>(spec.P());
  const index_t S = part.seq(), n = part.local_len();
  const bool ring = spec.mode() == Mode::p2p;
  s.title = std::string(spec.causal() ? "causal" : "full") + " mask of " + std::to_string(S) + " tokens, " +
            to_string(spec.layout()) + " over " + std::to_string(P) + " ranks";
  const float side = std::max(40.0f, std::min((W - 50) / 3, H - 60));
  const Packing* pk = spec.thd() ? &spec.packing() : nullptr;

  // 1. global mask, rows coloured by owner
  MatrixFrame g{10, 36, side, S};
  s.text(g.x, 16, "global order", kText);
  s.rect(g.x, g.y, g.x + side, g.y + side, Rgba{34, 34, 40, 255}, kDim, "matrix");
  const RunModel::LayoutSpans* mine = nullptr;
  for (const auto& ls : m.layouts)
    if (ls.layout == spec.layout() && ls.why_not.empty()) mine = &ls;
  for (int r = 0; mine != nullptr && r < P; ++r)
    for (const Span& sp : mine->spans[static_cast<size_t>(r)])
      draw_block(s, g, sp, Span{0, S, 1}, spec.causal(), pk, rank_color(r, P), "global_rows", r,
                 "rows of rank " + std::to_string(r));

  // 2. rank order: tile (r, peer) of the forward trace at rows r*n + local rows, columns peer*n + local keys
  const float x2 = g.x + side + 15;
  s.text(x2, 16, ring ? "rank order (rank r's local tokens at r*n)" : "rank order (rows)", kText);
  s.rect(x2, g.y, x2 + side, g.y + side, Rgba{34, 34, 40, 255}, kDim, "matrix");
  const float unit = side / static_cast<float>(S);
  std::vector<double> flops(static_cast<size_t>(P), 0);
  std::vector<std::vector<const Event*>> by_rank(static_cast<size_t>(P));
  for (const Event& e : m.trace.events()) {
    if (e.kind != EventKind::tile || e.phase != Phase::fwd) continue;
    by_rank[static_cast<size_t>(e.rank)].push_back(&e);
    flops[static_cast<size_t>(e.rank)] += static_cast<double>(e.flops);
  }
  // a packed tile's mask ("ranges"): the reference's own token_mask of its query and key tokens
  auto tile_mask = [&](const Event& e) -> std::optional<Mask> {
    if (e.mask != "ranges" || pk == nullptr) return std::nullopt;
    const std::vector<index_t> q = positions(e.rows), k = positions(e.cols);
    if (!std::is_sorted(k.begin(), k.end())) return std::nullopt;  // columns drawn in key order only
    return token_mask(*pk, q, k, spec.causal());
  };
  for (int r = 0; r < P; ++r)
    for (const Event* e : by_rank[static_cast<size_t>(r)]) {
      if (e->rows.empty() || e->cols.empty()) continue;
      const index_t nq = span_count(e->rows), nk = span_count(e->cols);
      const index_t q0 = part.owner(e->rows[0].begin).local;
      // ring: keys are the peer's local tokens; other modes: keys in global order
      const index_t k0 = ring ? e->peer * n + part.owner(e->cols[0].begin).local : e->cols[0].begin;
      const float y0 = g.y + static_cast<float>(r * n + q0) * unit, y1 = y0 + static_cast<float>(nq) * unit;
      const float xa = x2 + static_cast<float>(k0) * unit, xb = xa + static_cast<float>(nk) * unit;
      const std::optional<Mask> tm = tile_mask(*e);
      const size_t first = s.prims.size();
      draw_tile_mask(s, xa, y0, xb, y1, nq, nk, e->mask, rank_color(r, P), "ordered_tile", r, e->section + ", " + e->mask,
                     tm ? &*tm : nullptr);
      for (size_t k = first; k < s.prims.size(); ++k) s.prims[k].peer = e->peer;
    }
  if (v.mx >= x2 && v.mx < x2 + side && v.my >= g.y && v.my < g.y + side) {
    const auto row = static_cast<index_t>((v.my - g.y) / unit), col = static_cast<index_t>((v.mx - x2) / unit);
    s.hover = "rank " + std::to_string(row / n) + ", local query " + std::to_string(row % n) + " (token " +
              std::to_string(part.global(row / n, row % n)) + ")";
    if (ring) s.hover += " x rank " + std::to_string(col / n) + "'s local key " + std::to_string(col % n) +
                         " (token " + std::to_string(part.global(col / n, col % n)) + ")";
  }

  // 3. the tiles by kind
  const float x3 = x2 + side + 15, w3 = W - x3 - 10;
  s.text(x3, 16, ring ? "rank r x KV block j: the tile kinds" : "each rank's tiles", kText);
  size_t cols = 1;
  for (const auto& t : by_rank) cols = std::max(cols, t.size());
  const float cell = std::max(2.0f, std::min((w3 - 70) / static_cast<float>(cols), side / static_cast<float>(P)));
  const double fmax = std::max(1.0, *std::max_element(flops.begin(), flops.end()));
  for (int r = 0; r < P; ++r) {
    const float y = g.y + static_cast<float>(r) * cell;
    for (size_t i = 0; i < by_rank[static_cast<size_t>(r)].size(); ++i) {
      const Event* e = by_rank[static_cast<size_t>(r)][i];
      const index_t nq = span_count(e->rows), nk = span_count(e->cols);
      const index_t ntot_k = ring ? n : S;
      const float x = x3 + static_cast<float>(ring ? e->peer : static_cast<int>(i)) * cell;
      // the tile's part of the cell: its rows among the rank's n, its keys among the block's
      const index_t q0 = e->rows.empty() ? 0 : part.owner(e->rows[0].begin).local;
      const index_t k0 = e->cols.empty() ? 0 : (ring ? part.owner(e->cols[0].begin).local : e->cols[0].begin);
      const float pad = cell > 6 ? 1.0f : 0.0f;
      const float cx0 = x + pad + (cell - 2 * pad) * static_cast<float>(k0) / static_cast<float>(ntot_k);
      const float cx1 = x + pad + (cell - 2 * pad) * static_cast<float>(k0 + nk) / static_cast<float>(ntot_k);
      const float cy0 = y + pad + (cell - 2 * pad) * static_cast<float>(q0) / static_cast<float>(n);
      const float cy1 = y + pad + (cell - 2 * pad) * static_cast<float>(q0 + nq) / static_cast<float>(n);
      if (cell > 6) s.rect(x + pad, y + pad, x + cell - pad, y + cell - pad, Rgba{40, 40, 46, 255}, kNone, "cell", r);
      const size_t first = s.prims.size();
      const std::optional<Mask> tm = tile_mask(*e);
      draw_tile_mask(s, cx0, cy0, std::max(cx1, cx0 + 1), std::max(cy1, cy0 + 1), std::max<index_t>(nq, 1), std::max<index_t>(nk, 1),
                     e->mask, rank_color(r, P), "kind_tile", r, e->section, tm ? &*tm : nullptr);
      for (size_t k = first; k < s.prims.size(); ++k) s.prims[k].peer = e->peer;  // every part of the shape
      if (v.mx >= x && v.mx < x + cell && v.my >= y && v.my < y + cell)
        s.hover = "rank " + std::to_string(r) + (ring ? " x KV of rank " + std::to_string(e->peer) : "") + ": " + e->section +
                  ", mask " + e->mask + ", " + std::to_string(nq) + " x " + std::to_string(nk) + ", " +
                  human_count(static_cast<double>(e->flops)) + " FLOP";
    }
    const float bx = x3 + static_cast<float>(cols) * cell + 6;
    s.rect(bx, y + cell * 0.2f, bx + 60 * static_cast<float>(flops[static_cast<size_t>(r)] / fmax), y + cell * 0.8f,
           rank_color(r, P), kNone, "flops_bar", r);
  }
  const auto [mn, mx] = std::minmax_element(flops.begin(), flops.end());
  // the trace's tiles by mask and its FLOPs per rank, exact (the lessons quote them)
  int masked = 0, full = 0, skipped = 0;
  double total = 0;
  for (const auto& t : by_rank)
    for (const Event* e : t) (e->mask == "skipped" ? skipped : e->mask == "none" ? full : masked) += 1;
  for (double f : flops) total += f;
  s.notes.push_back("forward tiles: " + std::to_string(masked + full) + " computed (" + std::to_string(masked) + " with a mask, " +
                    std::to_string(full) + " full), " + std::to_string(skipped) + " skipped; FLOPs per rank (bars at right)" +
                    (P <= 16 ? " " + count_list(flops) : std::string()) + ", sum " + (total < 1e7 ? fixed(total, 0) : human_count(total)) +
                    ": max/min = " + (*mn > 0 ? fixed(*mx / *mn, 3) : std::string("inf")));
  s.notes.push_back("shapes: staircase = causal diagonal tile (its visible cells), square = full tile, half height = half the queries, "
                    "half width = half the keys, outline = skipped (all masked)");
  if (pk != nullptr)
    s.notes.push_back("packed: every tile is drawn cell by cell from its token mask (a query sees the real keys of its own "
                      "sequence, causally), so the blocks on the diagonal are the sequences");
  return s;
}

}  // namespace cplab::viz
