// trace.cpp: summaries, the two JSON forms of a Trace, and the checked reading of the cplab form
// (see trace.h and docs/trace.md).
#include "sim/trace.h"

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>
#include <ostream>

#include "core/checked.h"
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

namespace {

// Reading a trace back: every value checked against the rules of trace.h (kMaxTraceFileBytes),
// with a message naming the field ("events[12].peer") only when a check fails (a big trace has a
// million events; building a message for each field that passes would dominate the reading).

// v as an integer in [lo, hi] (0 <= lo <= hi); json_int throws naming what() and the rule
template <class What>
std::int64_t int_field(const json& v, std::int64_t lo, std::int64_t hi, const What& what) {
  if (v.is_number_unsigned()) {  // how a JSON parser stores 5
    const std::uint64_t x = v.get<std::uint64_t>();
    if (x >= static_cast<std::uint64_t>(lo) && x <= static_cast<std::uint64_t>(hi)) return static_cast<std::int64_t>(x);
  } else if (v.is_number_integer()) {
    const std::int64_t x = v.get<std::int64_t>();
    if (x >= lo && x <= hi) return x;
  }
  return json_int(v, what(), lo, hi);  // refuses v with the rule (v passes only if it is a whole float in range)
}

template <class What>
const std::string& string_field(const json& v, const What& what) {
  if (!v.is_string()) throw Error(what() + " is a JSON " + v.type_name() + ", not a string");
  return v.get_ref<const std::string&>();
}

// x[key], which must be there
template <class What>
const json& member(const json& x, const char* key, const What& what) {
  const auto it = x.find(key);
  if (it == x.end()) throw Error(what() + " has no field '" + key + "'");
  return *it;
}

// the events' totals of pairs, flops and bytes: each <= kMaxTraceTotal, so every per-rank sum fits
void add_total(std::int64_t& total, std::int64_t x, const char* name) {
  if (x > kMaxTraceTotal - total)
    throw Error(std::string("the events' ") + name + " add up to more than 2^62 (a trace's 64-bit sums overflow)");
  total += x;
}

std::vector<Span> spans_read(const json& a, const std::function<std::string()>& what) {
  if (!a.is_array()) throw Error(what() + " is a JSON " + a.type_name() + ", not an array of [begin, count, stride]");
  std::vector<Span> s;
  s.reserve(a.size());
  for (size_t k = 0; k < a.size(); ++k) {
    const json& x = a[k];
    auto at = [&] { return what() + "[" + std::to_string(k) + "]"; };
    if (!x.is_array() || x.size() != 3) throw Error(at() + " is not a span [begin, count, stride]");
    Span sp{int_field(x[0], 0, kMaxPackedTokens, [&] { return at() + " begin"; }),
            int_field(x[1], 1, kMaxPackedTokens, [&] { return at() + " count"; }),
            int_field(x[2], 1, kMaxPackedTokens, [&] { return at() + " stride"; })};
    if (sp.count - 1 > (kMaxPackedTokens - sp.begin) / sp.stride)  // its last position past 2^40
      throw Error(at() + " = [" + std::to_string(sp.begin) + ", " + std::to_string(sp.count) + ", " +
                  std::to_string(sp.stride) + "] reaches past position 2^40 (the most tokens cplab takes)");
    s.push_back(sp);
  }
  return s;
}

}  // namespace

