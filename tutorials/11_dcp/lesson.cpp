// 11_dcp: dynamic CP scheduling on an example batch (8 ranks, 4K tokens per rank, 8 sequences).
//
// What it is: lesson 11's program. Each sequence's smallest CP size and its time under Megatron's
// cost (dcp_cost.h), Megatron v1's BalancedCPScheduler placement round by round with per-rank
// loads (dcp_megatron.h: the real placement), the lower bounds
// (dcp_bounds.h), cplab's scheduler under the same cost (dcp_cplab.h: degenerate under L^2/cp),
// both schedulers under the cost with CP overhead, makespans, bound and ratios, and which aligned
// process groups each schedule uses (dcp_schedule.h).
// What it is not: a scheduler: every placement, load, makespan and bound comes from reference/; the
// lesson only prints them (and sums loads per rank for display).
#include <algorithm>
#include <cstdio>

#include "dcp/dcp_bounds.h"
#include "dcp/dcp_cplab.h"
#include "dcp/dcp_megatron.h"
#include "dcp/dcp_schedule.h"
#include "lesson.h"

using namespace cplab;
using namespace cplab::lesson;

namespace {

const std::vector<std::int64_t> kLengths{32768, 16384, 8192, 4096, 4096, 4096, 4096, 2048};
const std::int64_t kRanks = 8, kM = 4096;

std::string ranks_of(const DcpGroup& g) {
  return g.size == 1 ? std::to_string(g.start) : std::to_string(g.start) + "-" + std::to_string(g.start + g.size - 1);
}

std::string samples_of(const std::vector<int>& ids) {
  std::string s;
  for (int i : ids) s += (s.empty() ? "s" : ", s") + std::to_string(i);
  return s;
}

// the groups of every round, one row each
void print_groups(const DcpSchedule& s) {
  std::vector<std::vector<std::string>> rows;
  for (size_t k = 0; k < s.rounds.size(); ++k)
    for (const DcpGroup& g : s.rounds[k].groups)
      rows.push_back({std::to_string(k), ranks_of(g), "CP" + std::to_string(g.size), fmt(g.begin), fmt(g.load), samples_of(g.samples)});
  table({"round", "ranks", "size", "from", "load", "samples in order"}, rows);
}

// per round: each rank's busy time (sum of its groups' loads) and what it runs, in order of begin
void print_ranks(const DcpSchedule& s) {
  for (size_t k = 0; k < s.rounds.size(); ++k) {
    std::vector<double> busy(static_cast<size_t>(s.ranks), 0.0);
    std::vector<std::vector<int>> runs(static_cast<size_t>(s.ranks));
    std::vector<const DcpGroup*> gs;
    for (const DcpGroup& g : s.rounds[k].groups) gs.push_back(&g);
    std::stable_sort(gs.begin(), gs.end(), [](const DcpGroup* a, const DcpGroup* b) { return a->begin < b->begin; });
    for (const DcpGroup* g : gs)
      for (std::int64_t r = g->start; r < g->start + g->size; ++r) {
        busy[static_cast<size_t>(r)] += g->load;
        runs[static_cast<size_t>(r)].insert(runs[static_cast<size_t>(r)].end(), g->samples.begin(), g->samples.end());
      }
    show("round " + std::to_string(k) + " busy per rank", list(busy));
    for (std::int64_t r = 0; r < s.ranks; ++r)
      if (runs[static_cast<size_t>(r)].size() > 1)
        show("  round " + std::to_string(k) + ", rank " + std::to_string(r) + " runs", samples_of(runs[static_cast<size_t>(r)]));
  }
}

std::string groups_used(const DcpSchedule& s) {
  std::string out;
  for (const auto& [c, starts] : dcp_groups_used(s))
    for (std::int64_t st : starts) out += (out.empty() ? "" : "  ") + ranks_of(DcpGroup{st, c, {}, 0, 0});
  return out + (s.aligned ? "   (all aligned)" : "   (NOT all aligned)");
}

}  // namespace

