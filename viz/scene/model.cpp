// model.cpp: building the run and schedule models from the reference, the run's timeline from
// cplab plan's model or a trace file's times, and reading the trace and schedule files they may
// come from, every field checked (see model.h).
#include "model.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <random>

#include "core/checked.h"
#include "core/error.h"
#include "dcp/dcp_batches.h"
#include "dcp/dcp_cplab.h"
#include "dcp/dcp_megatron.h"
#include "layout/thd.h"
#include "plan/trace_plan.h"

namespace cplab::viz {

namespace {

// a `cplab run --trace` file: its size bounded before it is parsed, its events by Trace::from_json
Trace read_trace_file(const std::string& path) {
  std::error_code ec;
  require(std::filesystem::exists(path, ec), path + ": cannot open the trace file");
  const std::string text = read_text_file(path, "trace file", kMaxVizTraceBytes);
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    throw Error(path + ": not JSON: " + e.what());
  }
  if (j.is_object() && j.contains("events") && j["events"].is_array())
    require(j["events"].size() <= static_cast<size_t>(kMaxVizTraceEvents),
            path + ": " + std::to_string(j["events"].size()) + " events, more than the " +
                std::to_string(kMaxVizTraceEvents) +
                " cplab-viz draws in seconds (cp 256 x 1M tokens, p2p, causal, with the backward: 392704; without "
                "--trace the view is drawn from the run's options)");
  try {
    return Trace::from_json(j);
  } catch (const Error& e) {
    throw Error(path + ": " + e.what());
  }
}

// a `cplab schedule --json` file: its batch, ranks and M, every value a whole number (check_batch
// then applies the batch's rules)
void read_schedule_json(const std::string& path, SchedModel& m) {
  std::error_code ec;
  require(std::filesystem::exists(path, ec), path + ": cannot open the schedule file");
  const std::string text = read_text_file(path, "schedule file", kMaxTraceFileBytes);  // the same order of size
  const std::string what = path + ": not a `cplab schedule --json` file";
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    throw Error(what + " (" + e.what() + ")");
  }
  require(j.is_object(), what + " (a JSON object with lengths, ranks and max_seqlen_per_rank)");
  for (const char* key : {"lengths", "ranks", "max_seqlen_per_rank"})
    require(j.contains(key), what + " (it has no field '" + key + "')");
  m.ranks = json_int(j["ranks"], path + ": ranks", 1, kMaxDcpRanks);
  m.max_per_rank = json_int(j["max_seqlen_per_rank"], path + ": max_seqlen_per_rank", 1, kMaxSeqlenPerRank);
  check_dcp_ranks(m.ranks, m.max_per_rank);
  const nlohmann::json& L = j["lengths"];
  require(L.is_array(), path + ": lengths is a JSON " + std::string(L.type_name()) + ", not an array of lengths");
  check_batch_size(static_cast<std::int64_t>(L.size()), m.ranks, path + ": number of lengths");
  const std::int64_t room = m.ranks * m.max_per_rank;  // <= 2^52 (check_dcp_ranks)
  m.lengths.clear();
  for (size_t i = 0; i < L.size(); ++i) {
    // the fast path (a JSON parser stores 5 as unsigned); anything else, json_int says why not
    const std::uint64_t x = L[i].is_number_unsigned() ? L[i].get<std::uint64_t>() : 0;
    m.lengths.push_back(x >= 1 && x <= static_cast<std::uint64_t>(room)
                            ? static_cast<std::int64_t>(x)
                            : json_int(L[i],
                                       path + ": lengths[" + std::to_string(i) +
                                           "] (ranks x max_seqlen_per_rank = " + std::to_string(room) + ")",
                                       1, room));
  }
  m.source = path;
}

// a planned trace's time axis from the model (model.h, Timing::model): steps one after another,
// each rank's tiles back to back from its step's start, a message for its sender's comm time. Without
// a prediction (why_no_model) every event sits at 0
void model_timeline(RunModel& m) {
  const auto& ev = m.trace.events();
  m.timed.assign(ev.size(), {});
  m.step_span.assign(m.steps.size(), {});
  if (!m.pred) return;
  const PerfPrediction& pr = *m.pred;
  const auto P = static_cast<size_t>(m.trace.cp());
  double t = 0;
  for (size_t k = 0; k < m.steps.size(); ++k) {  // pr.steps are in trace.steps() order, as m.steps
    m.step_span[k] = {t, t + pr.steps[k].time_us};
    t = m.step_span[k].t1;
  }
  std::vector<double> cursor(m.steps.size() * P);  // per (step, rank): where its next tile starts
  for (size_t k = 0; k < m.steps.size(); ++k) std::fill_n(cursor.begin() + static_cast<std::ptrdiff_t>(k * P), P, m.step_span[k].t0);
  for (size_t i = 0; i < ev.size(); ++i) {
    const Event& e = ev[i];
    const auto k = static_cast<size_t>(m.step_of[i]);
    const StepTime& st = pr.steps[k];
    if (e.kind == EventKind::tile) {
      double& c = cursor[k * P + static_cast<size_t>(e.rank)];
      m.timed[i] = {c, c + pr.tile_us[i]};
      c = m.timed[i].t1;
    } else {  // a send lasts its rank's comm of the step; a receive, its sender's
      const int sender = e.kind == EventKind::send ? e.rank : e.peer;
      m.timed[i] = {m.step_span[k].t0, m.step_span[k].t0 + st.rank_comm_us[static_cast<size_t>(sender)]};
    }
  }
}

}  // namespace

