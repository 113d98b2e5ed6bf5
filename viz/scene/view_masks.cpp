// view_masks.cpp: the run's mask three ways (see views.h).
//
// Left: the global mask (queries down, keys across), each query row in its owner's colour, with
// the layout's chunk boundaries and the packed sequences' boundaries. Middle: every forward tile of
// the trace in "rank order": rows are each rank's local tokens one rank after another (a2a+p2p: each
// outer ring position's; a2a: global order, as every rank holds all tokens of its heads), columns the
// KV block's tokens in the same order (p2p, a2a+p2p) or in global order (all-gather, a2a), one square
// per head group where heads are split (a2a, a2a+p2p) so that no two ranks' tiles overlap. Right:
// one cell per tile, rows = ranks, columns = the KV block's rank (ring modes) or the tile's order,
// the cell's part that the tile covers and its visible cells; FLOPs per rank beside each row.
// The three sit in a row, or the two matrices in a row over the tile grid when the canvas is tall
// (whichever gives larger squares); every panel has a title and a line saying what its colours are,
// the grid its rows (r0..) and columns (j=0..) named, each FLOPs bar its value, and under it all the
// rank colours and the keys: computed pair, skipped tile, masked pair, never-computed grid cell.
// Every coloured cell comes from the reference's mask rule (views.h draw_tile_cells) and every
// tile from the trace; Scene::tiles records each with its panel, so tests compare them.
// The notes count the trace's tiles by mask and list each rank's forward FLOPs (up to 16 ranks, exact).
#include <algorithm>

#include "views.h"
#include "views_infer.h"

