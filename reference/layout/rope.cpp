// rope.cpp: rotary position embedding and TE's CP position formula (see rope.h).
#include "layout/rope.h"

#include <cmath>
#include <string>

#include "core/error.h"

namespace cplab {

template <class T>
void apply_rope(Tensor3<T>& x, const std::vector<index_t>& positions, const RopeConfig& cfg, bool inverse) {
  require(static_cast<index_t>(positions.size()) == x.n,
          "rope: " + std::to_string(positions.size()) + " positions for " + std::to_string(x.n) +
              " tokens (need one position per token)");
  require(cfg.rotary_dim >= 0, "rope: rotary_dim " + std::to_string(cfg.rotary_dim) + " must be >= 0");
  const index_t rd = cfg.rotary_dim == 0 ? x.d : cfg.rotary_dim;
  require(rd <= x.d, "rope: rotary_dim " + std::to_string(rd) + " must be <= head dim d = " + std::to_string(x.d));
  require(rd % 2 == 0, "rope: rotary_dim " + std::to_string(rd) +
                           " must be even (dims i and i + rotary_dim/2 are rotated as a pair)");
  require(cfg.base > 0, "rope: base " + std::to_string(cfg.base) + " must be > 0");
  for (size_t t = 0; t < positions.size(); ++t)
    require(positions[t] >= 0, "rope: position " + std::to_string(positions[t]) + " of token " +
                                   std::to_string(t) + " must be >= 0");

  const index_t half = rd / 2;
  std::vector<double> inv_freq(static_cast<size_t>(half)), c(inv_freq.size()), s(inv_freq.size());
  for (index_t i = 0; i < half; ++i)
    inv_freq[static_cast<size_t>(i)] = std::pow(cfg.base, -2.0 * static_cast<double>(i) / static_cast<double>(rd));
  const double sign = inverse ? -1.0 : 1.0;

  for (index_t t = 0; t < x.n; ++t) {
    const double pos = static_cast<double>(positions[static_cast<size_t>(t)]);
    for (size_t i = 0; i < inv_freq.size(); ++i) {
      const double theta = pos * inv_freq[i];
      c[i] = std::cos(theta);
      s[i] = sign * std::sin(theta);
    }
    for (index_t hh = 0; hh < x.h; ++hh) {
      T* row = x.token(t) + hh * x.d;
      for (index_t i = 0; i < half; ++i) {
        const double a = static_cast<double>(row[i]), b = static_cast<double>(row[i + half]);
        const size_t k = static_cast<size_t>(i);
        row[i] = static_cast<T>(a * c[k] - b * s[k]);
        row[i + half] = static_cast<T>(b * c[k] + a * s[k]);
      }
    }
  }
}

index_t te_rope_position(index_t s_id, index_t rank, index_t cp, index_t local_len) {
  // TE transformer_engine/common/fused_rope/fused_rope.cu (cp_size > 1 branch)
  if (cp <= 1) return s_id;
  const index_t half = local_len / 2;
  return s_id < half ? s_id + rank * half : s_id + local_len * cp - (rank + 1) * half - half;
}

template void apply_rope<float>(Tensor3<float>&, const std::vector<index_t>&, const RopeConfig&, bool);
template void apply_rope<double>(Tensor3<double>&, const std::vector<index_t>&, const RopeConfig&, bool);

}  // namespace cplab
