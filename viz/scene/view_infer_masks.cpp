// view_infer_masks.cpp: the T x (P+T) causal-with-offset rectangle of an inference step and every
// tile of its trace (see views_infer.h).
//
// Top: the mask itself, every new token's row against the whole KV space (per request its cache, then
// its new tokens), from token_mask over the spec's kv_packing: new token t of a request with P cached
// tokens sees keys 0..P+t of its own request (and the run's window, chunk). Recorded as one tile of
// the panel "mask" whose pairs are the reference's count (infer_request_pairs summed), so the scene
// test checks that the cells drawn are exactly the visible pairs. Bottom: every forward tile of the
// planned trace, coloured by the rank computing it: together they cover the same cells once.
#include <algorithm>

#include "views_infer.h"

namespace cplab::viz {

Scene infer_masks_view(const InferModel& m, const ViewState&, float W, float H) {
  Scene s;
  s.width = W, s.height = H;
  const InferSpec& sp = m.spec();
  const int N = static_cast<int>(sp.N());
  std::int64_t pairs = 0;
  for (index_t b = 0; b < sp.B(); ++b) pairs += infer_request_pairs(sp, b);
  s.title = "The T x (P+T) mask: " + std::to_string(sp.T()) + " new tokens x " + std::to_string(sp.KV()) + " keys (" + sp.mask_name() +
            ", offset by each request's cache), " + std::to_string(pairs) + " visible pairs; below, the tiles of " +
            infer_variant_label(sp.mode());
  const float ph = (H - 100) / 2;
  // top: the mask
  const InferFrame top = infer_frame(sp, 60, 26, W - 80, ph);
  const int p_mask = s.panel("mask", top.x, top.y, top.x1(), top.y1());
  draw_infer_frame(s, m, top);
  std::vector<index_t> rows, cols(static_cast<size_t>(sp.KV()));
  for (index_t i = 0; i < sp.T(); ++i) rows.push_back(sp.kv_row_of_query(i));
  for (index_t k = 0; k < sp.KV(); ++k) cols[static_cast<size_t>(k)] = k;
  const size_t first = s.prims.size();
  draw_infer_cells(s, m, top, rows, cols, Rgba{230, 230, 235, 255}, "mask_cell", -1, "visible (new token, key) pair");
  TileRec rec;
  rec.panel = p_mask, rec.phase = "fwd", rec.step = -1;
  rec.rows = to_spans(rows), rec.cols = to_spans(cols);
  rec.section = "mask", rec.mask = sp.mask_name();
  rec.pairs = pairs, rec.cell_w = top.cw, rec.cell_h = top.ch;
  s.tile_drawn(std::move(rec), first);
  // bottom: every forward tile of the trace, by rank
  const InferFrame bot = infer_frame(sp, 60, top.y1() + 46, W - 80, ph);
  s.text(bot.x + 170, bot.y - 34, "every tile of the trace (all steps), colour = the rank computing it", kText);
  const int p_tiles = s.panel("tiles", bot.x, bot.y, bot.x1(), bot.y1());
  draw_infer_frame(s, m, bot);
  std::int64_t tile_pairs = 0;
  for (const Event& e : m.trace.events()) {
    if (e.kind != EventKind::tile || e.phase != Phase::fwd) continue;
    draw_infer_tile(s, m, bot, e, p_tiles, with_alpha(rank_color(e.rank, N), 230));
    tile_pairs += e.pairs;
  }
  s.notes.push_back("visible pairs: " + std::to_string(pairs) + " (the mask), " + std::to_string(tile_pairs) +
                    " (the trace's tiles, summed): every pair computed once");
  s.notes.push_back("rows: the new tokens, request after request; columns: KV space (darker: the cache). A new token at "
                    "position P + t sees the P cached keys and the new keys up to itself (causal with an offset of P)");
  draw_rank_legend(s, 60, H - 14, W - 80, N);
  return s;
}

}  // namespace cplab::viz
