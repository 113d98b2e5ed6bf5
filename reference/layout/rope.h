// rope.h: rotary position embedding (RoPE) of Q / K, and the positions it needs under CP.
//
// What it is: apply_rope, the non-interleaved ("rotate_half") RoPE of TE / HF applied in place to
// an (n, h, d) tensor whose token t sits at sequence position positions[t]. Over the first
// rd = rotary_dim dims, for i in [0, rd/2) with theta_i = pos * base^(-2i/rd):
//   (x[i], x[i + rd/2]) -> (x[i] cos - x[i + rd/2] sin,  x[i + rd/2] cos + x[i] sin)
// and dims >= rd are left as they are. Angles, cos / sin and the rotation are computed in double
// for float and double alike (one rounding to T per element). inverse = rotation by -theta, which
// is also exactly the backward: dx = apply_rope(dy, inverse = true).
// Under context parallelism a rank rotates its local Q / K with the in-sequence positions of its
// local tokens (thd.h rope_positions, derived from the one layout definition in layout_index.h);
// because each token's rotation depends only on its own values and position, this equals rotating
// the unsharded sequence and then sharding, bit for bit (tests/test_rope.cpp).
// te_rope_position is TE's fused_rope.cu zigzag formula, kept only to cross-check rope_positions.
// What it is not: interleaved RoPE (GPT-J style pairs (2i, 2i+1)), YaRN / NTK / linear scaling,
// start_positions offsets, or a fused QKV kernel.
#pragma once

#include <vector>

#include "core/tensor.h"

namespace cplab {

struct RopeConfig {
  index_t rotary_dim = 0;  // 0: the whole head dim; must be even and <= d
  double base = 10000.0;
};

// Rotate x (n, h, d) in place; positions (n): the sequence position of each token, >= 0.
// Throws cplab::Error naming the rule for: positions.size() != n, rotary_dim < 0, odd rotary_dim
// (also d odd when rotary_dim = 0), rotary_dim > d, base <= 0, a negative position.
template <class T>
void apply_rope(Tensor3<T>& x /* (n, h, d) */, const std::vector<index_t>& positions /* (n) */,
                const RopeConfig& cfg, bool inverse = false);

// TE's fused_rope.cu position formula (zigzag, THD or bshd) for the local token s_id of a
// sequence's local span of local_len = Lpad / cp tokens on rank `rank`, half = local_len / 2:
//   cp > 1:  s_id < half ? s_id + rank*half : s_id + local_len*cp - (rank+1)*half - half
// Kept to cross-check ours (cplab derives positions from the one layout definition,
// thd.h rope_positions); not used by the algorithms.
index_t te_rope_position(index_t s_id, index_t rank, index_t cp, index_t local_len);

}  // namespace cplab
