// cp_attention.h: one entry point for "attention with the CP mode of a CpSpec" on simulated ranks.
//
// What it is: cp_attention_forward / cp_attention_backward dispatch on spec.mode() to the mode's
// reference (ring_p2p.h, allgather_kv.h, ulysses_a2a.h, hierarchical_cp.h) and keep, in CpState,
// what that mode saves for its backward (the last KV block of the ring, the head-sharded tensors of
// Ulysses, ...). Used by run/experiment.h (one attention) and layer_stack.h (a stack with a mode per
// layer). Attention sinks (core/sinks.h): the forward hands them to the mode, which applies them
// once per row to its final (O, LSE); the backward adds up d s_h over every rank's rows from the
// final (O', LSE') and dO (sink_grad: local to each rank, summed like any parameter's gradient).
// What it is not: validation (a CpSpec is valid by construction: cp_spec.h) or KV-head replication
// (the caller repeats heads before and sums their gradients after).
#pragma once

#include <optional>

#include "modes/allgather_kv.h"
#include "modes/cp_spec.h"
#include "modes/hierarchical_cp.h"
#include "modes/ring_p2p.h"
#include "modes/ulysses_a2a.h"

namespace cplab {

template <class T>
struct CpState {
  PerRank<T> q, k, v;  // the inputs (all-gather and the ring recompute from them)
  std::optional<RingForward<T>> ring;
  std::optional<CpOutput<T>> out;
  std::optional<UlyssesForward<T>> ulysses;
  std::optional<HcpForward<T>> hcp;
  std::vector<T> sinks;  // the attention sinks of the forward (empty: none)
};

// q, k, v per rank in the data layout of s.partition(); returns O and LSE per rank in that layout.
// sinks: one logit per query head when s.sinks(), else empty (std::logic_error otherwise)
template <class T>
CpOutput<T> cp_attention_forward(const CpSpec& s, const PerRank<T>& q, const PerRank<T>& k, const PerRank<T>& v,
                                 SimComm& comm, CpState<T>& state, const std::vector<T>& sinks = {});
template <class T>
CpGrads<T> cp_attention_backward(const CpSpec& s, const CpState<T>& state, const PerRank<T>& dout, SimComm& comm);

}  // namespace cplab
