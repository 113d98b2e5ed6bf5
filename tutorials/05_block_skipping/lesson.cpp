// 05_block_skipping: the three causal tile shapes of a zigzag ring, and the work they skip.
//
// What it is: lesson 5's program. Zigzag over cp 4 ranks, 32 tokens (8 chunks of 4): the global
// causal mask (mask.h) restricted to rank 1's queries and each KV block (the three shapes a/b/c:
// diagonal, lower, upper), the ring schedule (ring_schedule.h: ring_fwd_kv_block, ring_tile) for
// every rank and step, the tile each shape is cut down to (checked pair by pair against the global
// mask), the tile events of a real run (run_experiment's trace: section, mask, pairs, FLOPs), and
// the FLOPs saved against computing every block in full.
// What it is not: a schedule or a mask of its own: sections, tiles and masks are the reference's;
// the lesson draws them and counts pairs to check them.
#include <cstdio>
#include <string>

#include "run/experiment.h"
#include "core/flops.h"
#include "lesson.h"
#include "modes/ring_schedule.h"

using namespace cplab;
using namespace cplab::lesson;

namespace {

const char* shape_of(const std::string& section) {
  return section == "diagonal" ? "a" : section == "lower" ? "b" : section == "upper" ? "c" : "-";
}

}  // namespace

