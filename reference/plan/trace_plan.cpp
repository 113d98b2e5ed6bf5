// trace_plan.cpp: the planned trace of every mode (see trace_plan.h).
//
// Each plan_* function below walks the same loop as its mode's execution (named next to it) and
// records, through Recorder, what SimComm and cp_tile_event would record there; sizes come from
// the spec instead of tensors. The step tables themselves are the modes' (ring_schedule.h, ...).
#include "plan/trace_plan.h"

#include <array>
#include <cstdio>
#include <map>
#include <optional>
#include <utility>

#include "modes/allgather_kv.h"
#include "modes/cp_common.h"
#include "core/error.h"
#include "core/flops.h"
#include "core/util.h"
#include "modes/hierarchical_cp.h"
#include "modes/ring_p2p.h"
#include "modes/ring_schedule.h"
#include "modes/ulysses_a2a.h"

namespace cplab {

namespace {

// What SimComm (sim/comm.h) records, in its order, without payloads: a message is its byte count.
class Recorder {
 public:
  explicit Recorder(Trace& t) : t_(t) {}
  void set_step(Phase phase, int step) { phase_ = phase, step_ = step; }
  void send(int src, int dst, const std::string& tensor, std::int64_t bytes, const std::string& op = "p2p") {
    message(EventKind::send, src, dst, tensor, bytes, op);
  }
  void recv(int dst, int src, const std::string& tensor, std::int64_t bytes, const std::string& op = "p2p") {
    message(EventKind::recv, dst, src, tensor, bytes, op);
  }
  // SimComm::all_to_all / all_gather / reduce_scatter over `members` when every block is `bytes`:
  // every position sends to every other one, then every position receives from every other one
  void collective(const std::string& tensor, const std::vector<int>& members, std::int64_t bytes, const std::string& op) {
    const size_t G = members.size();
    for (size_t i = 0; i < G; ++i)
      for (size_t j = 0; j < G; ++j)
        if (j != i) send(members[i], members[j], tensor, bytes, op);
    for (size_t j = 0; j < G; ++j)
      for (size_t i = 0; i < G; ++i)
        if (i != j) recv(members[j], members[i], tensor, bytes, op);
  }
  void tile(Event e) { t_.add(std::move(e)); }

 private:
  void message(EventKind kind, int rank, int peer, const std::string& tensor, std::int64_t bytes, const std::string& op) {
    t_.add(message_event(kind, phase_, step_, rank, peer, tensor, op, bytes));
  }
  Trace& t_;
  Phase phase_ = Phase::fwd;
  int step_ = 0;
};

std::vector<int> iota_ranks(index_t P) {
  std::vector<int> m;
  for (index_t r = 0; r < P; ++r) m.push_back(static_cast<int>(r));
  return m;
}

// Rank positions and spans of a partition, each computed once (tiles reuse them over and over).
class Positions {
 public:
  explicit Positions(const Partition& part) : part_(part), all_(static_cast<size_t>(part.cp())) {}
  const Partition& part() const { return part_; }
  const std::vector<index_t>& all(index_t r) {
    std::vector<index_t>& v = all_[static_cast<size_t>(r)];
    if (v.empty()) v = part_.indices(r);
    return v;
  }
  const std::vector<Span>& spans(index_t r, index_t l0, index_t count) {
    auto [it, fresh] = spans_.try_emplace({r, l0, count});
    if (fresh) it->second = part_.spans(r, l0, count);
    return it->second;
  }

