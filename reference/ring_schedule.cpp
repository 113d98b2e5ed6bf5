// ring_schedule.cpp: the per-step tile table of ring attention (see ring_schedule.h).
#include "ring_schedule.h"

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

}  // namespace cplab
