// allgather_gpu.h: all-gather KV context parallelism on GPU ranks, forward and backward.
//
// What it is: the GPU twin of reference/modes/allgather_kv.h, with the reference's own tile table
// (allgather_tiles: under zigzag one tile per local chunk, each against the key range its queries
// can see; packed sequences use token masks as per-row key ranges):
//   forward   step 0: all-gather every rank's K|V block (Comm::all_gather), reorder it into
//             sequence order (RowMoves from the layout); step 1: the rank's tiles, no merging
//   backward  step 0: gather again (not kept: the memory this mode saves); step 1: the tiles'
//             backward into full-length fp32 dK, dV; step 2: reduce-scatter them (an all-to-all
//             of every rank's rows, then a sum: Comm has no reduction), fp32
// Sliding windows and chunks come as the tiles' per-row key ranges (allgather_tiles takes the rule).
// Attention sinks: each local query row is in exactly one tile, which sees all its keys, so the
// kernel folds the sink in (attention_forward's sinks); the backward adds d s_h of the rank's rows.
// One stream per rank; the driver issues each phase for every driven rank before the next.
// What it is not: overlapped (TE pipelines the two zigzag chunks on two streams), or memory-lean
// beyond the mode's own cost (the gathered block, the sequence-ordered K, V and the fp32 dK, dV of
// the whole sequence live on every rank).
#pragma once

#include <vector>

#include "comm.h"
#include "cp_spec.h"
#include "cp_work.h"
#include "modes/allgather_kv.h"
#include "row_moves.h"
#include "stream.h"

namespace cplab::cuda {

// The row lists of the mode (host side; the same on every rank; tests apply them on the CPU):
//   k_order, v_order   gathered (P blocks of K (n, hk, d) then V (n, hk, dv), rank order, elem
//                      bytes) -> K (S, hk, d) then V (S, hk, dv) in sequence order
//   dk_split, dv_split dK (S, hk, d) then dV (S, hk, dv) fp32, sequence order -> P blocks of
//                      dK (n, hk, d) then dV (n, hk, dv): block s = rank s's rows, its local order
struct AgRowLists {
  RowList k_order, v_order, dk_split, dv_split;
};
AgRowLists allgather_row_lists(const Partition& part, std::int64_t hk, std::int64_t d, std::int64_t dv, std::size_t elem);

struct GpuAgRank : RankIO {  // RankIO: q, kv, dout, o, dq, dkv in the data layout
  GpuAgRank(const GpuCpSpec& s, Comm& comm);  // allocates, builds the row lists and the tiles' masks
  Comm* comm;
  std::int64_t r;  // rank
  Stream stream;
  DeviceBuffer<float> lse;                     // (h, n), data layout
  DeviceBuffer<std::byte> gathered, kv_seq;    // (P, K|V) rank order; K (S, hk, d) then V (S, hk, dv)
  DeviceBuffer<float> lse_t, delta, delta_t;   // (h, n)
  DeviceBuffer<float> dkv_seq;                 // dK (S, hk, d) then dV (S, hk, dv), sequence order
  DeviceBuffer<float> dkv_send, dkv_recv;      // (P, dK|dV of n tokens): block s for / from rank s
  RowMoves k_order, v_order;                   // gathered -> kv_seq
  RowMoves dk_split, dv_split;                 // dkv_seq -> dkv_send
  std::vector<AgTile> tiles;
  std::vector<DeviceMask> masks;
  DeviceBuffer<float> sinks, dsinks;           // (h): attention sinks and this rank's rows' d s_h; empty without
};

// q and kv set: o and lse on return (times: step 1 of each driven rank)
void gpu_allgather_forward(const GpuCpSpec& s, const std::vector<GpuAgRank*>& ranks, CpWork work = CpWork::all,
                           TileTimes* times = nullptr);
// after the forward, dout set: dq and dkv on return
void gpu_allgather_backward(const GpuCpSpec& s, const std::vector<GpuAgRank*>& ranks, CpWork work = CpWork::all,
                            TileTimes* times = nullptr);

}  // namespace cplab::cuda
