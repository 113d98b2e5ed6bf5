// dcp_cplab.cpp: allotment ladder, greedy aligned placement, local improvement (see dcp_cplab.h).
#include "dcp_cplab.h"

#include "dcp_exact.h"
#include "dcp_megatron.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace cplab {

namespace {

struct Block {
  std::int64_t start, size;
  double load = 0;
  std::vector<int> samples;
};
struct Round {
  std::vector<Block> blocks;
  std::vector<char> used;  // per rank
  double length() const {
    double m = 0;
    for (const Block& b : blocks) m = std::max(m, b.load);
    return m;
  }
  // lowest aligned free block of size c, or -1
  std::int64_t free_block(std::int64_t c) const {
    const std::int64_t N = static_cast<std::int64_t>(used.size());
    for (std::int64_t s = 0; s + c <= N; s += c)
      if (std::all_of(used.begin() + s, used.begin() + s + c, [](char u) { return u == 0; })) return s;
    return -1;
  }
  void mark(std::int64_t s, std::int64_t c, char v) { std::fill(used.begin() + s, used.begin() + s + c, v); }
};

struct Ctx {
  const std::vector<std::int64_t>& L;
  std::int64_t N, M;
  const CostModel& cost;
};

double total(const std::vector<Round>& rs) {
  double t = 0;
  for (const Round& r : rs) t += r.length();
  return t;
}

// samples by allotted size, then time, both descending (stable): the order that keeps buddy
// allocation aligned and places the long ones first
std::vector<int> size_time_order(const Ctx& x, const std::vector<std::int64_t>& size) {
  std::vector<int> order(x.L.size());
  std::iota(order.begin(), order.end(), 0);
  auto t_of = [&](int i) { return x.cost.time(x.L[static_cast<size_t>(i)], size[static_cast<size_t>(i)]); };
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
    if (size[static_cast<size_t>(a)] != size[static_cast<size_t>(b)]) return size[static_cast<size_t>(a)] > size[static_cast<size_t>(b)];
    return t_of(a) > t_of(b);
  });
  return order;
}

// greedy placement of samples with given sizes
std::vector<Round> place(const Ctx& x, const std::vector<std::int64_t>& size) {
  auto t_of = [&](int i) { return x.cost.time(x.L[static_cast<size_t>(i)], size[static_cast<size_t>(i)]); };
  const std::vector<int> order = size_time_order(x, size);
  std::vector<Round> rounds;
  for (int i : order) {
    const std::int64_t c = size[static_cast<size_t>(i)];
    const double t = t_of(i);
    double best = t;  // a new round, the last resort: on ties a sample joins an existing round
    int br = -1, bb = -1;
    std::int64_t bstart = -1;
    for (size_t k = 0; k < rounds.size(); ++k) {
      const double len = rounds[k].length();
      for (size_t b = 0; b < rounds[k].blocks.size(); ++b) {
        const Block& B = rounds[k].blocks[b];
        if (B.size != c) continue;
        const double d = std::max(len, B.load + t) - len;
        if (d < best - 1e-12 || (br < 0 && d <= best + 1e-12)) best = d, br = static_cast<int>(k), bb = static_cast<int>(b), bstart = -1;
      }
      const std::int64_t s = rounds[k].free_block(c);
      if (s >= 0) {
        const double d = std::max(len, t) - len;
        if (d < best - 1e-12 || (br < 0 && d <= best + 1e-12)) best = d, br = static_cast<int>(k), bb = -1, bstart = s;
      }
    }
    if (br < 0) {
      rounds.push_back(Round{{}, std::vector<char>(static_cast<size_t>(x.N), 0)});
      br = static_cast<int>(rounds.size()) - 1;
      bstart = 0;
    }
    Round& R = rounds[static_cast<size_t>(br)];
    if (bb < 0) {
      R.blocks.push_back(Block{bstart, c, 0, {}});
      R.mark(bstart, c, 1);
      bb = static_cast<int>(R.blocks.size()) - 1;
    }
    R.blocks[static_cast<size_t>(bb)].samples.push_back(i);
    R.blocks[static_cast<size_t>(bb)].load += t;
  }
  return rounds;
}

double block_load(const Ctx& x, const std::vector<int>& samples, std::int64_t c) {
  double l = 0;
  for (int i : samples) l += x.cost.time(x.L[static_cast<size_t>(i)], c);
  return l;
}

