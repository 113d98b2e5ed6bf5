// cp_common.cpp: the trace record of a tile (see cp_common.h).
#include "modes/cp_common.h"

#include "core/flops.h"

namespace cplab {

TileShape tile_shape(const Mask& mask, bool skipped, std::vector<Span> rows, index_t sq, std::vector<Span> cols,
                     index_t sk) {
  TileShape t;
  t.rows = std::move(rows);
  t.cols = std::move(cols);
  t.mask = skipped ? "skipped" : to_string(simplify(mask, sq, sk));
  t.pairs = skipped ? 0 : visible_pairs(mask, sq, sk);
  return t;
}

Event cp_tile_event(Phase phase, int step, int rank, int peer, const std::string& section, const TileShape& shape,
                    index_t h, index_t d, index_t dv, double dur_us) {
  Event e;
  e.kind = EventKind::tile;
  e.phase = phase;
  e.step = step;
  e.rank = rank;
  e.peer = peer;
  e.section = section;
  e.mask = shape.mask;
  e.rows = shape.rows;
  e.cols = shape.cols;
  e.pairs = shape.pairs;
  e.flops = phase == Phase::fwd ? fwd_flops(e.pairs, h, d, dv) : bwd_flops(e.pairs, h, d, dv);
  e.dur_us = dur_us;
  return e;
}

Event cp_tile_event(Phase phase, int step, int rank, int peer, const std::string& section, const Mask& mask,
                    bool skipped, const std::vector<index_t>& rows, const std::vector<index_t>& cols,
                    index_t h, index_t d, index_t dv, double dur_us) {
  const index_t sq = static_cast<index_t>(rows.size()), sk = static_cast<index_t>(cols.size());
  return cp_tile_event(phase, step, rank, peer, section, tile_shape(mask, skipped, to_spans(rows), sq, to_spans(cols), sk),
                       h, d, dv, dur_us);
}

std::vector<Span> range_spans(index_t begin, index_t end) {
  if (end <= begin) return {};
  return {Span{begin, end - begin, 1}};
}

std::vector<index_t> iota_positions(index_t begin, index_t end) {
  std::vector<index_t> v;
  v.reserve(static_cast<size_t>(std::max<index_t>(0, end - begin)));
  for (index_t i = begin; i < end; ++i) v.push_back(i);
  return v;
}

}  // namespace cplab
