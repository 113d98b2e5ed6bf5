// ring_schedule.cpp: the per-step tile table of ring attention (see ring_schedule.h).
#include "modes/ring_schedule.h"

namespace cplab {

RingTile ring_tile(Layout layout, bool causal, index_t P, index_t r, index_t j, index_t n) {
  (void)P;
  if (!causal) return RingTile{"all", 0, n, 0, n, Mask::none(), false};
  const char* rel = j == r ? "diagonal" : (j < r ? "lower" : "upper");
  switch (layout) {
    case Layout::zigzag: {
      const index_t c = n / 2;
      if (j == r) return RingTile{rel, 0, n, 0, n, Mask::causal(0), false};
      if (j < r) return RingTile{rel, 0, n, 0, c, Mask::none(), false};
      return RingTile{rel, c, c, 0, n, Mask::none(), false};
    }
    case Layout::contiguous:
      if (j == r) return RingTile{rel, 0, n, 0, n, Mask::causal(0), false};
      if (j < r) return RingTile{rel, 0, n, 0, n, Mask::none(), false};
      return RingTile{"skipped", 0, n, 0, n, Mask::none(), true};
    case Layout::striped:
      // rank r holds r + a*P, rank j holds j + b*P: j + bP <= r + aP  <=>  b <= a (j <= r), b < a (j > r)
      return RingTile{rel, 0, n, 0, n, Mask::causal(j <= r ? 0 : -1), false};
  }
  return RingTile{};
}

RingTile ring_packed_tile(const RingTile& t, const Packing& p, const std::vector<index_t>& q_pos,
                          const std::vector<index_t>& k_pos, bool causal) {
  const index_t nq = static_cast<index_t>(q_pos.size()), nk = static_cast<index_t>(k_pos.size());
  const Mask m = token_mask(p, q_pos, k_pos, causal);
  const bool empty = visible_pairs(m, nq, nk) == 0;
  return RingTile{empty ? "skipped" : t.section, 0, nq, 0, nk, m, empty};
}

RingPost ring_fwd_post(index_t P, index_t i) {
  if (i >= P - 1) return RingPost{};
  return RingPost{true, true, false, "kv"};
}

RingPost ring_bwd_post(index_t P, index_t i) {
  if (P <= 1) return RingPost{};
  const bool kv = i < P - 1, dkv = i >= 1;
  return RingPost{true, kv, dkv, kv && dkv ? "kv+dkv" : (kv ? "kv" : "dkv")};
}

RingTile ring_plan_tile(const Partition& part, const Packing* packing, bool causal, index_t r, index_t j) {
  const RingTile t = ring_tile(part.layout(), causal, part.cp(), r, j, part.local_len());
  if (packing == nullptr) return t;
  return ring_packed_tile(t, *packing, part.indices(r), part.indices(j), causal);
}

}  // namespace cplab