Trace Trace::from_json(const json& j) {
  auto top = [] { return std::string("the trace"); };
  try {
    if (!j.is_object()) throw Error("not a cplab trace (a JSON object with format, version, cp, meta, events)");
    require(string_field(member(j, "format", top), [] { return std::string("format"); }) == "cplab-trace",
            "not a cplab trace (format field)");
    require(int_field(member(j, "version", top), 0, kInt64Max, [] { return std::string("version"); }) == 1,
            "unsupported cplab trace version");
    Trace t(static_cast<int>(int_field(member(j, "cp", top), 1, kMaxRanks, [] { return std::string("trace cp"); })));
    const json& meta = member(j, "meta", top);
    if (!meta.is_object())
      throw Error(std::string("meta is a JSON ") + meta.type_name() + ", not an object of strings");
    for (const auto& item : meta.items()) {  // (not a structured binding: clang 14, the browser build's, cannot capture one)
      const std::string key = item.key();
      t.meta_[key] = string_field(item.value(), [&] { return "meta." + key; });
    }
    const json& events = member(j, "events", top);
    if (!events.is_array()) throw Error(std::string("events is a JSON ") + events.type_name() + ", not an array");
    const std::int64_t last_rank = t.cp_ - 1, last_step = t.cp_ + 1;  // a mode takes <= cp + 2 steps a phase
    std::int64_t pairs = 0, flops = 0, bytes = 0;
    t.events_.reserve(events.size());
    for (size_t i = 0; i < events.size(); ++i) {
      const json& x = events[i];
      auto ev = [&] { return "events[" + std::to_string(i) + "]"; };
      if (!x.is_object()) throw Error(ev() + " is a JSON " + x.type_name() + ", not an object");
      auto field = [&](const char* key) -> const json& { return member(x, key, ev); };
      auto name = [&](const char* key) { return [&ev, key] { return ev() + "." + key; }; };
      Event e;
      const std::string& kind = string_field(field("kind"), name("kind"));
      if (kind != "send" && kind != "recv" && kind != "tile")
        throw Error("unknown trace event kind '" + kind + "' (" + ev() + ".kind must be send, recv or tile)");
      e.kind = kind == "send" ? EventKind::send : kind == "recv" ? EventKind::recv : EventKind::tile;
      const std::string& phase = string_field(field("phase"), name("phase"));
      if (phase != "fwd" && phase != "bwd") throw Error(ev() + ".phase '" + phase + "' is not fwd or bwd");
      e.phase = phase == "bwd" ? Phase::bwd : Phase::fwd;
      e.step = static_cast<int>(int_field(field("step"), 0, last_step, [&] {
        return ev() + ".step (a trace of cp " + std::to_string(t.cp_) + " has steps 0.." + std::to_string(last_step) +
               ")";
      }));
      e.rank = static_cast<int>(
          int_field(field("rank"), 0, last_rank, [&] { return ev() + ".rank (cp " + std::to_string(t.cp_) + ")"; }));
      e.peer = static_cast<int>(
          int_field(field("peer"), 0, last_rank, [&] { return ev() + ".peer (cp " + std::to_string(t.cp_) + ")"; }));
      if (e.kind == EventKind::tile) {
        e.section = string_field(field("section"), name("section"));
        e.mask = string_field(field("mask"), name("mask"));
        e.rows = spans_read(field("rows"), name("rows"));
        e.cols = spans_read(field("cols"), name("cols"));
        e.pairs = int_field(field("pairs"), 0, kMaxTraceTotal, name("pairs"));
        e.flops = int_field(field("flops"), 0, kMaxTraceTotal, name("flops"));
        const json& dur = field("dur_us");
        e.dur_us = dur.is_number() && std::isfinite(dur.get<double>()) && dur.get<double>() >= 0
                       ? dur.get<double>()
                       : json_real(dur, ev() + ".dur_us", 0);  // throws, naming the rule
        add_total(pairs, e.pairs, "pairs");
        add_total(flops, e.flops, "flops");
      } else {
        e.op = string_field(field("op"), name("op"));
        if (e.op != "p2p" && e.op != "all_gather" && e.op != "all_to_all" && e.op != "reduce_scatter")
          throw Error(ev() + ".op '" + e.op + "' is not one of: p2p, all_gather, all_to_all, reduce_scatter");
        e.tensor = string_field(field("tensor"), name("tensor"));
        e.bytes = int_field(field("bytes"), 0, kMaxTraceTotal, name("bytes"));
        add_total(bytes, e.bytes, "bytes");
      }
      t.events_.push_back(std::move(e));
    }
    return t;
  } catch (const json::exception& ex) {  // a safety net: every field above is checked before it is read
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
