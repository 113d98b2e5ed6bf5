// allgather_kv.h: all-gather KV context parallelism (Llama 3's "pass-KV all-gather"), on simulated ranks.
//
// What it is: the reference of TE's AttnFuncWithCPAndKVAllGather.
//   forward   step 0: all-gather every rank's KV ("kv": P-1 messages of B_kv bytes per rank) and put
//             it in sequence order with the layout (layout.h: the one definition). Step 1: each
//             rank's queries attend to the gathered KV in one go, no merging: under zigzag one tile
//             per local chunk ("first chunk" = chunk r sees keys [0, (r+1)c), "second chunk" =
//             chunk 2P-1-r sees [0, (2P-r)c), both bottom-right causal), one tile otherwise. Every
//             rank then sees (2P+1)c keys: balanced.
//   backward  step 0: all-gather KV again (not kept: that is the memory the mode saves); step 1:
//             the tiles' backward into full-length dK/dV buffers; step 2: reduce-scatter them
//             ("dkv": P-1 messages of B_kv bytes per rank) so every rank gets its own rows.
// Packed sequences, windows and chunks use token masks (thd.h, of the spec's PositionRule) per tile:
// a tile then takes only the key range its queries see (a window's keys, not the whole prefix).
// Attention sinks (core/sinks.h): given, the forward applies them to every rank's final (O, LSE).
// What it is not: overlapped (TE pipelines the two chunks on two streams; the reference is lockstep).
#pragma once

#include "modes/cp_common.h"
#include "sim/comm.h"

namespace cplab {

// One tile of rank r's queries against the gathered, sequence-ordered KV.
struct AgTile {
  std::string section;  // "first chunk" | "second chunk" (zigzag, unpacked) | "all"
  index_t q0 = 0, nq = 0;  // local query rows
  index_t k0 = 0, nk = 0;  // keys [k0, k0 + nk) of the sequence-ordered gathered KV
  Mask mask;
};
// The tiles of rank r (the one definition, read by the execution and by trace_plan.h): `tokens` is
// the packing token masks use (CpSpec::packing()), `packed` whether the run is packed
// (CpSpec::packed()), `rule` the run's mask (CpSpec::rule()). Each tile takes the key range its
// queries can see, with the mask of thd.h token_mask simplified to causal(offset) / none where it
// is one.
std::vector<AgTile> allgather_tiles(const Partition& part, const Packing& tokens, bool packed, const PositionRule& rule,
                                    index_t r);
// what the trace records of rank r's tile t (cp_common.h)
TileShape allgather_tile_shape(const Partition& part, index_t r, const AgTile& t);

template <class T>
CpOutput<T> allgather_forward(const CpSpec& cfg, const PerRank<T>& q, const PerRank<T>& k,
                              const PerRank<T>& v, SimComm& comm, const std::vector<T>& sinks = {});

template <class T>
CpGrads<T> allgather_backward(const CpSpec& cfg, const PerRank<T>& q, const PerRank<T>& k,
                              const PerRank<T>& v, const CpOutput<T>& fwd, const PerRank<T>& dout,
                              SimComm& comm);

}  // namespace cplab
