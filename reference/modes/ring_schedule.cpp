// ring_schedule.cpp: the per-step tile table of ring attention (see ring_schedule.h).
#include "modes/ring_schedule.h"

#include <algorithm>
#include <set>
#include <utility>

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
                          const std::vector<index_t>& k_pos, const PositionRule& rule) {
  const index_t nq = static_cast<index_t>(q_pos.size()), nk = static_cast<index_t>(k_pos.size());
  const Mask m = token_mask(p, q_pos, k_pos, rule);
  const bool empty = visible_pairs(m, nq, nk) == 0;
  return RingTile{empty ? "skipped" : t.section, 0, nq, 0, nk, m, empty};
}

RingTile ring_rule_tile(const RingTile& t, const Packing* packing, const PositionRule& rule, index_t S,
                        const std::vector<index_t>& q_all, const std::vector<index_t>& k_all) {
  if (packing != nullptr) return ring_packed_tile(t, *packing, q_all, k_all, rule);
  if (rule.plain() || t.skipped) return t;
  // the section's rows and cols (a window or chunk only removes pairs the causal sections keep)
  auto sub = [](const std::vector<index_t>& all, index_t at, index_t count) {
    return std::vector<index_t>(all.begin() + at, all.begin() + at + count);
  };
  const Mask m = token_mask(Packing::single(S), sub(q_all, t.q0, t.nq), sub(k_all, t.k0, t.nk), rule);
  if (visible_pairs(m, t.nq, t.nk) == 0) return RingTile{"skipped", t.q0, t.nq, t.k0, t.nk, Mask::none(), true};
  return RingTile{t.section, t.q0, t.nq, t.k0, t.nk, simplify(m, t.nq, t.nk), false};
}

RingPost ring_fwd_post(index_t steps, index_t i) {
  if (i >= steps - 1) return RingPost{};
  return RingPost{true, true, false, "kv"};
}

RingPost ring_bwd_post(index_t steps, index_t i) {
  if (steps <= 1) return RingPost{};
  const bool kv = i < steps - 1, dkv = i >= 1;
  return RingPost{true, kv, dkv, kv && dkv ? "kv+dkv" : (kv ? "kv" : "dkv")};
}

RingTile ring_plan_tile(const Partition& part, const Packing* packing, const PositionRule& rule, index_t r, index_t j) {
  const RingTile t = ring_tile(part.layout(), rule.causal, part.cp(), r, j, part.local_len());
  if (packing == nullptr && (rule.plain() || t.skipped)) return t;
  return ring_rule_tile(t, packing, rule, part.seq(), part.indices(r), part.indices(j));
}

namespace {

// the largest (x - y) mod P over the ranks y in [y0, y1] (-1 when the interval is empty): it
// falls by one from y0 on, except that passing y = x + 1 jumps to P - 1
index_t max_offset(index_t P, index_t x, index_t y0, index_t y1) {
  if (y0 > y1) return -1;
  if (y0 <= x) return y1 > x ? P - 1 : x - y0;
  return x - y0 + P;
}

// H of one sequence of L tokens (R of them real, the rest padding) split by `layout` over P ranks:
// the largest offset (owner(query) - owner(key)) mod P over its visible pairs
index_t sequence_hops(Layout layout, index_t P, index_t L, index_t R, const PositionRule& rule) {
  if (R <= 0 || P <= 1) return 0;
  if (layout == Layout::striped) {  // owner = position mod P, so an offset is a distance mod P
    if (rule.keys(0, R).hi > 1) return P - 1;  // a key ahead: query i sees i + 1, on the rank "behind" it by P-1
    // every key behind: query i sees i - back .. i, offsets 0 .. back; the longest look back is at
    // the last query or at the end of the first chunk
    auto back = [&](index_t i) { return i - rule.keys(i, R).lo; };
    index_t b = back(R - 1);
    if (rule.chunk > 0) b = std::max(b, back(std::min(R - 1, rule.chunk - 1)));
    return std::min(P - 1, b);
  }
  // contiguous: P chunks, chunk m on rank m; zigzag: 2P chunks, chunk m on rank m or 2P-1-m
  const index_t nchunks = layout == Layout::zigzag ? 2 * P : P, c = L / nchunks;
  auto owner = [&](index_t m) { return m < P ? m : 2 * P - 1 - m; };
  index_t H = 0;
  for (index_t m = 0; m < nchunks && m * c < R && H < P - 1; ++m) {
    // the real queries a0 .. a1 of chunk m see the keys [lo, hi): each sees itself and lo, hi never
    // decrease, so their runs join into one
    const index_t a0 = m * c, a1 = std::min((m + 1) * c, R) - 1;
    const index_t lo = rule.keys(a0, R).lo, hi = rule.keys(a1, R).hi;
    const index_t m0 = lo / c, m1 = (hi - 1) / c, x = owner(m);  // the key chunks m0 .. m1
    H = std::max(H, max_offset(P, x, m0, std::min(m1, P - 1)));                            // chunks below P
    if (m1 >= P) H = std::max(H, max_offset(P, x, 2 * P - 1 - m1, 2 * P - 1 - std::max(m0, P)));  // mirrored
  }
  return H;
}

}  // namespace

index_t ring_hops(const Partition& part, const Packing* packing, const PositionRule& rule) {
  const index_t P = part.cp();
  if (rule.plain()) return P - 1;
  if (packing == nullptr) return sequence_hops(part.layout(), P, part.seq(), part.seq(), rule);
  std::set<std::pair<index_t, index_t>> shapes;  // (padded length, real length) of every sequence
  for (index_t s = 0; s < packing->num_seqs(); ++s)
    shapes.emplace(packing->cu_seqlens_padded[static_cast<size_t>(s + 1)] - packing->cu_seqlens_padded[static_cast<size_t>(s)],
                   packing->length(s));
  index_t H = 0;
  for (const auto& [L, R] : shapes) H = std::max(H, sequence_hops(part.layout(), P, L, R, rule));
  return H;
}

}  // namespace cplab
