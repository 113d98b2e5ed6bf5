// cp_common.h: what every CP mode's reference implementation shares.
//
// What it is: the per-rank tensor and result types, and cp_tile_event, the one way a mode (and
// the planner, trace_plan.h) records an attention tile in the trace (global rows/cols as spans,
// mask, visible pairs, FLOPs from flops.h, measured time). The modes take their description from
// a CpSpec (cp_spec.h, included here).
// What it is not: an algorithm. The modes are ring_p2p.h, allgather_kv.h, ulysses_a2a.h and
// hierarchical_cp.h.
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include "core/attention_kernel.h"
#include "layout/layout.h"
#include "core/merge.h"
#include "core/sinks.h"
#include "layout/thd.h"
#include "modes/cp_spec.h"
#include "sim/trace.h"

namespace cplab {

// per-rank local tensors (index = rank)
template <class T>
using PerRank = std::vector<Tensor3<T>>;

template <class T>
struct CpOutput {
  PerRank<T> o;              // (n, h, dv) per rank, data layout
  std::vector<Rows<T>> lse;  // (h, n) per rank, data layout
};

template <class T>
struct CpGrads {
  PerRank<T> dq, dk, dv;  // (n, h, d), (n, hk, d), (n, hk, dv) per rank, data layout
  std::vector<T> dsinks = {};  // (h) with attention sinks: every rank's rows added up (core/sinks.h)
};

using TileClock = std::chrono::steady_clock;
inline double us_since(TileClock::time_point t0) {
  return std::chrono::duration<double, std::micro>(TileClock::now() - t0).count();
}

// What a tile event records about the tile itself, whoever computes it and when: its global rows
// and cols as spans, its mask in the simplest kind (or "skipped"), its visible (query, key) pairs.
struct TileShape {
  std::vector<Span> rows, cols;
  std::string mask;
  std::int64_t pairs = 0;
};
// sq query tokens (spans rows) x sk key tokens (spans cols) under mask
TileShape tile_shape(const Mask& mask, bool skipped, std::vector<Span> rows, index_t sq, std::vector<Span> cols,
                     index_t sk);
// The event of a tile of that shape, with its FLOPs (flops.h) for h query heads, dims d and dv.
Event cp_tile_event(Phase phase, int step, int rank, int peer, const std::string& section, const TileShape& shape,
                    index_t h, index_t d, index_t dv, double dur_us);
// The same from position lists: rows = the global positions of the queries, cols those of the keys.
Event cp_tile_event(Phase phase, int step, int rank, int peer, const std::string& section, const Mask& mask,
                    bool skipped, const std::vector<index_t>& rows, const std::vector<index_t>& cols,
                    index_t h, index_t d, index_t dv, double dur_us);

// the spans of the positions [begin, end) (= to_spans(iota_positions(begin, end)), without the list)
std::vector<Span> range_spans(index_t begin, index_t end);

// [0, 1, ..., n-1]
std::vector<index_t> iota_positions(index_t begin, index_t end);

}  // namespace cplab
