// trace.cpp: summaries and the two JSON forms of a Trace (see trace.h and docs/trace.md).
#include "sim/trace.h"

#include <algorithm>
#include <nlohmann/json.hpp>
#include <ostream>

#include "core/error.h"
#include "core/output_file.h"

namespace cplab {

using nlohmann::json;

std::string to_string(Phase p) { return p == Phase::fwd ? "fwd" : "bwd"; }
std::string to_string(EventKind k) {
  switch (k) {
    case EventKind::send: return "send";
    case EventKind::recv: return "recv";
    case EventKind::tile: return "tile";
  }
  return "?";
}

namespace {

bool keep(const Event& e, const Phase* phase) { return phase == nullptr || e.phase == *phase; }

json spans_json(const std::vector<Span>& s) {
  json a = json::array();
  for (const Span& x : s) a.push_back({x.begin, x.count, x.stride});
  return a;
}
std::vector<Span> spans_from(const json& a) {
  std::vector<Span> s;
  for (const json& x : a) s.push_back(Span{x.at(0).get<index_t>(), x.at(1).get<index_t>(), x.at(2).get<index_t>()});
  return s;
}

}  // namespace

Event message_event(EventKind kind, Phase phase, int step, int rank, int peer, const std::string& tensor,
                    const std::string& op, std::int64_t bytes) {
  Event e;
  e.kind = kind;
  e.phase = phase;
  e.step = step;
  e.rank = rank;
  e.peer = peer;
  e.op = op;
  e.tensor = tensor;
  e.bytes = bytes;
  return e;
}

std::vector<std::int64_t> Trace::bytes_sent_per_rank(const Phase* phase) const {
  std::vector<std::int64_t> v(static_cast<size_t>(cp_), 0);
  for (const Event& e : events_)
    if (e.kind == EventKind::send && keep(e, phase)) v[static_cast<size_t>(e.rank)] += e.bytes;
  return v;
}

std::vector<std::int64_t> Trace::bytes_recv_per_rank(const Phase* phase) const {
  std::vector<std::int64_t> v(static_cast<size_t>(cp_), 0);
  for (const Event& e : events_)
    if (e.kind == EventKind::recv && keep(e, phase)) v[static_cast<size_t>(e.rank)] += e.bytes;
  return v;
}

std::vector<std::int64_t> Trace::messages_sent_per_rank(const Phase* phase) const {
  std::vector<std::int64_t> v(static_cast<size_t>(cp_), 0);
  for (const Event& e : events_)
    if (e.kind == EventKind::send && keep(e, phase)) v[static_cast<size_t>(e.rank)] += 1;
  return v;
}

std::vector<std::int64_t> Trace::flops_per_rank(const Phase* phase) const {
  std::vector<std::int64_t> v(static_cast<size_t>(cp_), 0);
  for (const Event& e : events_)
    if (e.kind == EventKind::tile && keep(e, phase)) v[static_cast<size_t>(e.rank)] += e.flops;
  return v;
}

json Trace::to_json() const {
  json events = json::array();
  for (const Event& e : events_) {
    json j = {{"kind", to_string(e.kind)}, {"phase", to_string(e.phase)}, {"step", e.step}, {"rank", e.rank}};
    if (e.kind == EventKind::tile) {
      j["section"] = e.section;
      j["mask"] = e.mask;
      j["rows"] = spans_json(e.rows);
      j["cols"] = spans_json(e.cols);
      j["peer"] = e.peer;
      j["pairs"] = e.pairs;
      j["flops"] = e.flops;
      j["dur_us"] = e.dur_us;
    } else {
      j["peer"] = e.peer;
      j["op"] = e.op;
      j["tensor"] = e.tensor;
      j["bytes"] = e.bytes;
    }
    events.push_back(std::move(j));
  }
  return json{{"format", "cplab-trace"}, {"version", 1}, {"cp", cp_}, {"meta", meta_}, {"events", events}};
}

Trace Trace::from_json(const json& j) {
  try {
    require(j.at("format").get<std::string>() == "cplab-trace", "not a cplab trace (format field)");
    require(j.at("version").get<int>() == 1, "unsupported cplab trace version");
    Trace t(j.at("cp").get<int>());
    require(t.cp_ >= 1, "trace cp must be >= 1");
    t.meta_ = j.at("meta").get<std::map<std::string, std::string>>();
    for (const json& x : j.at("events")) {
      Event e;
      const std::string kind = x.at("kind").get<std::string>();
      e.kind = kind == "send" ? EventKind::send : kind == "recv" ? EventKind::recv : EventKind::tile;
      require(kind == "send" || kind == "recv" || kind == "tile", "unknown trace event kind '" + kind + "'");
      e.phase = x.at("phase").get<std::string>() == "bwd" ? Phase::bwd : Phase::fwd;
      e.step = x.at("step").get<int>();
      e.rank = x.at("rank").get<int>();
      require(e.rank >= 0 && e.rank < t.cp_, "trace event rank out of range");
      if (e.kind == EventKind::tile) {
        e.section = x.at("section").get<std::string>();
        e.mask = x.at("mask").get<std::string>();
        e.rows = spans_from(x.at("rows"));
        e.cols = spans_from(x.at("cols"));
        e.peer = x.at("peer").get<int>();
        e.pairs = x.at("pairs").get<std::int64_t>();
        e.flops = x.at("flops").get<std::int64_t>();
        e.dur_us = x.at("dur_us").get<double>();
      } else {
        e.peer = x.at("peer").get<int>();
        e.op = x.at("op").get<std::string>();
        e.tensor = x.at("tensor").get<std::string>();
        e.bytes = x.at("bytes").get<std::int64_t>();
      }
      t.events_.push_back(std::move(e));
    }
    return t;
  } catch (const json::exception& ex) {
    throw Error(std::string("malformed cplab trace: ") + ex.what());
  }
}

std::vector<std::pair<Phase, int>> Trace::steps() const {
  std::vector<std::pair<Phase, int>> out;
  for (const Event& e : events_)
    if (out.empty() || out.back() != std::make_pair(e.phase, e.step))  // (the common case: same step as before)
      if (std::find(out.begin(), out.end(), std::make_pair(e.phase, e.step)) == out.end())
        out.emplace_back(e.phase, e.step);
  return out;
}

const Event* Trace::find(EventKind kind, Phase phase, int step, int rank) const {
  for (const Event& e : events_)
    if (e.kind == kind && e.phase == phase && e.step == step && e.rank == rank) return &e;
  return nullptr;
}

std::vector<Trace::Timed> Trace::timeline(const std::function<double(const Event&)>& tile_us, double min_us) const {
  std::vector<Timed> out(events_.size());
  // events of each step, in trace order
  const auto st = steps();
  std::vector<std::vector<size_t>> of_step(st.size());
  for (size_t i = 0; i < events_.size(); ++i) {
    const auto key = std::make_pair(events_[i].phase, events_[i].step);
    of_step[static_cast<size_t>(std::find(st.begin(), st.end(), key) - st.begin())].push_back(i);
  }
  double t0 = 0;
  std::vector<double> cursor(static_cast<size_t>(cp_));
  for (const std::vector<size_t>& ev : of_step) {
    std::fill(cursor.begin(), cursor.end(), t0);
    for (size_t i : ev) {
      if (events_[i].kind != EventKind::tile) continue;
      double& c = cursor[static_cast<size_t>(events_[i].rank)];
      out[i] = {c, c + std::max(tile_us(events_[i]), min_us)};
      c = out[i].t1;
    }
    const double t1 = std::max(t0 + min_us, *std::max_element(cursor.begin(), cursor.end()));
    for (size_t i : ev)
      if (events_[i].kind != EventKind::tile) out[i] = {t0, t1};
    t0 = t1;
  }
  return out;
}

// Chrome trace-event form, on the time axis of timeline() with the measured tile durations.
json Trace::to_chrome_json() const {
  json ev = json::array();
  for (int r = 0; r < cp_; ++r) {
    ev.push_back({{"ph", "M"}, {"name", "thread_name"}, {"pid", 0}, {"tid", 2 * r},
                  {"args", {{"name", "rank " + std::to_string(r) + " compute"}}}});
    ev.push_back({{"ph", "M"}, {"name", "thread_name"}, {"pid", 0}, {"tid", 2 * r + 1},
                  {"args", {{"name", "rank " + std::to_string(r) + " comm"}}}});
  }
  const std::vector<Timed> when = timeline([](const Event& e) { return e.dur_us; });
  for (const auto& [phase, step] : steps()) {
    for (size_t i = 0; i < events_.size(); ++i) {
      const Event& e = events_[i];
      if (e.phase != phase || e.step != step || e.kind != EventKind::tile) continue;
      ev.push_back({{"ph", "X"}, {"pid", 0}, {"tid", 2 * e.rank}, {"ts", when[i].t0}, {"dur", when[i].t1 - when[i].t0},
                    {"name", to_string(phase) + " " + e.section}, {"cat", "tile"},
                    {"args", {{"step", step}, {"kv_of_rank", e.peer}, {"mask", e.mask}, {"pairs", e.pairs},
                              {"flops", e.flops}, {"rows", spans_json(e.rows)}, {"cols", spans_json(e.cols)}}}});
    }
    for (size_t i = 0; i < events_.size(); ++i) {
      const Event& e = events_[i];
      if (e.phase != phase || e.step != step || e.kind == EventKind::tile) continue;
      const std::string dir = e.kind == EventKind::send ? " -> r" : " <- r";
      ev.push_back({{"ph", "X"}, {"pid", 0}, {"tid", 2 * e.rank + 1}, {"ts", when[i].t0}, {"dur", when[i].t1 - when[i].t0},
                    {"name", to_string(e.kind) + " " + e.tensor + dir + std::to_string(e.peer)},
                    {"cat", e.op}, {"args", {{"step", step}, {"bytes", e.bytes}, {"op", e.op}}}});
    }
  }
  return json{{"traceEvents", ev}, {"displayTimeUnit", "ms"}, {"otherData", meta_}};
}

void Trace::write(std::ostream& out, bool chrome) const { out << (chrome ? to_chrome_json() : to_json()).dump(1) << "\n"; }

void Trace::write(const std::string& path, bool chrome) const {
  write_file_whole(path, "", [&](std::ostream& out) { write(out, chrome); });
}

}  // namespace cplab
