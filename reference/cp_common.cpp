// cp_common.cpp: the trace record of a tile (see cp_common.h).
#include "cp_common.h"

#include "flops.h"

namespace cplab {

Event cp_tile_event(Phase phase, int step, int rank, int peer, const std::string& section, const Mask& mask,
                    bool skipped, const std::vector<index_t>& rows, const std::vector<index_t>& cols,
                    index_t h, index_t d, index_t dv, double dur_us) {
  Event e;
  e.kind = EventKind::tile;
  e.phase = phase;
  e.step = step;
  e.rank = rank;
  e.peer = peer;
  e.section = section;
  const index_t sq = static_cast<index_t>(rows.size()), sk = static_cast<index_t>(cols.size());
  e.mask = skipped ? "skipped" : to_string(simplify(mask, sq, sk));
  e.rows = to_spans(rows);
  e.cols = to_spans(cols);
  e.pairs = skipped ? 0 : visible_pairs(mask, sq, sk);
  e.flops = phase == Phase::fwd ? fwd_flops(e.pairs, h, d, dv) : bwd_flops(e.pairs, h, d, dv);
  e.dur_us = dur_us;
  return e;
}

std::vector<index_t> iota_positions(index_t begin, index_t end) {
  std::vector<index_t> v;
  v.reserve(static_cast<size_t>(std::max<index_t>(0, end - begin)));
  for (index_t i = begin; i < end; ++i) v.push_back(i);
  return v;
}

}  // namespace cplab
