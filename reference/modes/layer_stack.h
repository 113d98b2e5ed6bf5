// layer_stack.h: a small attention-only transformer where every layer picks its own CP mode.
//
// What it is: L layers, each   y = x + Attn(RoPE(x Wq), RoPE(x Wk), x Wv) Wo   with x (S, hidden),
// like Megatron's per-layer `--cp-comm-type p2p p2p a2a a2a+p2p`. Two implementations:
//   dense_stack   the whole sequence on one device (the oracle; RoPE positions = positions in the
//                 sequence), forward and backward (dX and every dW)
//   cp_stack      the sequence sharded by the layout over cp simulated ranks: projections and RoPE
//                 are token-local (positions from thd.h rope_positions), attention runs through
//                 cp_attention.h with the layer's mode, and the weight gradients, which every rank
//                 holds a part of, are summed over the CP group (reduce-scatter + all-gather).
// Tests check that both give the same output and gradients.
// What it is not: a model (no MLP, no norm, no training loop), or packed sequences.
#pragma once

#include <vector>

#include "modes/cp_attention.h"
#include "layout/rope.h"

namespace cplab {

// a layer's CP mode (and, for a2a+p2p, its I x O); the rest of the layer's CpSpec is the stack's
struct LayerMode {
  Mode mode = Mode::p2p;
  index_t icp = 0, ocp = 0;
};

struct StackSpec {
  std::vector<LayerMode> modes;  // one per layer
  index_t hidden = 16, heads = 4, kv_heads = 2, head_dim = 8;
  bool causal = true;
  RopeConfig rope;
};

struct LayerWeights {
  Mat<double> wq, wk, wv, wo;  // (hidden, h*d), (hidden, hk*d), (hidden, hk*d), (h*d, hidden)
};

struct StackResult {
  Mat<double> y;                        // (S, hidden) output of the last layer, sequence order
  Mat<double> dx;                       // (S, hidden)
  std::vector<LayerWeights> dw;         // per layer (cp_stack: summed over the CP group)
  std::vector<std::vector<LayerWeights>> dw_rank;  // cp_stack: each rank's own partial, per layer
};

std::vector<LayerWeights> random_weights(const StackSpec& s, std::uint64_t seed);

// x, dy: (S, hidden) in sequence order
StackResult dense_stack(const StackSpec& s, const std::vector<LayerWeights>& w, const Mat<double>& x,
                        const Mat<double>& dy);
StackResult cp_stack(const StackSpec& s, const Partition& part, const std::vector<LayerWeights>& w,
                     const Mat<double>& x, const Mat<double>& dy, SimComm& comm);

}  // namespace cplab