int main(int argc, char** argv) {
  Lesson L(argc, argv, "Lesson 5: skipping masked blocks",
           "Under zigzag every causal tile is one of three shapes; each is cut to the part that is visible.");
  CpFields f;  // a causal zigzag ring: P = 4 ranks, S = 32 tokens, 1 head of dim 4
  f.mode = Mode::p2p, f.layout = Layout::zigzag, f.causal = true;
  f.cp = 4, f.seq = 32, f.heads = 1, f.kv_heads = 1, f.head_dim = 4;
  const RunSpec s{.cp = CpSpec(f)};
  const CpSpec& cp = s.cp;
  const index_t P = cp.P(), S = cp.S(), n = cp.n(), c = n / 2;  // c: tokens per zigzag chunk
  const Layout layout = cp.layout();
  const Partition& part = cp.partition();
  const Mask causal = Mask::causal();  // the global causal mask: query g sees keys [0, g]
  auto visible = [&](index_t gq, index_t gk) {
    const KeyRange kr = causal.keys(gq, S);
    return gk >= kr.lo && gk < kr.hi;
  };

  L.step("zigzag: 8 chunks of 4 tokens, rank r holds chunk r and chunk 7-r");
  for (index_t r = 0; r < P; ++r) {
    const std::vector<index_t> idx = part.indices(r);
    std::printf("rank %lld: chunks %lld and %lld, tokens %s\n", static_cast<long long>(r), static_cast<long long>(idx.front() / c),
                static_cast<long long>(idx.back() / c), list(idx).c_str());
  }

  L.step("the global causal mask, cut to rank 1's queries x each rank's KV block (# visible, . masked)");
  const index_t me = 1;
  const std::vector<index_t> qpos = part.indices(me);
  std::printf("          ");
  for (index_t j = 0; j < P; ++j) std::printf("%sKV of rank %lld", j ? "  " : "", static_cast<long long>(j));
  std::printf("\n");
  for (index_t a = 0; a < n; ++a) {
    std::printf("query %2lld", static_cast<long long>(qpos[static_cast<size_t>(a)]));
    for (index_t j = 0; j < P; ++j) {
      std::string cells;
      for (index_t gk : part.indices(j)) cells += visible(qpos[static_cast<size_t>(a)], gk) ? '#' : '.';
      std::printf("      %s", cells.c_str());
    }
    std::printf("\n");
  }
  std::printf("KV of rank 1 (j = r): shape a, a lower triangle (local order = global order)\n"
              "KV of rank 0 (j < r): shape b, the left half (the block's first chunk) is visible, the right half never\n"
              "KV of ranks 2, 3 (j > r): shape c, the bottom half (the late Q chunk) sees all, the top half nothing\n");

  L.step("the ring schedule: which block, which section, at every step (ring_schedule.h)");
  std::vector<std::vector<std::string>> rows;
  for (index_t r = 0; r < P; ++r) {
    std::vector<std::string> row = {std::to_string(r)};
    for (index_t i = 0; i < P; ++i) {
      const index_t j = ring_fwd_kv_block(P, r, i);
      const RingTile t = ring_tile(layout, cp.causal(), P, r, j, n);
      row.push_back("j=" + std::to_string(j) + " " + t.section + " (" + shape_of(t.section) + ")");
    }
    rows.push_back(row);
  }
  table({"rank", "step 0", "step 1", "step 2", "step 3"}, rows);
  std::printf("the tile of each section (Q rows x KV rows of the held block, local indices):\n");
  rows.clear();
  for (index_t j : {index_t{1}, index_t{0}, index_t{2}}) {  // rank 1: j == r, j < r, j > r
    const RingTile t = ring_tile(layout, cp.causal(), P, me, j, n);
    rows.push_back({t.section, "Q [" + std::to_string(t.q0) + ", " + std::to_string(t.q0 + t.nq) + ")", "KV [" + std::to_string(t.k0) + ", " + std::to_string(t.k0 + t.nk) + ")",
                    to_string(t.mask), std::to_string(t.nq * t.nk), std::to_string(visible_pairs(t.mask, t.nq, t.nk))});
  }
  table({"section", "queries", "keys", "mask", "tile area", "visible pairs"}, rows);

  L.step("what each tile keeps of rank 1's blocks (# computed, . masked inside the tile, - cut away)");
  for (index_t a = 0; a < n; ++a) {
    std::printf("query %2lld", static_cast<long long>(qpos[static_cast<size_t>(a)]));
    for (index_t j = 0; j < P; ++j) {
      const RingTile t = ring_tile(layout, cp.causal(), P, me, j, n);
      std::string cells;
      for (index_t b = 0; b < n; ++b) {
        const bool in = a >= t.q0 && a < t.q0 + t.nq && b >= t.k0 && b < t.k0 + t.nk;
        const KeyRange kr = t.mask.keys(a - t.q0, t.nk);
        cells += !in ? '-' : (b - t.k0 >= kr.lo && b - t.k0 < kr.hi) ? '#' : '.';
      }
      std::printf("      %s", cells.c_str());
    }
    std::printf("\n");
  }
  bool exact = true;  // every rank, every block: tile + its mask = the global causal mask, pair by pair
  for (index_t r = 0; r < P; ++r)
    for (index_t j = 0; j < P; ++j) {
      const RingTile t = ring_tile(layout, cp.causal(), P, r, j, n);
      const std::vector<index_t> qg = part.indices(r), kg = part.indices(j);
      for (index_t a = 0; a < n; ++a)
        for (index_t b = 0; b < n; ++b) {
          const bool in = a >= t.q0 && a < t.q0 + t.nq && b >= t.k0 && b < t.k0 + t.nk;
          const KeyRange kr = in ? t.mask.keys(a - t.q0, t.nk) : KeyRange{0, 0};
          const bool tile_sees = in && b - t.k0 >= kr.lo && b - t.k0 < kr.hi;
          exact = exact && tile_sees == visible(qg[static_cast<size_t>(a)], kg[static_cast<size_t>(b)]);
        }
    }
  show("every rank and block: the tile sees exactly the globally visible pairs", std::string(exact ? "yes" : "no"));

  L.step("the tiles of a real run, from its trace (forward)");
  const RunReport rep = run_experiment(s, make_inputs(s));
  rows.clear();
  for (const Event& e : rep.trace.events())
    if (e.kind == EventKind::tile && e.phase == Phase::fwd)
      rows.push_back({std::to_string(e.rank), std::to_string(e.step), std::to_string(e.peer), e.section, e.mask, to_string(e.rows), to_string(e.cols), std::to_string(e.pairs), std::to_string(e.flops)});
  table({"rank", "step", "KV of", "section", "mask", "Q tokens", "K/V tokens", "pairs", "FLOPs"}, rows);
  show("error vs dense attention below 1e-12", std::string(rep.max_error() < 1e-12 ? "yes" : "no"));

  L.step("the FLOPs saved: every block in full vs the tiles vs the visible pairs");
  rows.clear();
  std::int64_t full_sum = 0, area_sum = 0, useful_sum = 0;
  for (index_t r = 0; r < P; ++r) {
    std::int64_t area = 0;
    for (const Event& e : rep.trace.events())
      if (e.kind == EventKind::tile && e.phase == Phase::fwd && e.rank == r) {
        std::int64_t nq = 0, nk = 0;
        for (const Span& sp : e.rows) nq += sp.count;
        for (const Span& sp : e.cols) nk += sp.count;
        area += nq * nk;
      }
    const std::int64_t full = fwd_flops<std::int64_t>(P * n * n, cp.h(), cp.d(), cp.dv());
    const std::int64_t tiles = fwd_flops<std::int64_t>(area, cp.h(), cp.d(), cp.dv());
    const std::int64_t useful = rep.flops_fwd[static_cast<size_t>(r)];
    full_sum += full, area_sum += tiles, useful_sum += useful;
    rows.push_back({std::to_string(r), std::to_string(full), std::to_string(tiles), std::to_string(useful)});
  }
  rows.push_back({"all", std::to_string(full_sum), std::to_string(area_sum), std::to_string(useful_sum)});
  table({"rank", "4 full blocks", "the cut tiles", "visible pairs (trace)"}, rows);
  show("dense causal attention needs", rep.dense_flops);
  show("fraction of full-block FLOPs skipped", 1.0 - static_cast<double>(useful_sum) / static_cast<double>(full_sum));
  std::printf("The cut tiles differ from the visible pairs only by the diagonal tile's masked half: there the\n"
              "kernel applies the causal mask (flops.h counts visible pairs only); b and c tiles need no mask.\n");

  L.finish(5,
           {"cplab run --mode p2p --cp 4 --seq 32 --heads 1 --kv-heads 1 --head-dim 4 --causal --layout zigzag --backward   (the same tiles forward and backward)"});
  return 0;
}
