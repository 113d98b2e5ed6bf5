// cmd_schedule.cpp: `cplab schedule`, dynamic-CP schedules of a batch, or statistics over many.
//
// What it is: one batch (--lengths) scheduled by Megatron v1 or cplab's scheduler, printed as a
// rounds x ranks table with groups, CP sizes, samples and loads, plus makespan, lower bound, their
// ratio, utilization and alignment (or --json); or, with --dist, K random batches scheduled by both
// schedulers with mean / p50 / p99 of makespan / lower bound and the modelled speedup over static CP.
// What it is not: an execution of the schedule (reference/dcp/dcp_execute.h runs schedules).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <exception>
#include <iostream>
#include <memory>
#include <omp.h>
#include <tuple>
#include <nlohmann/json.hpp>

#include "commands.h"
#include "dcp/dcp_batches.h"
#include "dcp/dcp_bounds.h"
#include "dcp/dcp_cplab.h"
#include "dcp/dcp_megatron.h"
#include "core/error.h"
#include "layout/thd.h"

namespace cplab::app {

namespace {

struct ScheduleOptions {
  std::int64_t ranks = 8, max_per_rank = 4096, batches = 100, batch_size = 0;
  long long seed = 0;
  std::string lengths, scheduler = "cplab", cost = "l2", cost_params, dist;
  bool json = false;
  CLI::Option* scheduler_opt = nullptr;
};

DcpSchedule run_scheduler(const std::string& which, const std::vector<std::int64_t>& L, std::int64_t N,
                          std::int64_t M, const CostModel& cost) {
  if (which == "megatron") return schedule_megatron_v1(L, N, M, cost);
  if (which == "cplab") return schedule_cplab(L, N, M, cost);
  throw Error("scheduler '" + which + "' is not one of: megatron, cplab");
}

nlohmann::json schedule_json(const DcpSchedule& s) {
  nlohmann::json rounds = nlohmann::json::array();
  for (const DcpRound& r : s.rounds) {
    nlohmann::json groups = nlohmann::json::array();
    for (const DcpGroup& g : r.groups) {
      std::vector<std::int64_t> ranks;
      for (std::int64_t q = g.start; q < g.start + g.size; ++q) ranks.push_back(q);
      groups.push_back({{"ranks", ranks}, {"cp", g.size}, {"samples", g.samples}, {"load", g.load}, {"begin", g.begin}});
    }
    rounds.push_back(groups);
  }
  return rounds;
}

// every aligned process group of each size, and which of them the schedule uses
nlohmann::json groups_json(const DcpSchedule& s) {
  nlohmann::json out = nlohmann::json::array();
  const auto used = dcp_groups_used(s);
  for (const auto& [c, starts] : dcp_groups(s.ranks)) {
    std::vector<std::int64_t> u;
    for (const auto& [uc, us] : used)
      if (uc == c) u = us;
    out.push_back({{"cp", c}, {"starts", starts}, {"used_starts", u}});
  }
  return out;
}

std::string range(std::int64_t start, std::int64_t size) {
  return size == 1 ? std::to_string(start) : std::to_string(start) + "-" + std::to_string(start + size - 1);
}

void print_schedule(const DcpSchedule& s, const std::vector<std::int64_t>& L) {
  bool timed = false;  // does any group begin after 0 (a rank serving several groups in a round)?
  for (const DcpRound& r : s.rounds)
    for (const DcpGroup& g : r.groups) timed = timed || g.begin > 0;
  for (size_t k = 0; k < s.rounds.size(); ++k) {
    std::printf("round %zu (length %.4g)\n", k, s.rounds[k].length());
    for (const DcpGroup& g : s.rounds[k].groups) {
      std::string who;
      for (int i : g.samples) who += (who.empty() ? "" : " ") + ("s" + std::to_string(i)) + "(" + std::to_string(L[static_cast<size_t>(i)]) + ")";
      const std::string ranks = (g.size == 1 ? "rank " : "ranks ") + range(g.start, g.size);
      if (timed) std::printf("  %-14s CP%-4lld from %9.4g  load %9.4g  %s%s\n", ranks.c_str(), static_cast<long long>(g.size), g.begin, g.load, who.c_str(),
                             (g.start % g.size != 0) ? "   <- NOT an aligned process group" : "");
      else std::printf("  %-14s CP%-4lld load %10.4g  %s%s\n", ranks.c_str(), static_cast<long long>(g.size), g.load, who.c_str(),
                       (g.start % g.size != 0) ? "   <- NOT an aligned process group" : "");
    }
  }
  if (s.ranks <= 16) {  // the rounds x ranks grid: what each rank runs, in order ('>' = then)
    std::vector<std::vector<std::string>> cells(s.rounds.size(), std::vector<std::string>(static_cast<size_t>(s.ranks), ""));
    std::vector<std::vector<double>> busy(s.rounds.size(), std::vector<double>(static_cast<size_t>(s.ranks), 0.0));
    size_t width = 9;
    for (size_t k = 0; k < s.rounds.size(); ++k) {
      std::vector<const DcpGroup*> gs;
      for (const DcpGroup& g : s.rounds[k].groups) gs.push_back(&g);
      std::stable_sort(gs.begin(), gs.end(), [](const DcpGroup* a, const DcpGroup* b) { return a->begin < b->begin; });
      for (const DcpGroup* g : gs)
        for (std::int64_t q = g->start; q < g->start + g->size; ++q) {
          std::string& c = cells[k][static_cast<size_t>(q)];
          for (size_t j = 0; j < g->samples.size(); ++j) c += (c.empty() ? "s" : (j == 0 ? ">s" : ",s")) + std::to_string(g->samples[j]);
          busy[k][static_cast<size_t>(q)] += g->load;
          width = std::max(width, c.size() + 1);
        }
    }
    std::printf("\n%-8s", timed ? "" : "");
    for (std::int64_t r = 0; r < s.ranks; ++r) std::printf(" %-*s", static_cast<int>(width), ("r" + std::to_string(r)).c_str());
    std::printf("\n");
    for (size_t k = 0; k < s.rounds.size(); ++k) {
      std::printf("round %-2zu", k);
      for (const auto& c : cells[k]) std::printf(" %-*s", static_cast<int>(width), c.empty() ? "." : c.c_str());
      std::printf("\n%-8s", "  busy");
      for (double l : busy[k]) std::printf(" %-*.4g", static_cast<int>(width), l);
      std::printf("\n");
    }
    if (timed) std::printf("(a cell lists what the rank runs in order: ',' within one group, '>' into the next group)\n");
  }
  std::printf("\nprocess groups used (aligned groups of each size; ranks of each used group):\n");
  for (const auto& [c, starts] : dcp_groups(s.ranks)) {
    std::string used;
    size_t n = 0;
    for (const auto& [uc, us] : dcp_groups_used(s))
      if (uc == c)
        for (std::int64_t st : us) used += (used.empty() ? "" : " ") + range(st, c), ++n;
    std::printf("  CP%-4lld %3zu of %3zu  %s\n", static_cast<long long>(c), n, starts.size(), used.c_str());
  }
}

double quantile(std::vector<double> v, double q) {
  std::sort(v.begin(), v.end());
  const size_t i = static_cast<size_t>(std::min<double>(static_cast<double>(v.size() - 1), std::ceil(q * static_cast<double>(v.size())) - 1));
  return v[i];
}

int dist_action(const ScheduleOptions& o, const CostModel& cost) {
  // every option's rule first (schedule_action checked ranks and M), then the file's
  require(o.batches >= 1 && o.batches <= 100000, "batches " + std::to_string(o.batches) + " must be in [1, 100000]");
  if (o.batch_size > 0) check_batch_size(o.batch_size, o.ranks, "--batch-size");
  const LengthDist d = read_length_dist(o.dist);
  const std::int64_t B = o.batch_size > 0 ? o.batch_size : d.batch_size;
  if (o.batch_size == 0) check_batch_size(B, o.ranks, o.dist + ": batch_size");
  const std::int64_t room = o.ranks * o.max_per_rank;  // <= 2^52 (check_dcp_ranks)
  require(d.max <= room, o.dist + ": max length " + std::to_string(d.max) +
                             " is more than ranks x max-seqlen-per-rank = " + std::to_string(room));
  if (check_only) return 0;  // tests/fuzz: the inputs are checked
  using Clock = std::chrono::steady_clock;
  const auto start = Clock::now();
  auto last_note = start;
  std::mt19937_64 rng(static_cast<std::uint64_t>(o.seed));
  struct Acc {
    std::vector<double> ratio, speedup;
    int unaligned = 0;
    double seconds = 0;
  } meg, ours;
  int worse = 0;
  double bound_seconds = 0;  // the reported bound's extra test (the LP), not part of either scheduler
  double other_seconds = 0;  // drawing the batches and the static-CP baseline
  // What one batch gives; batches run in parallel (OpenMP, one batch per thread at a time), drawn
  // in order from the seed first, chunk by chunk (memory stays a chunk of batches), so every
  // figure but the times is the same whatever the thread count. The per-part times are summed
  // over the threads (CPU-like seconds); "whole" is the wall clock.
  struct One {
    double st = 0, meg = 0, ours = 0, lb = 0, t_meg = 0, t_ours = 0, t_lb = 0, t_static = 0;
    bool meg_aligned = true, ours_aligned = true;
  };
  const int threads = std::max(1, omp_get_max_threads());
  // batches drawn at a time: 16 per thread, fewer when they are long (at most ~2^22 lengths held)
  const std::int64_t chunk = std::clamp<std::int64_t>((std::int64_t{1} << 22) / B, threads, 16 * static_cast<std::int64_t>(threads));
  std::vector<std::vector<std::int64_t>> drawn;
  std::vector<One> got;
  for (std::int64_t b0 = 0; b0 < o.batches; b0 += chunk) {
    const std::int64_t n = std::min(chunk, o.batches - b0);
    const auto td = Clock::now();
    drawn.resize(static_cast<size_t>(n));
    for (auto& L : drawn) L = sample_batch(d, B, rng);
    other_seconds += std::chrono::duration<double>(Clock::now() - td).count();
    got.assign(static_cast<size_t>(n), One{});
    std::exception_ptr failed;
#pragma omp parallel for schedule(dynamic, 1)
    for (std::int64_t k = 0; k < n; ++k) {
      try {
        const std::vector<std::int64_t>& L = drawn[static_cast<size_t>(k)];
        One& r = got[static_cast<size_t>(k)];
        const auto t0 = Clock::now();
        r.st = static_cp_schedule(L, o.ranks, o.max_per_rank, cost).makespan;
        const auto t1 = Clock::now();
        const DcpSchedule m = schedule_megatron_v1(L, o.ranks, o.max_per_rank, cost);
        const auto t2 = Clock::now();
        DcpBound base;  // computed by cplab's scheduler, which uses it (its time counts as cplab's)
        const DcpSchedule c = schedule_cplab(L, o.ranks, o.max_per_rank, cost, &base);
        const auto t3 = Clock::now();
        // cplab's makespan lets the bound use its sharpest (slower) test up to it (dcp_bounds.h)
        r.lb = sharpen_bound(L, o.ranks, o.max_per_rank, cost, base, c.makespan).moldable;
        const auto t4 = Clock::now();
        r.meg = m.makespan, r.ours = c.makespan, r.meg_aligned = m.aligned, r.ours_aligned = c.aligned;
        r.t_static = std::chrono::duration<double>(t1 - t0).count();
        r.t_meg = std::chrono::duration<double>(t2 - t1).count();
        r.t_ours = std::chrono::duration<double>(t3 - t2).count();
        r.t_lb = std::chrono::duration<double>(t4 - t3).count();
      } catch (...) {
#pragma omp critical(cplab_schedule_error)
        if (!failed) failed = std::current_exception();
      }
    }
    if (failed) std::rethrow_exception(failed);
    for (const One& r : got) {
      meg.seconds += r.t_meg, ours.seconds += r.t_ours, bound_seconds += r.t_lb, other_seconds += r.t_static;
      for (auto [acc, mk, aligned] : {std::tuple<Acc*, double, bool>{&meg, r.meg, r.meg_aligned}, {&ours, r.ours, r.ours_aligned}}) {
        acc->ratio.push_back(mk / r.lb);
        acc->speedup.push_back(r.st / mk);
        acc->unaligned += aligned ? 0 : 1;
      }
      worse += r.ours > r.meg * (1 + kRelTol) ? 1 : 0;
    }
    // progress on long runs (stderr, so stdout stays the table or the JSON): every 2 s
    const auto now = Clock::now();
    if (std::chrono::duration<double>(now - last_note).count() >= 2.0 && b0 + n < o.batches) {
      std::fprintf(stderr, "cplab schedule: batch %lld of %lld, %.1f s so far\n", static_cast<long long>(b0 + n),
                   static_cast<long long>(o.batches), std::chrono::duration<double>(now - start).count());
      last_note = now;
    }
  }
  auto mean = [](const std::vector<double>& v) { double s = 0; for (double x : v) s += x; return s / static_cast<double>(v.size()); };
  const double whole = std::chrono::duration<double>(Clock::now() - start).count();
  if (o.json) {
    nlohmann::json j{{"dist", d.name}, {"ranks", o.ranks}, {"max_seqlen_per_rank", o.max_per_rank}, {"batches", o.batches},
                     {"batch_size", B}, {"seed", o.seed}, {"cost", cost.describe()}, {"cplab_worse_than_megatron", worse},
                     {"bound_lp_seconds", bound_seconds}, {"threads", threads},
                     // the parts: summed over the threads; whole: wall clock
                     {"seconds", {{"megatron", meg.seconds}, {"cplab", ours.seconds}, {"bound_lp", bound_seconds},
                                  {"batches_and_static", other_seconds}, {"whole", whole}}}};
    for (auto [name, acc] : {std::pair<const char*, const Acc*>{"megatron", &meg}, {"cplab", &ours}})
      j[name] = {{"ratio_mean", mean(acc->ratio)}, {"ratio_p50", quantile(acc->ratio, 0.5)}, {"ratio_p99", quantile(acc->ratio, 0.99)},
                 {"ratio_max", quantile(acc->ratio, 1.0)}, {"speedup_over_static_mean", mean(acc->speedup)},
                 {"unaligned_batches", acc->unaligned}, {"seconds", acc->seconds}};
    std::cout << j.dump(2) << "\n";
  } else {
    std::printf("cplab schedule: %lld batches of %lld from %s (%s), %lld ranks, max %lld tokens per rank, seed %lld\n"
                "cost: %s\nratio = makespan / lower bound (dcp_bounds.h, moldable, with the LP test below cplab's makespan); speedup = static CP (pinned to the batch's longest\n"
                "sequence) makespan / this makespan, both under the same cost model\n\n",
                static_cast<long long>(o.batches), static_cast<long long>(B), d.name.c_str(), o.dist.c_str(),
                static_cast<long long>(o.ranks), static_cast<long long>(o.max_per_rank), o.seed, cost.describe().c_str());
    std::printf("%-10s %11s %10s %10s %10s %16s %10s %9s\n", "scheduler", "ratio mean", "p50", "p99", "max", "speedup vs static",
                "unaligned", "time (s)");
    for (auto [name, acc] : {std::pair<const char*, const Acc*>{"megatron", &meg}, {"cplab", &ours}})
      std::printf("%-10s %11.4f %10.4f %10.4f %10.4f %16.3f %10d %9.3f\n", name, mean(acc->ratio), quantile(acc->ratio, 0.5),
                  quantile(acc->ratio, 0.99), quantile(acc->ratio, 1.0), mean(acc->speedup), acc->unaligned, acc->seconds);
    std::printf("\ncplab's makespan was worse than Megatron v1's on %d of %lld batches\n", worse, static_cast<long long>(o.batches));
    std::printf("time (s, each part summed over the %d threads that ran batches side by side): megatron %.3f, cplab\n"
                "%.3f (with the bound it searches against), the reported bound's LP test %.3f, batches and static CP %.3f;\n"
                "the whole command %.3f s wall (after reading the options and the file; OMP_NUM_THREADS sets the threads)\n",
                threads, meg.seconds, ours.seconds, bound_seconds, other_seconds, whole);
  }
  return 0;
}

int schedule_action(const ScheduleOptions& o) {
  const CostModel cost = parse_cost(o.cost, o.cost_params);
  require(!o.dist.empty() || !o.lengths.empty(), "give --lengths L1,L2,... or --dist FILE");
  require(o.dist.empty() || o.lengths.empty(), "--lengths and --dist exclude each other");
  require(o.seed >= 0, "seed " + std::to_string(o.seed) + " must be >= 0");
  require(o.batch_size >= 0,
          "--batch-size " + std::to_string(o.batch_size) + " must be >= 0 (0: the distribution file's batch_size)");
  require(o.scheduler == "megatron" || o.scheduler == "cplab",
          "--scheduler '" + o.scheduler + "' is not one of: megatron, cplab");
  require(o.dist.empty() || o.scheduler_opt->count() == 0,
          "--scheduler is for one batch (--lengths): --dist compares both schedulers, megatron and cplab");
  check_dcp_ranks(o.ranks, o.max_per_rank);
  if (!o.dist.empty()) return dist_action(o, cost);
  const std::vector<std::int64_t> L = parse_int_list(o.lengths, "--lengths");
  check_batch(L, o.ranks, o.max_per_rank);
  if (check_only) return 0;  // tests/fuzz: the inputs are checked
  const auto t0 = std::chrono::steady_clock::now();
  const DcpSchedule s = run_scheduler(o.scheduler, L, o.ranks, o.max_per_rank, cost);
  const auto t1 = std::chrono::steady_clock::now();
  const DcpBound lb = lower_bounds(L, o.ranks, o.max_per_rank, cost, s.makespan);
  const auto t2 = std::chrono::steady_clock::now();
  const double sched_s = std::chrono::duration<double>(t1 - t0).count(), bound_s = std::chrono::duration<double>(t2 - t1).count();
  if (o.json) {
    std::cout << nlohmann::json{{"scheduler", o.scheduler}, {"ranks", o.ranks}, {"max_seqlen_per_rank", o.max_per_rank},
                                {"cost", cost.describe()}, {"lengths", L}, {"rounds", schedule_json(s)},
                                {"makespan", s.makespan}, {"lower_bound", lb.moldable}, {"lower_bound_area", lb.area},
                                {"lower_bound_rigid", lb.rigid}, {"ratio", s.makespan / lb.moldable},
                                {"utilization", s.utilization}, {"aligned", s.aligned}, {"unaligned", s.unaligned},
                                {"process_groups", groups_json(s)},
                                {"seconds", {{"scheduler", sched_s}, {"bound", bound_s}}}}
                     .dump(2)
              << "\n";
    return 0;
  }
  std::printf("cplab schedule: %s scheduler, %lld ranks, max %lld tokens per rank, %zu samples\ncost: %s\n\n",
              o.scheduler.c_str(), static_cast<long long>(o.ranks), static_cast<long long>(o.max_per_rank), L.size(),
              cost.describe().c_str());
  print_schedule(s, L);
  std::printf("\nmakespan %.4g (sum over rounds of the latest group end), lower bound %.4g (any power-of-two\n"
              "sizes; area bound alone %.4g; %.4g if every sample keeps its minimum CP size), ratio %.4f,\n"
              "utilization %.3f\nall groups aligned process groups: %s\n",
              s.makespan, lb.moldable, lb.area, lb.rigid, s.makespan / lb.moldable, s.utilization, s.aligned ? "yes" : "NO");
  for (const std::string& u : s.unaligned) std::printf("  %s\n", u.c_str());
  std::printf("time (wall, s): scheduler %.4f, lower bound %.4f\n", sched_s, bound_s);
  return 0;
}

}  // namespace

void setup_schedule(CLI::App& app, int& status) {
  auto o = std::make_shared<ScheduleOptions>();
  CLI::App* sub = app.add_subcommand(
      "schedule", "Dynamic CP: place a batch of sequences on groups of ranks, round by round, with Megatron's\n"
                  "BalancedCPScheduler (v1) or cplab's, and compare with a lower bound. Example:\n"
                  "  cplab schedule --ranks 8 --max-seqlen-per-rank 4096 --lengths 32768,16384,8192,4096,4096,4096,4096,2048 --scheduler megatron");
  sub->add_option("--ranks", o->ranks, "DP x CP ranks (a power of two)")->capture_default_str();
  sub->add_option("--max-seqlen-per-rank", o->max_per_rank, "tokens one rank can hold (Megatron's --max-seqlen-per-dp-cp-rank)")->capture_default_str();
  sub->add_option("--lengths", o->lengths, "the batch: sequence lengths, e.g. 32768,16384,8192");
  o->scheduler_opt =
      sub->add_option("--scheduler", o->scheduler, "megatron (v1, BalancedCPScheduler) | cplab")->capture_default_str();
  sub->add_option("--cost", o->cost, "l2 (Megatron's L^2/cp) | overhead (adds CP communication and setup)")->capture_default_str();
  sub->add_option("--cost-param", o->cost_params, "overhead parameters, e.g. a=0.5,alpha=0.2,beta=0.3,o=1");
  sub->add_option("--dist", o->dist, "schedule random batches from a length distribution (data/dcp/*.json)");
  sub->add_option("--batches", o->batches, "with --dist: how many batches")->capture_default_str();
  sub->add_option("--batch-size", o->batch_size, "with --dist: sequences per batch (0: the file's batch_size)")->capture_default_str();
  sub->add_option("--seed", o->seed, "with --dist: seed of the batches")->capture_default_str();
  sub->add_flag("--json", o->json, "print JSON");
  sub->callback([o, &status] { status = schedule_action(*o); });
}

}  // namespace cplab::app