 private:
  Partition part_;
  std::vector<std::vector<index_t>> all_;
  std::map<std::array<index_t, 3>, std::vector<Span>> spans_;
};

struct Heads {
  index_t h, hk, d, dv, elem;  // per rank of the mode's attention; elem = bytes of the dtype
  std::int64_t kv_bytes(index_t n) const { return n * hk * (d + dv) * elem; }
};

// A ring's tiles by (r, j), each computed once: the forward and the backward (and every ring of
// hierarchical CP, which share the outer layout) compute the same ones. ring_p2p.cpp plan_tile.
class RingTiles {
 public:
  RingTiles(const Partition& part, const PositionRule& rule, const Packing* packing)
      : pos_(part), rule_(rule), packing_(packing), P_(part.cp()),
        tiles_(static_cast<size_t>(P_ * P_)) {}
  const std::pair<std::string, TileShape>& at(index_t r, index_t j) {
    auto& slot = tiles_[static_cast<size_t>(r * P_ + j)];
    if (slot) return *slot;
    RingTile t = ring_tile(pos_.part().layout(), rule_.causal, P_, r, j, pos_.part().local_len());
    if (packing_ != nullptr || (!rule_.plain() && !t.skipped))  // ring_plan_tile's composition, positions cached
      t = ring_rule_tile(t, packing_, rule_, pos_.part().seq(), pos_.all(r), pos_.all(j));
    slot.emplace(t.section, tile_shape(t.mask, t.skipped, pos_.spans(r, t.q0, t.nq), t.nq, pos_.spans(j, t.k0, t.nk), t.nk));
    return *slot;
  }