// the longest and second-longest block loads of a round
std::pair<double, double> top2(const Round& R) {
  double a = 0, b = 0;
  for (const Block& B : R.blocks) {
    if (B.load > a) b = a, a = B.load;
    else if (B.load > b) b = B.load;
  }
  return {a, b};
}

// Local search. Moves, each kept only if the makespan (sum of round lengths) drops:
//   relocate one sample of a round's longest group into any other group whose size it may use
//   (any power of two >= its cp_min: its time changes with the size), into a new aligned group
//   in any round's free ranks, or into a new round; and grow a round's longest group into free
//   aligned ranks of twice its size.
void improve(const Ctx& x, std::vector<Round>& rounds) {
  const int max_iter = std::min(150, 4 * static_cast<int>(x.L.size()) + 20);  // bounded: scheduling must stay fast
  for (int iter = 0; iter < max_iter; ++iter) {
    bool changed = false;
    for (Round& R : rounds) {  // grow
      while (true) {
        auto it = std::max_element(R.blocks.begin(), R.blocks.end(), [](const Block& p, const Block& q) { return p.load < q.load; });
        if (it == R.blocks.end() || it->size * 2 > x.N) break;
        const double before = R.length();
        const double grown_load = block_load(x, it->samples, it->size * 2);
        if (grown_load >= before - 1e-12) break;
        R.mark(it->start, it->size, 0);
        const std::int64_t s = R.free_block(it->size * 2);
        if (s < 0) {
          R.mark(it->start, it->size, 1);
          break;
        }
        it->start = s;
        it->size *= 2;
        it->load = grown_load;
        R.mark(s, it->size, 1);
        changed = true;
      }
    }
    std::vector<std::pair<double, double>> tops;
    for (const Round& R : rounds) tops.push_back(top2(R));
    struct Move {
      double gain = 1e-9;
      int k = -1, b = -1, si = -1, k2 = -1, b2 = -1;  // b2 = -1: new block of size c2 at start s2 (k2 = rounds.size(): new round)
      std::int64_t c2 = 0, s2 = 0;
    } best;
    for (size_t k = 0; k < rounds.size(); ++k) {
      const Round& Rk = rounds[k];
      if (Rk.blocks.empty()) continue;
      const size_t b = static_cast<size_t>(std::max_element(Rk.blocks.begin(), Rk.blocks.end(), [](const Block& p, const Block& q) { return p.load < q.load; }) - Rk.blocks.begin());
      const Block& B = Rk.blocks[b];
      for (size_t si = 0; si < B.samples.size(); ++si) {
        const std::int64_t Li = x.L[static_cast<size_t>(B.samples[si])];
        const double t = x.cost.time(Li, B.size);
        const double new_len_k = std::max(tops[k].second, B.load - t);  // B was the longest
        const double gain_out = tops[k].first - new_len_k;
        if (gain_out <= 1e-12) continue;
        const std::int64_t cmin = cp_min(Li, x.M);
        double tc[64];  // t(Li, 2^j) for the sizes it may use
        for (std::int64_t c2 = cmin, j = 0; c2 <= x.N; c2 *= 2, ++j) tc[j] = x.cost.time(Li, c2);
        auto t_at = [&](std::int64_t c2) {
          int j = 0;
          for (std::int64_t c = cmin; c < c2; c *= 2) ++j;
          return tc[j];
        };
        for (size_t k2 = 0; k2 <= rounds.size(); ++k2) {
          if (k2 == rounds.size()) {  // a new round, at the fastest size
            for (std::int64_t c2 = cmin; c2 <= x.N; c2 *= 2) {
              const double g = gain_out - t_at(c2);
              if (g > best.gain) best = Move{g, static_cast<int>(k), static_cast<int>(b), static_cast<int>(si), static_cast<int>(k2), -1, c2, 0};
            }
            continue;
          }
          const Round& R2 = rounds[k2];
          const double len2 = k2 == k ? new_len_k : tops[k2].first;
          for (size_t b2 = 0; b2 < R2.blocks.size(); ++b2) {  // onto an existing group it may use
            const Block& T2 = R2.blocks[b2];
            if (T2.size < cmin || (k2 == k && b2 == b)) continue;
            const double g = gain_out - (std::max(len2, T2.load + t_at(T2.size)) - len2);
            if (g > best.gain) best = Move{g, static_cast<int>(k), static_cast<int>(b), static_cast<int>(si), static_cast<int>(k2), static_cast<int>(b2), T2.size, 0};
          }
          for (std::int64_t c2 = cmin; c2 <= x.N; c2 *= 2) {  // onto a new aligned group in free ranks
            const double g = gain_out - (std::max(len2, t_at(c2)) - len2);
            if (g <= best.gain) continue;
            const std::int64_t s2 = R2.free_block(c2);
            if (s2 >= 0) best = Move{g, static_cast<int>(k), static_cast<int>(b), static_cast<int>(si), static_cast<int>(k2), -1, c2, s2};
          }
        }
      }
    }
    if (best.k >= 0) {
      Block& from = rounds[static_cast<size_t>(best.k)].blocks[static_cast<size_t>(best.b)];
      const int id = from.samples[static_cast<size_t>(best.si)];
      from.samples.erase(from.samples.begin() + best.si);
      from.load = block_load(x, from.samples, from.size);
      if (best.k2 == static_cast<int>(rounds.size())) rounds.push_back(Round{{}, std::vector<char>(static_cast<size_t>(x.N), 0)});
      Round& R2 = rounds[static_cast<size_t>(best.k2)];
      if (best.b2 < 0) {
        R2.blocks.push_back(Block{best.s2, best.c2, 0, {}});
        R2.mark(best.s2, best.c2, 1);
        best.b2 = static_cast<int>(R2.blocks.size()) - 1;
      }
      Block& to = R2.blocks[static_cast<size_t>(best.b2)];
      to.samples.push_back(id);
      to.load = block_load(x, to.samples, to.size);
      changed = true;
    }
    for (Round& R : rounds)  // drop emptied groups and rounds
      for (size_t j = R.blocks.size(); j-- > 0;)
        if (R.blocks[j].samples.empty()) R.mark(R.blocks[j].start, R.blocks[j].size, 0), R.blocks.erase(R.blocks.begin() + static_cast<std::ptrdiff_t>(j));
    rounds.erase(std::remove_if(rounds.begin(), rounds.end(), [](const Round& R) { return R.blocks.empty(); }), rounds.end());
    if (!changed) break;
  }
}

