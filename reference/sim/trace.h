// trace.h: what the simulated ranks did, event by event.
//
// What it is: Trace, a list of Events recorded by the simulated communicator (every message: send
// and recv, with peer, tensor name, bytes, collective op) and by the CP algorithms (every attention
// tile: global query rows and key columns as spans, mask, section, visible pairs, FLOPs, measured
// duration). Summaries per rank (bytes sent, messages sent, FLOPs) are computed FROM the events,
// so printed figures and trace files cannot disagree. Two file forms:
//   to_json()         cplab's own documented form (docs/trace.md), read by cplab-viz and tutorials
//   to_chrome_json()  Chrome trace-event JSON for Perfetto / chrome://tracing
// What it is not: a profiler. Durations are CPU times of the reference's Eigen tiles; ranks are
// laid out as if they ran concurrently with a barrier at the end of every step.
#pragma once

#include <cstdint>
#include <functional>
#include <iosfwd>
#include <map>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <utility>
#include <vector>

#include "layout/layout.h"

namespace cplab {

// The rules Trace::from_json reads a trace by (docs/trace.md), each refused with a cplab::Error
// naming the field ("events[12].peer = 9 is out of range: ..."): cp in [1, kMaxRanks]; every
// event's kind (send, recv, tile), phase (fwd, bwd) and, for messages, op (p2p, all_gather,
// all_to_all, reduce_scatter) from the documented sets; rank and peer in [0, cp); step in
// [0, cp + 1] (a mode takes at most cp + 2 steps per phase: mode_table.h); spans [begin, count,
// stride] with begin >= 0, count and stride >= 1 and every position <= 2^40 (kMaxPackedTokens);
// pairs, flops and bytes >= 0 with each one's total over the events <= kMaxTraceTotal (so every
// per-rank sum fits 64 bits); dur_us finite and >= 0; meta an object of strings. A trace file is
// read whole, at most kMaxTraceFileBytes (`cplab run --plan-only --cp 256 --seq 1048576 --causal
// --backward --trace` writes 88 MB; the reader holds the parsed file in memory, several times that).
inline constexpr std::int64_t kMaxTraceTotal = std::int64_t{1} << 62;
inline constexpr std::int64_t kMaxTraceFileBytes = std::int64_t{256} << 20;

enum class Phase { fwd, bwd };
enum class EventKind { send, recv, tile };
std::string to_string(Phase p);
std::string to_string(EventKind k);

struct Event {
  EventKind kind = EventKind::tile;
  Phase phase = Phase::fwd;
  int step = 0;
  int rank = 0;
  int peer = -1;            // messages: the other rank; tiles: the rank whose KV block is used
  std::string op;           // messages: "p2p" | "all_to_all" | "all_gather" | "reduce_scatter"
  std::string tensor;       // messages: payload name ("kv", "kv+dkv", "dkv", ...)
  std::int64_t bytes = 0;   // messages only
  // tiles only
  std::string section;      // "diagonal" | "lower" | "upper" | "all" | "full" | "causal" | "skipped" ...
  std::string mask;         // to_string(Mask), or "skipped"
  std::vector<Span> rows;   // global query positions
  std::vector<Span> cols;   // global key positions
  std::int64_t pairs = 0;   // visible (query, key) pairs (mask.h)
  std::int64_t flops = 0;   // flops.h, forward or backward by phase
  double dur_us = 0;        // measured CPU time of the tile
};

// the record of one message (send or recv), as SimComm and the planner (trace_plan.h) write it
Event message_event(EventKind kind, Phase phase, int step, int rank, int peer, const std::string& tensor,
                    const std::string& op, std::int64_t bytes);

class Trace {
 public:
  explicit Trace(int cp = 1) : cp_(cp) {}
  void add(Event e) { events_.push_back(std::move(e)); }
  const std::vector<Event>& events() const { return events_; }
  int cp() const { return cp_; }
  // free-form description of the run (mode, layout, shapes, ...) written into the JSON form
  std::map<std::string, std::string>& meta() { return meta_; }
  const std::map<std::string, std::string>& meta() const { return meta_; }

  // summaries over the events (phase filter: none = both)
  std::vector<std::int64_t> bytes_sent_per_rank(const Phase* phase = nullptr) const;
  std::vector<std::int64_t> bytes_recv_per_rank(const Phase* phase = nullptr) const;
  std::vector<std::int64_t> messages_sent_per_rank(const Phase* phase = nullptr) const;
  std::vector<std::int64_t> flops_per_rank(const Phase* phase = nullptr) const;

  // the first event of this kind at (phase, step) on `rank`, or nullptr
  const Event* find(EventKind kind, Phase phase, int step, int rank) const;
  // (phase, step) pairs in the order the events first show them
  std::vector<std::pair<Phase, int>> steps() const;
  // The time axis of to_chrome_json and cplab-viz's timeline, per event [t0, t1) in microseconds:
  // steps follow each other; inside a step each rank's tiles run back to back for tile_us(e)
  // (at least min_us); the step ends when the slowest rank is done (the reference is lockstep; a step
  // lasts at least min_us); a message lasts its whole step on both ranks' comm lanes (posted at the
  // step's start, consumed at its end).
  struct Timed {
    double t0 = 0, t1 = 0;
  };
  std::vector<Timed> timeline(const std::function<double(const Event&)>& tile_us, double min_us = 1.0) const;

  nlohmann::json to_json() const;
  nlohmann::json to_chrome_json() const;
  static Trace from_json(const nlohmann::json& j);  // throws cplab::Error naming the rule (above) it breaks
  // the JSON form (chrome: to_chrome_json) to a stream, or to a file written whole or not at all
  // (core/output_file.h; throws cplab::Error naming the path if it cannot be written)
  void write(std::ostream& out, bool chrome) const;
  void write(const std::string& path, bool chrome) const;

 private:
  int cp_;
  std::map<std::string, std::string> meta_;
  std::vector<Event> events_;
};

}  // namespace cplab