 private:
  Positions pos_;
  PositionRule rule_;
  const Packing* packing_;
  index_t P_;
  std::vector<std::optional<std::pair<std::string, TileShape>>> tiles_;
};

// ring_p2p.cpp ring_forward / ring_backward: per step (hops + 1 of them), the posts, every
// position's tile, the receives
void plan_ring(Recorder& rec, Phase ph, RingTiles& tiles, index_t P, index_t hops, index_t n, const Heads& hd,
               const RingGroup& g) {
  const std::int64_t part_bytes = hd.kv_bytes(n);
  const index_t steps = hops + 1;
  for (index_t i = 0; i < steps; ++i) {
    rec.set_step(ph, g.step0 + static_cast<int>(i));
    const RingPost post = ph == Phase::fwd ? ring_fwd_post(steps, i) : ring_bwd_post(steps, i);
    auto at = [&](index_t r) { return g.global(static_cast<int>(r)); };
    if (post.posts)
      for (index_t r = 0; r < P; ++r)
        rec.send(at(r), at(ph == Phase::fwd ? ring_fwd_dst(P, r) : ring_bwd_dst(P, r)), post.tensor, post.parts() * part_bytes);
    for (index_t r = 0; r < P; ++r) {
      const index_t j = ph == Phase::fwd ? ring_fwd_kv_block(P, r, i) : ring_bwd_kv_block(P, r, i, steps);
      const auto& [section, shape] = tiles.at(r, j);
      rec.tile(cp_tile_event(ph, g.step0 + static_cast<int>(i), at(r), at(j), section, shape, hd.h, hd.d, hd.dv, 0));
    }
    if (post.posts)
      for (index_t r = 0; r < P; ++r)
        rec.recv(at(r), at(ph == Phase::fwd ? ring_fwd_src(P, r) : ring_bwd_src(P, r)), post.tensor, post.parts() * part_bytes);
  }
}

// cp_attention.cpp "p2p": one ring over all ranks
void plan_p2p(Recorder& rec, const RunSpec& s, const CpSpec& cfg, const Heads& hd) {
  RingTiles tiles(cfg.partition(), cfg.rule(), cfg.packed() ? &cfg.packing() : nullptr);
  plan_ring(rec, Phase::fwd, tiles, cfg.P(), cfg.ring_hops(), cfg.n(), hd, {});
  if (s.backward) plan_ring(rec, Phase::bwd, tiles, cfg.P(), cfg.ring_hops(), cfg.n(), hd, {});
}

// allgather_kv.cpp: gather (step 0), the tiles of every rank (1), backward: reduce-scatter (2)
void plan_allgather(Recorder& rec, const RunSpec& s, const CpSpec& cfg, const Heads& hd) {
  const std::vector<int> all = iota_ranks(cfg.P());
  const std::int64_t kv = hd.kv_bytes(cfg.n());
  std::vector<std::vector<std::pair<std::string, TileShape>>> tiles(static_cast<size_t>(cfg.P()));
  for (index_t r = 0; r < cfg.P(); ++r)
    for (const AgTile& t : allgather_tiles(cfg.partition(), cfg.packing(), cfg.packed(), cfg.rule(), r))
      tiles[static_cast<size_t>(r)].emplace_back(t.section, allgather_tile_shape(cfg.partition(), r, t));
  for (const Phase ph : {Phase::fwd, Phase::bwd}) {
    if (ph == Phase::bwd && !s.backward) break;
    rec.set_step(ph, 0);
    rec.collective("kv", all, kv, "all_gather");
    rec.set_step(ph, 1);
    for (index_t r = 0; r < cfg.P(); ++r)
      for (const auto& [section, shape] : tiles[static_cast<size_t>(r)])
        rec.tile(cp_tile_event(ph, 1, static_cast<int>(r), static_cast<int>(r), section, shape, hd.h, hd.d, hd.dv, 0));
    if (ph == Phase::bwd) {
      rec.set_step(ph, 2);
      rec.collective("dkv", all, kv, "reduce_scatter");
    }
  }
}

// ulysses_a2a.cpp: every member sends every other its n tokens of the receiver's head group
// (a2a_before / a2a_after, sizes as ulysses_a2a.h states them)
void a2a(Recorder& rec, const std::string& name, const std::vector<int>& members, index_t n, index_t heads, index_t dim,
         index_t elem) {
  const index_t G = static_cast<index_t>(members.size());
  rec.collective(name, members, n * (heads / G) * dim * elem, "all_to_all");
}

// ulysses_a2a.cpp ulysses_forward / ulysses_backward
void plan_ulysses(Recorder& rec, const RunSpec& s, const CpSpec& cfg, const Heads& hd) {
  const std::vector<int> all = iota_ranks(cfg.P());
  const index_t n = cfg.n(), S = cfg.S(), P = cfg.P(), hg = hd.h / P, e = hd.elem;
  const TileShape shape = ulysses_tile_shape(ulysses_mask(cfg.packing(), cfg.packed(), cfg.rule(), S), S);
  auto tiles = [&](Phase ph) {
    rec.set_step(ph, 1);
    for (index_t g = 0; g < P; ++g)
      rec.tile(cp_tile_event(ph, 1, static_cast<int>(g), static_cast<int>(g), ulysses_section(g, hg), shape, hg, hd.d, hd.dv, 0));
    rec.set_step(ph, 2);
  };
  rec.set_step(Phase::fwd, 0);
  a2a(rec, "q", all, n, hd.h, hd.d, e);
  a2a(rec, "k", all, n, hd.hk, hd.d, e);
  a2a(rec, "v", all, n, hd.hk, hd.dv, e);
  tiles(Phase::fwd);
  a2a(rec, "o", all, n, hd.h, hd.dv, e);
  if (!s.backward) return;
  rec.set_step(Phase::bwd, 0);
  a2a(rec, "do", all, n, hd.h, hd.dv, e);
  tiles(Phase::bwd);
  a2a(rec, "dq", all, n, hd.h, hd.d, e);
  a2a(rec, "dk", all, n, hd.hk, hd.d, e);
  a2a(rec, "dv", all, n, hd.hk, hd.dv, e);
}

// hierarchical_cp.cpp hcp_forward / hcp_backward: inner all-to-alls, icp rings, all-to-alls back
void plan_hcp(Recorder& rec, const RunSpec& s, const CpSpec& cfg, const Heads& hd) {
  const index_t I = cfg.icp(), O = cfg.ocp(), n = cfg.n(), e = hd.elem;
  const Partition outer = hcp_outer_partition(cfg.partition(), O);
  RingTiles tiles(outer, cfg.rule(), nullptr);
  const Heads ring{hd.h / I, hd.hk / I, hd.d, hd.dv, e};
  auto group = [&](index_t p) { return hcp_inner_members(I, p); };
  auto inner = [&](const std::string& name, index_t heads, index_t dim) {
    for (index_t p = 0; p < O; ++p) a2a(rec, name, group(p), n, heads, dim, e);
  };
  auto rings = [&](Phase ph) {
    for (index_t a = 0; a < I; ++a)
      plan_ring(rec, ph, tiles, O, cfg.ring_hops(), outer.local_len(), ring, RingGroup{hcp_ring_members(I, O, a), 1});
    rec.set_step(ph, static_cast<int>(cfg.ring_hops()) + 2);
  };
  rec.set_step(Phase::fwd, 0);
  inner("q", hd.h, hd.d);
  inner("k", hd.hk, hd.d);
  inner("v", hd.hk, hd.dv);
  rings(Phase::fwd);
  inner("o", hd.h, hd.dv);
  if (!s.backward) return;
  rec.set_step(Phase::bwd, 0);
  inner("do", hd.h, hd.dv);
  rings(Phase::bwd);
  for (index_t p = 0; p < O; ++p) {
    a2a(rec, "dq", group(p), n, hd.h, hd.d, e);
    a2a(rec, "dk", group(p), n, hd.hk, hd.d, e);
    a2a(rec, "dv", group(p), n, hd.hk, hd.dv, e);
  }
}

// the planner's own rules (trace_plan.h): 64-bit FLOP counts, memory of the trace, work
void check_plan_limits(const RunSpec& run) {
  const CpSpec& s = run.cp;
  const double S = static_cast<double>(s.S()), h = static_cast<double>(s.h());
  const double d = static_cast<double>(s.d()), dv = static_cast<double>(s.dv());
  const double pairs = S * S, flops = fwd_flops(pairs, h, d, dv) + bwd_flops(pairs, h, d, dv);
  require(flops < 4e18, "seq " + num(s.S()) + " x heads " + num(s.h()) + " x head-dims " + num(s.d()) + "+" +
                            num(s.dv()) + " needs about " + approx(flops) +
                            " FLOPs, more than a trace's 64-bit counts hold (4e18)");
  // every tile keeps its rows and cols as spans: about two per packed sequence each (zigzag)
  const double P = static_cast<double>(s.P());
  const double seqs = static_cast<double>(s.packing().num_seqs());
  const double rings = s.mode() == Mode::p2p ? P : (s.mode() == Mode::a2a_p2p ? static_cast<double>(s.ocp()) : 0);
  const double tiles = rings > 0 ? 2 * P * rings : 4 * P;  // a ring's P x steps tiles per phase
  const double gib = (tiles * (300 + 4 * seqs * sizeof(Span)) + 8 * P * P * 150) / (1024.0 * 1024.0 * 1024.0);
  require(gib <= 16, "the planned trace would take about " + approx(gib) + " GiB (" + approx(tiles) + " tiles x " + approx(seqs) +
                         " packed sequences); the limit is 16 GiB");
  const double work = plan_work_estimate(run);
  require(run.allow_long || work <= kMaxPlanWork, "planning needs about " + approx(work) +
                                                    " token operations, more than the 2e10 limit (about a minute); "
                                                    "pass --allow-long to plan it anyway");
}

}  // namespace

double plan_work_estimate(const RunSpec& run) {
  const CpSpec& s = run.cp;
  const double S = static_cast<double>(s.S()), P = static_cast<double>(s.P());
  double w = 4 * S;  // index lists and spans of every rank
  const bool rows = s.packed() || !s.rule().plain();    // tiles with a per-row mask (token_mask)
  if (s.mode() == Mode::p2p && rows) w += P * S;        // a per-row mask for each of the P*P tiles
  if (s.mode() == Mode::a2a_p2p && rows) w += static_cast<double>(s.ocp()) * S;  // the rings' tiles
  if (s.mode() == Mode::a2a && rows) w += 2 * S;        // one mask over the whole sequence
  if (s.mode() == Mode::allgather) w += 4 * P * S;      // each rank's tiles scan the whole sequence
  return w;
}

Trace plan_trace(const RunSpec& s) {
  validate_rules(s);
  check_plan_limits(s);
  const CpSpec& cfg = s.cp;
  Trace t(static_cast<int>(cfg.P()));
  t.meta() = trace_meta(s);
  const Heads hd{cfg.h(), cfg.hk() * cfg.kv_replication(), cfg.d(), cfg.dv(), s.dtype == "float" ? 4 : 8};
  Recorder rec(t);
  switch (cfg.mode()) {
    case Mode::p2p: plan_p2p(rec, s, cfg, hd); break;
    case Mode::allgather: plan_allgather(rec, s, cfg, hd); break;
    case Mode::a2a: plan_ulysses(rec, s, cfg, hd); break;
    case Mode::a2a_p2p: plan_hcp(rec, s, cfg, hd); break;
  }
  return t;
}

}  // namespace cplab