// One round of first-fit-decreasing bins: every sample takes its allotted size c; samples needing
// all N ranks are stacked in a round of their own; the others are packed, class by class, into
// bins of capacity T (a bin = one group of size c running its samples back to back). Feasible if
// the bins fit in N ranks; blocks are handed out size-descending, so every group is aligned.
bool bins_round(const Ctx& x, const std::vector<std::int64_t>& size, double T, std::vector<Round>& out) {
  out.clear();
  Round full{{}, std::vector<char>(static_cast<size_t>(x.N), 0)}, rest{{}, std::vector<char>(static_cast<size_t>(x.N), 0)};
  auto t_of = [&](int i) { return x.cost.time(x.L[static_cast<size_t>(i)], size[static_cast<size_t>(i)]); };
  const std::vector<int> order = size_time_order(x, size);
  std::vector<Block> bins;
  std::int64_t used = 0;
  for (int i : order) {
    const std::int64_t c = size[static_cast<size_t>(i)];
    const double t = t_of(i);
    if (c == x.N) {
      if (full.blocks.empty()) full.blocks.push_back(Block{0, x.N, 0, {}}), full.mark(0, x.N, 1);
      full.blocks[0].samples.push_back(i);
      full.blocks[0].load += t;
      continue;
    }
    Block* fit = nullptr;
    for (Block& b : bins)
      if (b.size == c && b.load + t <= T + 1e-12) {
        fit = &b;
        break;
      }
    if (!fit) {
      used += c;
      if (used > x.N) return false;
      bins.push_back(Block{0, c, 0, {}});
      fit = &bins.back();
    }
    fit->samples.push_back(i);
    fit->load += t;
  }
  for (Block& b : bins) {  // size-descending (bins were opened in that order): aligned buddy blocks
    b.start = rest.free_block(b.size);
    rest.mark(b.start, b.size, 1);
    rest.blocks.push_back(b);
  }
  if (!full.blocks.empty()) out.push_back(std::move(full));
  if (!rest.blocks.empty()) out.push_back(std::move(rest));
  return true;
}

// sizes for a time budget T: least work among sizes meeting T (the fastest size if none does)
std::vector<std::int64_t> allot(const Ctx& x, double T) {
  std::vector<std::int64_t> size;
  for (std::int64_t Li : x.L) {
    std::int64_t best = -1, fastest = cp_min(Li, x.M);
    double bw = 0;
    for (std::int64_t c = cp_min(Li, x.M); c <= x.N; c *= 2) {
      const double t = x.cost.time(Li, c);
      if (t < x.cost.time(Li, fastest)) fastest = c;
      if (t <= T && (best < 0 || static_cast<double>(c) * t < bw - 1e-12)) best = c, bw = static_cast<double>(c) * t;
    }
    size.push_back(best > 0 ? best : fastest);
  }
  return size;
}

}  // namespace

