// model.cpp: building the run and schedule models from the reference (see model.h).
#include "model.h"

#include <algorithm>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>

#include "dcp_batches.h"
#include "dcp_cplab.h"
#include "dcp_megatron.h"
#include "error.h"
#include "thd.h"
#include "trace_plan.h"

namespace cplab::viz {

RunSpec VizParams::default_run() {
  RunSpec s;
  s.mode = "p2p";
  s.layout = Layout::zigzag;
  s.cp = 4;
  s.seq = 32;
  s.heads = 8;
  s.kv_heads = 2;
  s.head_dim = 64;
  s.causal = true;
  s.backward = true;
  s.dtype = "float";
  return s;
}

RunModel RunModel::build(const VizParams& p) {
  RunModel m;
  if (!p.trace_file.empty()) {
    std::ifstream f(p.trace_file);
    require(static_cast<bool>(f), p.trace_file + ": cannot open the trace file");
    nlohmann::json j;
    try {
      f >> j;
    } catch (const nlohmann::json::exception& e) {
      throw Error(p.trace_file + ": not JSON: " + e.what());
    }
    m.trace = Trace::from_json(j);
    m.from_file = true;
    m.spec = p.run;
    m.spec.cp = m.trace.cp();
  } else {
    m.spec = p.run;
    if (m.spec.packed()) {  // the packed total (after padding) is the sequence length
      check_cu_seqlens(m.spec.cu_seqlens);
      m.spec.seq = m.spec.packing().total();
    }
    m.trace = plan_trace(m.spec);  // validates the spec (every rule, with its message)
    m.packing = m.spec.packing();
    m.part = m.spec.packed() ? Partition(m.spec.layout, m.packing.cu_seqlens_padded, m.spec.cp)
                             : Partition(m.spec.layout, m.spec.seq, m.spec.cp);
  }
  m.steps = m.trace.steps();
  const auto& ev = m.trace.events();
  m.modelled_time = std::none_of(ev.begin(), ev.end(), [](const Event& e) { return e.kind == EventKind::tile && e.dur_us > 0; });
  // modelled: a skipped tile or a communication-only step still gets 2% of the longest tile's time
  double longest = 0;
  for (const Event& e : ev) longest = std::max(longest, static_cast<double>(e.flops) / (kModelTflops * 1e6));
  m.timed = m.modelled_time ? m.trace.timeline([](const Event& e) { return static_cast<double>(e.flops) / (kModelTflops * 1e6); },
                                               std::max(1e-9, 0.02 * longest))
                            : m.trace.timeline([](const Event& e) { return e.dur_us; });
  m.lanes.assign(2 * static_cast<size_t>(m.trace.cp()), {});
  m.step_of.resize(ev.size());
  for (size_t i = 0; i < ev.size(); ++i) {
    m.lanes[2 * static_cast<size_t>(ev[i].rank) + (ev[i].kind == EventKind::tile ? 0 : 1)].push_back(i);
    const size_t k = m.steps.size() - 1 - static_cast<size_t>(std::find(m.steps.rbegin(), m.steps.rend(), std::make_pair(ev[i].phase, ev[i].step)) - m.steps.rbegin());
    m.step_of[i] = static_cast<int>(k);
  }
  for (auto& lane : m.lanes)
    std::stable_sort(lane.begin(), lane.end(), [&](size_t a, size_t b) { return m.timed[a].t0 < m.timed[b].t0; });
  if (!m.from_file) {
    const std::vector<Layout> all = m.spec.packed() ? std::vector<Layout>{m.spec.layout}
                                                    : std::vector<Layout>{Layout::contiguous, Layout::zigzag, Layout::striped};
    for (Layout l : all) {
      RunModel::LayoutSpans ls{l, {}, {}};
      try {
        const Partition part = l == m.spec.layout ? m.part : Partition(l, m.spec.seq, m.spec.cp);
        for (index_t r = 0; r < m.spec.cp; ++r) ls.spans.push_back(part.spans(r));
      } catch (const Error& e) {
        ls.why_not = e.what();
      }
      m.layouts.push_back(std::move(ls));
    }
  }
  return m;
}

SchedModel SchedModel::build(const VizParams& p) {
  SchedModel m;
  m.ranks = p.ranks;
  m.max_per_rank = p.max_per_rank;
  m.cost = parse_cost(p.cost, p.cost_params);
  if (!p.schedule_json.empty()) {
    std::ifstream f(p.schedule_json);
    require(static_cast<bool>(f), p.schedule_json + ": cannot open the schedule file");
    try {
      nlohmann::json j;
      f >> j;
      m.lengths = j.at("lengths").get<std::vector<std::int64_t>>();
      m.ranks = j.at("ranks").get<std::int64_t>();
      m.max_per_rank = j.at("max_seqlen_per_rank").get<std::int64_t>();
    } catch (const nlohmann::json::exception& e) {
      throw Error(p.schedule_json + ": not a `cplab schedule --json` file (" + e.what() + ")");
    }
    m.source = p.schedule_json;
  } else if (!p.dist.empty()) {
    const LengthDist d = read_length_dist(p.dist);
    require(p.batch_size >= 0, "batch size must be >= 0 (0: the distribution's own)");
    std::mt19937_64 rng(p.seed);  // the first batch `cplab schedule --dist ... --seed S` draws
    m.lengths = sample_batch(d, p.batch_size > 0 ? p.batch_size : d.batch_size, rng);
    m.source = d.name + " (seed " + std::to_string(p.seed) + ")";
  } else {
    for (index_t L : parse_int_list(p.lengths, "lengths")) m.lengths.push_back(L);
    m.source = "lengths " + p.lengths;
  }
  check_batch(m.lengths, m.ranks, m.max_per_rank);
  m.megatron = schedule_megatron_v1(m.lengths, m.ranks, m.max_per_rank, m.cost);
  DcpBound base;
  m.cplab = schedule_cplab(m.lengths, m.ranks, m.max_per_rank, m.cost, &base);
  m.bound = sharpen_bound(m.lengths, m.ranks, m.max_per_rank, m.cost, base, m.cplab.makespan);  // as `cplab schedule`
  return m;
}

}  // namespace cplab::viz
