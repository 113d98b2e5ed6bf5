// model.cpp: building the run and schedule models from the reference, and reading the trace and
// schedule files they may come from, every field checked (see model.h).
#include "model.h"

#include <algorithm>
#include <filesystem>
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
  const std::string text = read_text_file(path, "trace file", kMaxTraceFileBytes);
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    throw Error(path + ": not JSON: " + e.what());
  }
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
  if (!p.trace_file.empty()) {
    m.trace = read_trace_file(p.trace_file);
  } else {
    m.spec = p.run_spec();          // the CpSpec: every rule of the layer, with its message
    m.trace = plan_trace(*m.spec);  // the harness's rules, then the events
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