namespace cplab::viz {

namespace {

// an outline where a tile lies (skipped, or too large to draw cell by cell and no mask to draw
// it with), rows [r0, r0 + nq) x keys [c0, c0 + nk) of a panel with cw x ch cells
void draw_tile_box(Scene& s, float x0, float y0, double cw, double ch, index_t r0, index_t nq, index_t c0, index_t nk,
                   const Event& e, Rgba fill, const std::string& tag, const std::string& info) {
  draw_tile_mask(s, x0 + static_cast<float>(static_cast<double>(c0) * cw), y0 + static_cast<float>(static_cast<double>(r0) * ch),
                 x0 + static_cast<float>(static_cast<double>(c0 + nk) * cw), y0 + static_cast<float>(static_cast<double>(r0 + nq) * ch),
                 nq, nk, e.mask, fill, tag, e.rank, info);
}

}  // namespace

Scene masks_view(const RunModel& m, const ViewState& v, float W, float H) {
  if (m.infer) return infer_masks_view(*m.infer, v, W, H);  // an inference step (issue 37): views_infer.h
  Scene s;
  s.width = W, s.height = H;
  if (m.from_file()) {
    s.title = "masks: needs a run's parameters, not a trace file";
    return s;
  }
  const CpSpec& spec = m.cp();
  const Partition& part = spec.partition();
  const int P = static_cast<int>(spec.P());
  const index_t S = part.seq();
  const bool ring = spec.mode() == Mode::p2p || spec.mode() == Mode::a2a_p2p;
  s.title = (spec.mask_name() == "none" ? std::string("full") : spec.mask_name()) + " mask of " + std::to_string(S) + " tokens, " +
            to_string(spec.mode()) + ", " + to_string(spec.layout()) + " over " + std::to_string(P) + " ranks";
  // the layout: three squares in a row, or the two matrices in a row and the tile grid under them,
  // whichever gives the larger squares; the tile grid (with its row names and FLOPs bars) in the
  // third square's place, the legends (ranks, keys) under everything
  const float top = 52, legend_h = 52, gap = 15, row_lab = 24, bars_w = 66 + text_width("999.9M");
  const float side_row = std::min((W - 40 - 2 * gap - 10) / 3, H - top - legend_h - 8);
  const float side_col = std::min((W - 40 - gap - 10) / 2, (H - top - legend_h - 8 - top) / 2);
  const bool stacked = side_col > side_row;
  const float side = std::max(40.0f, stacked ? side_col : side_row);
  const Packing* pk = spec.thd() ? &spec.packing() : nullptr;
  const AxisOrder global{}, ro = row_order(spec), co = col_order(spec);

  // 1. global mask, rows coloured by owner
  MatrixFrame g{40, top, side, S};
  s.text(g.x, 2, "global order: queries down, keys across", kText);
  s.text(g.x, 17, "row colour = the rank holding the query", kLight, "panel_label");
  const int p1 = s.panel("global", g.x, g.y, g.x + side, g.y + side);
  s.rect(g.x, g.y, g.x + side, g.y + side, kMatrix, kDim, "matrix");
  const double cell = static_cast<double>(side) / static_cast<double>(S);
  const auto* spans = run_spans(m);
  for (int r = 0; spans != nullptr && r < P; ++r) {
    Event rows;  // rank r's query rows against every key
    rows.rank = r, rows.rows = (*spans)[static_cast<size_t>(r)], rows.cols = {Span{0, S, 1}}, rows.mask = "rows";
    if (!draw_tile_cells(s, g.x, g.y, cell, cell, global, global, rows, spec, rank_color(r, P), "global_rows", "rows of rank " + std::to_string(r)) &&
        (spec.rule().plain() ||
         !draw_tile_rule(s, g.x, g.y, cell, cell, global, global, rows, spec, rank_color(r, P), "global_rows", "rows of rank " + std::to_string(r))))
      for (const Span& sp : rows.rows)
        draw_block(s, g, sp, Span{0, S, 1}, spec.causal(), pk, rank_color(r, P), "global_rows", r, "rows of rank " + std::to_string(r));
  }
  draw_boundaries(s, g.x, g.y, side, S, global, spans, pk);
  draw_token_ticks(s, g.x, g.y, side, S, global);
  (void)p1;

  // 2. rank order, one square per head group
  const float x2 = g.x + side + 15;
  const int G = head_groups(spec);
  const char* what2 = spec.mode() == Mode::p2p         ? "rank order (rank r's tokens at r*n)"
                      : spec.mode() == Mode::allgather ? "rows in rank order, keys global"
                      : spec.mode() == Mode::a2a       ? "per head group, global order"
                                                       : "per head group, ring-position order";
  s.text(x2, 2, what2, kText);
  if (head_groups(spec) == 1) s.text(x2, 17, "each rank's forward tiles, in its colour", kLight, "panel_label");
  const std::vector<GroupSquare> boxes = head_group_squares(s, spec, x2, top, side, side, "rank order", ro, nullptr, nullptr);
  std::vector<double> flops(static_cast<size_t>(P), 0);
  std::vector<std::vector<const Event*>> by_rank(static_cast<size_t>(P));
  for (const Event& e : m.trace.events()) {
    if (e.kind != EventKind::tile || e.phase != Phase::fwd) continue;
    by_rank[static_cast<size_t>(e.rank)].push_back(&e);
    flops[static_cast<size_t>(e.rank)] += static_cast<double>(e.flops);
  }
  for (int r = 0; r < P; ++r)
    for (const Event* e : by_rank[static_cast<size_t>(r)]) {
      const int h = head_group_of(spec, r);
      if (e->rows.empty() || e->cols.empty()) {  // no query or no key: nothing to draw, still a tile of the trace
        record_tile(s, *e, boxes[static_cast<size_t>(h)].panel, 1, 1, s.prims.size());
        continue;
      }
      const auto [bx, by, bs, bpanel] = boxes[static_cast<size_t>(h)];
      const double c2 = static_cast<double>(bs) / static_cast<double>(S);
      const std::string info = section_label(e->section) + ", " + e->mask;
      const size_t first = s.prims.size();
      if ((!draw_tile_cells(s, bx, by, c2, c2, ro, co, *e, spec, rank_color(r, P), "ordered_tile", info) &&
           (spec.rule().plain() || !draw_tile_rule(s, bx, by, c2, c2, ro, co, *e, spec, rank_color(r, P), "ordered_tile", info))) ||
          e->mask == "skipped")
        draw_tile_box(s, bx, by, c2, c2, ro.index(e->rows[0].begin), span_count(e->rows), co.index(e->cols[0].begin),
                      span_count(e->cols), *e, rank_color(r, P), "ordered_tile", info);
      for (size_t k = first; k < s.prims.size(); ++k) s.prims[k].peer = e->peer;
      record_tile(s, *e, bpanel, c2, c2, first);
    }
  for (int h = 0; h < G; ++h) {
    const auto [bx, by, bs, bpanel] = boxes[static_cast<size_t>(h)];
    if (v.mx < bx || v.mx >= bx + bs || v.my < by || v.my >= by + bs) continue;
    const index_t row = static_cast<index_t>((v.my - by) / bs * static_cast<float>(S)), col = static_cast<index_t>((v.mx - bx) / bs * static_cast<float>(S));
    auto who = [&](const AxisOrder& o, index_t i) {
      if (!o.units) return "token " + std::to_string(i);
      const index_t u = i / o.unit_len();
      return std::string(spec.mode() == Mode::a2a_p2p ? "ring position " : "rank ") + std::to_string(u) + "'s local " +
             std::to_string(i % o.unit_len()) + " (token " + std::to_string(o.units->global(u, i % o.unit_len())) + ")";
    };
    s.hover = "query: " + who(ro, std::min(row, S - 1)) + " x key: " + who(co, std::min(col, S - 1));
  }

  // 3. the tiles by kind: rows = ranks, columns = the KV block's unit (ring) or the tile's order
  const float x3 = (stacked ? g.x : x2 + side + gap) + row_lab, y3 = stacked ? top + side + top : top;
  const float w3 = std::max(10.0f, (stacked ? 2 * side + gap : side) - row_lab - bars_w);
  s.text(x3 - row_lab, y3 - 50, ring ? "tile grid: rank r (rows) x KV block j" : "tile grid: each rank's tiles in order",
         kText);
  s.text(x3 - row_lab, y3 - 35, "a cell: the part of the block computed", kLight, "panel_label");
  const int p3 = s.panel("tile kinds", x3, y3, x3 + w3, y3 + side);
  const index_t nrow = ro.units ? ro.unit_len() : S, ncol = co.units ? co.unit_len() : S;
  size_t cols = 1;
  if (ring) cols = static_cast<size_t>(S / ncol);
  else
    for (const auto& t : by_rank) cols = std::max(cols, t.size());
  const float cellp = std::max(2.0f, std::min(w3 / static_cast<float>(cols), side / static_cast<float>(P)));
  // the columns' and rows' names, where they fit; the FLOPs bars' heading
  for (size_t c = 0; c < cols && cellp >= text_width(ring ? "j=99" : "99") + 2; ++c)
    s.text(x3 + static_cast<float>(c) * cellp + 1, y3 - kLineH - 2, (ring ? "j=" : cellp >= text_width("tile 99") + 2 ? "tile " : "") + std::to_string(c + (ring ? 0 : 1)), kLight, "grid_label");
  s.text(x3 + static_cast<float>(cols) * cellp + 6, y3 - kLineH - 2, "forward FLOPs", kText, "bars_label");
  const double fmax = std::max(1.0, *std::max_element(flops.begin(), flops.end()));
  for (int r = 0; r < P; ++r) {
    const float y = y3 + static_cast<float>(r) * cellp;
    if (cellp >= kLineH) s.text(x3 - row_lab, y + (cellp - kLineH) / 2, "r" + std::to_string(r), kLight, "grid_label");
    if (cellp > 6)
      for (size_t c = 0; c < cols; ++c)
        s.rect(x3 + static_cast<float>(c) * cellp + 1, y + 1, x3 + static_cast<float>(c + 1) * cellp - 1, y + cellp - 1,
               kEmptyCell, kNone, "cell", r);
    for (size_t i = 0; i < by_rank[static_cast<size_t>(r)].size(); ++i) {
      const Event* e = by_rank[static_cast<size_t>(r)][i];
      if (e->rows.empty() || e->cols.empty()) {
        record_tile(s, *e, p3, 1, 1, s.prims.size());
        continue;
      }
      const index_t ru = ro.index(e->rows[0].begin) / nrow, cu = co.index(e->cols[0].begin) / ncol;
      const float x = x3 + static_cast<float>(ring ? static_cast<size_t>(cu) : i) * cellp;
      const float pad = cellp > 6 ? 1.0f : 0.0f;
      const double cw = (cellp - 2 * pad) / static_cast<double>(ncol), ch = (cellp - 2 * pad) / static_cast<double>(nrow);
      // the cell's origin minus the units before it: the tile's own unit lands in the cell
      const float ox = x + pad - static_cast<float>(static_cast<double>(cu * ncol) * cw);
      const float oy = y + pad - static_cast<float>(static_cast<double>(ru * nrow) * ch);
      const size_t first = s.prims.size();
      if ((!draw_tile_cells(s, ox, oy, cw, ch, ro, co, *e, spec, rank_color(r, P), "kind_tile", section_label(e->section)) &&
           (spec.rule().plain() || !draw_tile_rule(s, ox, oy, cw, ch, ro, co, *e, spec, rank_color(r, P), "kind_tile", section_label(e->section)))) ||
          e->mask == "skipped")
        draw_tile_box(s, ox, oy, cw, ch, ro.index(e->rows[0].begin), span_count(e->rows), co.index(e->cols[0].begin),
                      span_count(e->cols), *e, rank_color(r, P), "kind_tile", section_label(e->section));
      for (size_t k = first; k < s.prims.size(); ++k) s.prims[k].peer = e->peer;
      record_tile(s, *e, p3, cw, ch, first);
      if (v.mx >= x && v.mx < x + cellp && v.my >= y && v.my < y + cellp)
        s.hover = "rank " + std::to_string(r) + (ring ? " x KV of rank " + std::to_string(e->peer) : "") + ": " + section_label(e->section) +
                  ", mask " + e->mask + ", " + std::to_string(span_count(e->rows)) + " x " + std::to_string(span_count(e->cols)) +
                  ", " + human_count(static_cast<double>(e->flops)) + " FLOP";
    }
    const float bx = x3 + static_cast<float>(cols) * cellp + 6;
    const float bw = 60 * static_cast<float>(flops[static_cast<size_t>(r)] / fmax);
    s.rect(bx, y + cellp * 0.2f, bx + bw, y + cellp * 0.8f, rank_color(r, P), kNone, "flops_bar", r);
    s.prims.back().info = count_list({flops[static_cast<size_t>(r)]});
    if (cellp >= kLineH) s.text(bx + bw + 4, y + (cellp - kLineH) / 2, human_count(flops[static_cast<size_t>(r)]), kLight, "bar_label");
  }
  const float ly = (stacked ? y3 : top) + side + 8;
  draw_rank_legend(s, g.x, ly, W - g.x - 10, P);
  // the keys: a computed cell, a skipped tile, and the blank cells of the grid that no rank ever computes
  const Rgba c0 = rank_color(0, P);
  draw_key_legend(s, g.x, ly + 18, W - g.x - 10,
                  {{c0, kNone, "computed pair (colour = rank)"}, {kNone, c0, "skipped tile", true},
                   {kMatrix, kDim, "blank: masked pair"}, {kEmptyCell, kNone, "blank cell: a tile never computed"}});
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
  s.notes.push_back("every coloured cell is a (query, key) pair the mask leaves visible; outline with a cross = a skipped tile; "
                    "lines: chunk boundaries (dim), sequence boundaries (bright)");
  return s;
}

}  // namespace cplab::viz