DcpSchedule schedule_cplab(const std::vector<std::int64_t>& lengths, std::int64_t N, std::int64_t M,
                           const CostModel& cost) {
  check_batch(lengths, N, M);
  const Ctx x{lengths, N, M, cost};
  const double lb = lower_bounds(lengths, N, M, cost).moldable;
  std::vector<std::vector<std::int64_t>> candidates;
  for (int k = 0; k <= 16; ++k) candidates.push_back(allot(x, lb * std::pow(1.15, k)));
  candidates.push_back(allot(x, 1e300));  // every sample at its least-work size
  candidates.push_back(std::vector<std::int64_t>(lengths.size(), N));  // every sample on all ranks
  // place every candidate (cheap), then polish the three shortest with local search
  std::vector<std::pair<double, std::vector<Round>>> placed;
  for (size_t ci = 0; ci < candidates.size(); ++ci) {
    if (ci > 0 && candidates[ci] == candidates[ci - 1]) continue;
    std::vector<Round> r = place(x, candidates[ci]);
    placed.emplace_back(total(r), std::move(r));
  }
  std::stable_sort(placed.begin(), placed.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  if (placed.size() > 2) placed.resize(2);  // the two shortest greedy placements
  // one-round FFD bins: bisection on the bin capacity T (allotment and capacity both T); the
  // shortest one joins the local search
  {
    std::vector<std::pair<double, std::vector<Round>>> bins;
    double lo = lb, hi = lb;
    std::vector<Round> r;
    for (int k = 0; k < 60 && !bins_round(x, allot(x, hi), hi, r); ++k) hi *= 1.5;
    if (bins_round(x, allot(x, hi), hi, r)) {
      for (int it = 0; it < 24; ++it) {
        const double mid = 0.5 * (lo + hi);
        if (bins_round(x, allot(x, mid), mid, r)) {
          hi = mid;
          bins.emplace_back(total(r), r);
        } else {
          lo = mid;
        }
      }
      bins_round(x, allot(x, hi), hi, r);
      bins.emplace_back(total(r), std::move(r));
      std::stable_sort(bins.begin(), bins.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
      placed.push_back(std::move(bins.front()));
    }
  }
  // Megatron v1's own placement, when it is aligned, is a starting point too: the result is then
  // never worse than v1 on the same batch and cost model
  {
    const DcpSchedule m = schedule_megatron_v1(lengths, N, M, cost);
    if (m.aligned) {
      std::vector<Round> r;
      for (const DcpRound& dr : m.rounds) {
        Round R{{}, std::vector<char>(static_cast<size_t>(N), 0)};
        for (const DcpGroup& g : dr.groups) {
          R.blocks.push_back(Block{g.start, g.size, block_load(x, g.samples, g.size), g.samples});
          R.mark(g.start, g.size, 1);
        }
        r.push_back(std::move(R));
      }
      placed.emplace_back(total(r), std::move(r));
    }
  }
  std::vector<Round> best;
  double best_len = 0;
  for (size_t i = 0; i < placed.size(); ++i) {
    std::vector<Round> r = std::move(placed[i].second);
    improve(x, r);
    const double len = total(r);
    if (best.empty() || len < best_len - 1e-12) best = std::move(r), best_len = len;
  }
  DcpSchedule s;
  s.ranks = N;
  // small batches: exhaustive search, bounded by the heuristic's makespan, replaces it if shorter
  if (lengths.size() <= 7 && N <= 8) {
    bool complete = false;
    DcpSchedule e = schedule_exact(lengths, N, M, cost, best_len, 2000000, complete);
    if (!e.rounds.empty() && e.makespan < best_len - 1e-12) {
      check(e, lengths, M);
      return e;
    }
  }
  for (const Round& R : best) {
    DcpRound out;
    std::vector<Block> blocks = R.blocks;
    std::sort(blocks.begin(), blocks.end(), [](const Block& a, const Block& b) { return a.start < b.start; });
    for (const Block& b : blocks) out.groups.push_back(DcpGroup{b.start, b.size, b.samples, 0});
    s.rounds.push_back(std::move(out));
  }
  evaluate(s, lengths, cost);
  check(s, lengths, M);
  return s;
}

}  // namespace cplab