CpFields VizParams::default_fields() {
  CpFields f;
  f.mode = Mode::p2p;
  f.layout = Layout::zigzag;
  f.cp = 4;
  f.seq = 32;
  f.heads = 8;
  f.kv_heads = 2;
  f.head_dim = 64;
  f.causal = true;
  return f;
}

RunSpec VizParams::run_spec() const {
  CpFields f = cp;
  if (!f.cu_seqlens.empty()) f.seq = 0;  // --seq is the unpacked length; packed: the spec takes their total
  RunSpec s{CpSpec(std::move(f))};
  s.backward = backward;
  s.dtype = dtype;  // plan_trace checks it (validate_rules: dtype 'half' refused as by cplab run)
  return s;
}

RunModel RunModel::build(const VizParams& p) {
  RunModel m;
  const PerfAssumptions assumed = perf_assumptions(p.perf);  // cplab plan's rules, for every view and a trace file too
  if (p.inference()) {  // an inference step: its own model and views (infer_model.h, views_infer.h)
    m.infer = std::make_shared<const InferModel>(InferModel::build(p));
    m.trace = m.infer->trace;
    m.steps = m.infer->steps;
    for (const Event& e : m.trace.events())
      m.step_of.push_back(static_cast<int>(std::find(m.steps.begin(), m.steps.end(), std::make_pair(e.phase, e.step)) - m.steps.begin()));
    return m;
  }
  if (!p.trace_file.empty()) {
    m.trace = read_trace_file(p.trace_file);
  } else {
    m.spec = p.run_spec();          // the CpSpec: every rule of the layer, with its message
    m.trace = plan_trace(*m.spec);  // the harness's rules, then the events
  }
  m.steps = m.trace.steps();
  const auto& ev = m.trace.events();
  m.step_of.resize(ev.size());
  std::map<std::pair<Phase, int>, int> step_index;
  for (size_t k = 0; k < m.steps.size(); ++k) step_index[m.steps[k]] = static_cast<int>(k);
  for (size_t i = 0; i < ev.size(); ++i) m.step_of[i] = step_index.at({ev[i].phase, ev[i].step});
  if (!m.from_file()) {
    m.timing = Timing::model;
    m.assumptions = assumed;
    try {
      check_whole_nodes(m.trace.cp(), assumed.gpus_per_node, "cp");  // as cplab plan; only the timeline needs it
    } catch (const Error& e) {
      m.why_no_model = e.what();
    }
    if (m.why_no_model.empty()) m.pred = predict(m.trace, *m.spec, assumed);
    model_timeline(m);
  } else {
    const bool timed = std::any_of(ev.begin(), ev.end(), [](const Event& e) { return e.kind == EventKind::tile && e.dur_us > 0; });
    m.timing = !timed ? Timing::flops : m.trace.meta().count("measured_on") ? Timing::measured_gpu : Timing::measured_cpu;
    // no times: a skipped tile or a communication-only step still gets 2% of the longest tile's time
    double longest = 0;
    for (const Event& e : ev) longest = std::max(longest, static_cast<double>(e.flops) / (kFileTflops * 1e6));
    m.timed = timed ? m.trace.timeline([](const Event& e) { return e.dur_us; })
                    : m.trace.timeline([](const Event& e) { return static_cast<double>(e.flops) / (kFileTflops * 1e6); },
                                       std::max(1e-9, 0.02 * longest));
    m.step_span.assign(m.steps.size(), {INFINITY, 0});
    for (size_t i = 0; i < ev.size(); ++i) {
      Trace::Timed& sp = m.step_span[static_cast<size_t>(m.step_of[i])];
      sp.t0 = std::min(sp.t0, m.timed[i].t0), sp.t1 = std::max(sp.t1, m.timed[i].t1);
    }
  }
  m.lanes.assign(2 * static_cast<size_t>(m.trace.cp()), {});
  for (size_t i = 0; i < ev.size(); ++i)
    m.lanes[2 * static_cast<size_t>(ev[i].rank) + (ev[i].kind == EventKind::tile ? 0 : 1)].push_back(i);
  for (auto& lane : m.lanes)
    std::stable_sort(lane.begin(), lane.end(), [&](size_t a, size_t b) { return m.timed[a].t0 < m.timed[b].t0; });
  if (!m.from_file()) {
    // THD input: its sequences are laid out one by one, so only the run's layout is drawn
    const CpSpec& c = m.cp();
    const std::vector<Layout> all = c.thd() ? std::vector<Layout>{c.layout()}
                                            : std::vector<Layout>{Layout::contiguous, Layout::zigzag, Layout::striped};
    for (Layout l : all) {
      RunModel::LayoutSpans ls{l, {}, {}};
      try {
        const Partition part = l == c.layout() ? c.partition() : Partition(l, c.S(), c.P());
        for (index_t r = 0; r < c.P(); ++r) ls.spans.push_back(part.spans(r));
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
    read_schedule_json(p.schedule_json, m);
  } else if (!p.dist.empty()) {
    require(p.batch_size >= 0,
            "batch size " + std::to_string(p.batch_size) + " must be >= 0 (0: the distribution's own)");
    check_dcp_ranks(m.ranks, m.max_per_rank);  // before the batch is drawn: its size is checked against the ranks
    if (p.batch_size > 0) check_batch_size(p.batch_size, m.ranks, "batch size");
    const LengthDist d = read_length_dist(p.dist);
    if (p.batch_size == 0) check_batch_size(d.batch_size, m.ranks, p.dist + ": batch_size");
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
