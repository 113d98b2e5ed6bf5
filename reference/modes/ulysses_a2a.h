// ulysses_a2a.h: Ulysses (all-to-all) context parallelism, on simulated ranks.
//
// What it is: the reference of TE's AttnFuncWithCPAndQKVOA2A, over any group of ranks (all cp
// ranks for --mode a2a, the inner groups of hierarchical CP):
//   "before"  every rank splits its local Q, K, V by head group and all-to-alls them ("q", "k", "v"):
//             rank g receives head group g of every rank's tokens and puts them in the order of the
//             target layout (for --mode a2a the full sequence: TE's zigzag -> sequence-order chunk
//             reorder, derived here from layout.h instead of a hand table)
//   attention ordinary attention on those tokens with heads/G heads, no merging
//   "after"   the output (and in the backward dQ, dK, dV) goes back the same way ("o", ...)
// The group size G must divide heads and KV heads (the heads rule of Ulysses); with too few KV heads
// the caller may replicate them first (repeat_heads, tensor.h), which costs memory and bytes.
// Attention sinks (core/sinks.h): rank g applies its head group's sinks to its final (O, LSE)
// before the output all-to-all, once per row.
// What it is not: pipelined (TE overlaps the a2a of q, k and v; the reference is lockstep).
#pragma once

#include "modes/cp_common.h"
#include "sim/comm.h"

namespace cplab {

// Tokens before and after the all-to-all: `from` is the data layout of the group's members
// (from.global(members position i, l) is the position of member i's local token l); `to` lists,
// for every member, the positions it holds after the all-to-all (in its new local order).
// For --mode a2a, to[g] = [0, S) for every g.
struct A2aPlan {
  std::vector<int> members;                 // global ranks, group position i -> members[i]
  std::vector<std::vector<index_t>> from;   // positions held before, per member, local order
  std::vector<std::vector<index_t>> to;     // positions held after, per member, local order
};

// x[i]: member i's (n_i, h, d) tensor. Returns member g's (m_g, h/G, d) tensor: head group g of the
// positions to[g]. `heads_out` false: the inverse ("after"): x[g] is (m_g, h/G, d), returns (n_i, h, d).
template <class T>
PerRank<T> a2a_before(const A2aPlan& plan, const PerRank<T>& x, const std::string& name, SimComm& comm);
template <class T>
PerRank<T> a2a_after(const A2aPlan& plan, const PerRank<T>& y, const std::string& name, SimComm& comm);

// The LSE after an all-to-all stays head-sharded where it was computed (TE keeps it there for the
// backward). lse[g] is member g's (h/G, |to[g]|) LSE; returns every member's (h, |from[i]|) LSE in
// its data-layout order, read in place for reports: no message is sent.
template <class T>
std::vector<Rows<T>> lse_in_place(const A2aPlan& plan, const std::vector<Rows<T>>& lse);

// --mode a2a: the whole cp group; Q/K/V per rank in the data layout; KV heads divisible by cp.
template <class T>
struct UlyssesForward {
  CpOutput<T> out;                  // per rank, data layout
  PerRank<T> q, k, v, o;            // saved head-sharded full-sequence tensors (TE keeps these)
  std::vector<Rows<T>> lse;         // (h/P, S) per rank
};

template <class T>
UlyssesForward<T> ulysses_forward(const CpSpec& cfg, const PerRank<T>& q, const PerRank<T>& k,
                                  const PerRank<T>& v, SimComm& comm, const std::vector<T>& sinks = {});
template <class T>
CpGrads<T> ulysses_backward(const CpSpec& cfg, const UlyssesForward<T>& fwd, const PerRank<T>& dout,
                            SimComm& comm);

// the a2a plan of --mode a2a: every rank ends up with the whole sequence in order
A2aPlan sequence_plan(const Partition& part);
// Message sizes (what trace_plan.h relies on): in both plans every member's positions are in every
// member's target list, so in a2a_before member i sends member g all |from[i]| of its tokens
// (heads/G heads of them) and in a2a_after member g sends member i the same |from[i]| tokens back.

// The attention step of --mode a2a (the one definition, read by the execution and trace_plan.h):
// every rank computes all S queries x all S keys of its head group under this mask (causal / none,
// or token_mask of the rule for packed sequences, windows and chunks), recorded as one tile named
// ulysses_section(g, heads per rank)
Mask ulysses_mask(const Packing& tokens, bool packed, const PositionRule& rule, index_t S);
std::string ulysses_section(index_t g, index_t hg);
TileShape ulysses_tile_shape(const Mask& mask, index_t S);

// TE's chunk-id tables for zigzag, derived from the layout (not typed in): after an all-to-all the
// 2P chunks arrive in rank-concatenated order [0, 2P-1, 1, 2P-2, ...].
//   before[p] = where sequence chunk p sits in that order    (index_select(x, before): -> sequence order)
//   after[i]  = the sequence chunk at rank-concatenated slot i (index_select(x, after): -> zigzag order)
std::vector<index_t> chunk_ids_before_attn(index_t P);
std::vector<index_t> chunk_ids_after_attn(index_t P);

}  // namespace cplab
