// cp_common.h: what every CP mode's reference implementation shares.
//
// What it is: CpConfig (the data layout over all cp ranks, the packing, mask, scale, merge), the
// per-rank result types, and cp_tile_event, the one way a mode records an attention tile in the
// trace (global rows/cols as spans, mask, visible pairs, FLOPs from flops.h, measured time).
// What it is not: an algorithm. The modes are ring_p2p.h, allgather_kv.h, ulysses_a2a.h and
// hierarchical_cp.h.
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include "attention_kernel.h"
#include "layout.h"
#include "merge.h"
#include "thd.h"
#include "trace.h"

namespace cplab {

// per-rank local tensors (index = rank)
template <class T>
using PerRank = std::vector<Tensor3<T>>;

template <class T>
struct CpConfig {
  Partition part;                            // data layout over all cp ranks
  Packing packing = {};                      // empty: one unpacked sequence of part.seq() tokens
  bool causal = true;
  T scale = T(1);
  MergeKind merge = MergeKind::streaming;
  bool packed() const { return !packing.cu_seqlens.empty() && (packing.num_seqs() > 1 || packing.has_padding()); }
  // the packing token masks use: the given one, or the single sequence of the partition
  Packing tokens() const { return packing.cu_seqlens.empty() ? Packing::single(part.seq()) : packing; }
};

template <class T>
struct CpOutput {
  PerRank<T> o;              // (n, h, dv) per rank, data layout
  std::vector<Rows<T>> lse;  // (h, n) per rank, data layout
};

template <class T>
struct CpGrads {
  PerRank<T> dq, dk, dv;  // (n, h, d), (n, hk, d), (n, hk, dv) per rank, data layout
};

using TileClock = std::chrono::steady_clock;
inline double us_since(TileClock::time_point t0) {
  return std::chrono::duration<double, std::micro>(TileClock::now() - t0).count();
}

// One attention tile of sq query tokens (global positions rows) x sk key tokens (cols) under mask.
Event cp_tile_event(Phase phase, int step, int rank, int peer, const std::string& section, const Mask& mask,
                    bool skipped, const std::vector<index_t>& rows, const std::vector<index_t>& cols,
                    index_t h, index_t d, index_t dv, double dur_us);

// [0, 1, ..., n-1]
std::vector<index_t> iota_positions(index_t begin, index_t end);

}  // namespace cplab