int main(int argc, char** argv) {
  Lesson L(argc, argv, "Lesson 11: dynamic CP scheduling",
           "Each sequence of a batch gets its own CP size and group of ranks; a scheduler packs the groups in time.");
  const CostModel l2;  // Megatron's BalancedCPScheduler cost: t(L, c) = (L/1024)^2 / c
  CostModel overhead;
  overhead.kind = CostModel::Kind::overhead;

  L.step("the batch: 8 sequences on 8 ranks, at most M = 4096 tokens per rank");
  std::vector<std::vector<std::string>> rows;
  double area = 0;
  for (size_t i = 0; i < kLengths.size(); ++i) {
    const std::int64_t c = cp_min(kLengths[i], kM);
    const double t = l2.time(kLengths[i], c);
    area += static_cast<double>(c) * t;
    rows.push_back({"s" + std::to_string(i), std::to_string(kLengths[i]), std::to_string(c), fmt(t), fmt(static_cast<double>(c) * t)});
  }
  show("cost", l2.describe());
  table({"sample", "length L", "cp_min", "t(L, cp_min)", "ranks x time"}, rows);
  show("total rank-time (sum of L^2, any sizes)", area);
  show("spread over 8 ranks", area / static_cast<double>(kRanks));

  L.step("Megatron v1 (BalancedCPScheduler), its own cost: the real placement");
  const DcpSchedule v1 = schedule_megatron_v1(kLengths, kRanks, kM, l2);
  print_groups(v1);
  print_ranks(v1);
  std::printf("A table worked by hand may put s3, s4, s7 on rank 6 and s5, s6 on rank 7: same loads, not v1's "
              "placement.\n"
              "v1 opens a group on a free rank before stacking (s4 takes the free rank 7), then fills the\n"
              "least-loaded group, earliest on ties (s5 -> rank 6, s6 -> rank 7, s7 -> rank 6).\n");
  show("Megatron v1 makespan (l2)", v1.makespan);

  L.step("lower bounds: no schedule of this batch can be shorter");
  const DcpBound b2 = lower_bounds(kLengths, kRanks, kM, l2, v1.makespan);
  show("rigid bound (every sample at cp_min, v1's sizes)", b2.rigid);
  show("area bound (any power-of-two sizes)", b2.area);
  show("lower bound (moldable, l2)", b2.moldable);
  show("Megatron v1 ratio = makespan / lower bound", v1.makespan / b2.moldable);
  std::printf("v1 meets the rigid bound: with every sample at its smallest CP size it is optimal.\n");

  L.step("cplab's scheduler under the same cost: everything on all 8 ranks");
  const DcpSchedule c2 = schedule_cplab(kLengths, kRanks, kM, l2);
  print_groups(c2);
  show("cplab makespan (l2)", c2.makespan);
  show("cplab ratio (l2)", c2.makespan / b2.moldable);
  std::printf("Under L^2 / c a sample's rank-time c * t = L^2 does not depend on c, and its time falls as c\n"
              "grows: all on CP8 is optimal, so this cost cannot tell a good schedule from a bad one.\n");

  L.step("a cost with CP overhead: communication and setup make large groups cost more work");
  show("cost", overhead.describe());
  const auto opts = size_options(kLengths, kRanks, kM, overhead);
  rows.clear();
  for (size_t i = 0; i < kLengths.size(); ++i) {
    std::vector<std::string> row{"s" + std::to_string(i)};
    for (std::int64_t c : {1, 2, 4, 8}) {
      std::string cell = "-";
      for (const SizeOption& o : opts[i])
        if (o.c == c) cell = fmt(o.t) + " (" + fmt(static_cast<double>(c) * o.t) + ")";
      row.push_back(cell);
    }
    rows.push_back(row);
  }
  std::printf("t(L, c) (ranks x time) for every size a sample may use:\n");
  table({"sample", "c = 1", "c = 2", "c = 4", "c = 8"}, rows);
  const DcpSchedule vo = schedule_megatron_v1(kLengths, kRanks, kM, overhead);
  const DcpSchedule co = schedule_cplab(kLengths, kRanks, kM, overhead);
  const DcpBound bo = lower_bounds(kLengths, kRanks, kM, overhead, co.makespan);
  std::printf("Megatron v1 (same placement as in step 2, new loads):\n");
  print_groups(vo);
  std::printf("cplab (one round; a rank runs its groups one after another, 'from' = start time):\n");
  print_groups(co);
  print_ranks(co);
  show("Megatron v1 makespan (overhead)", vo.makespan);
  show("cplab makespan (overhead)", co.makespan);
  show("lower bound (moldable, overhead)", bo.moldable);
  show("Megatron v1 ratio (overhead)", vo.makespan / bo.moldable);
  show("cplab ratio (overhead)", co.makespan / bo.moldable);
  show("cplab utilization (busy rank-time / (8 x makespan))", co.utilization);

  L.step("process groups: a group must be one Megatron created at start-up");
  for (const auto& [c, starts] : dcp_groups(kRanks)) {
    std::string s;
    for (std::int64_t st : starts) s += (s.empty() ? "" : "  ") + ranks_of(DcpGroup{st, c, {}, 0, 0});
    show("aligned CP" + std::to_string(c) + " groups", s);
  }
  show("used by Megatron v1 (l2)", groups_used(v1));
  show("used by cplab (l2)", groups_used(c2));
  show("used by Megatron v1 (overhead)", groups_used(vo));
  show("used by cplab (overhead)", groups_used(co));
  // a batch on which v1 places a group off the aligned blocks
  const std::vector<std::int64_t> hazard{8192, 3072, 12288, 16384, 8192, 3072, 6144, 6144, 6144, 16384};
  std::vector<std::int64_t> hazard_k;
  for (std::int64_t x : hazard) hazard_k.push_back(x / 1024);
  show("another batch (lengths / 1024)", list(hazard_k));
  const DcpSchedule vh = schedule_megatron_v1(hazard, kRanks, kM, l2);
  const DcpSchedule ch = schedule_cplab(hazard, kRanks, kM, l2);
  show("used by Megatron v1", groups_used(vh));
  for (const std::string& u : vh.unaligned) show("  Megatron v1", u);
  show("used by cplab", groups_used(ch));

  L.finish(11,
           {"cplab schedule --ranks 8 --max-seqlen-per-rank 4096 --lengths 32768,16384,8192,4096,4096,4096,4096,2048 --scheduler megatron",
            "cplab schedule --ranks 8 --max-seqlen-per-rank 4096 --lengths 32768,16384,8192,4096,4096,4096,4096,2048 --cost overhead",
            "cplab schedule --ranks 8 --max-seqlen-per-rank 4096 --lengths 8192,3072,12288,16384,8192,3072,6144,6144,6144,16384 --scheduler megatron   (the misaligned group)"});
  return 0;
}
