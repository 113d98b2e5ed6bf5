// 07_allgather: all-gather KV (Llama 3's "pass-KV all-gather"): one collective, then plain local
// attention; memory traded for a simpler schedule.
//
// What it is: lesson 7's program. Real runs (run_experiment) of mode allgather and, for comparison,
// the ring (p2p), both zigzag, causal, forward + backward, on cp = 4 ranks, 32 tokens, 4 query
// heads, 2 KV heads, head dim 4, double. From the all-gather run's TRACE: the all-gather of KV, the
// two tiles per rank (a zigzag chunk each, against a prefix of the gathered KV under a bottom-right
// causal mask, from allgather_tiles), the keys each rank sees, the backward's second all-gather and
// reduce-scatter. The KV each rank holds, all-gather vs ring, from the traces' received bytes (also
// for planned traces at 128K tokens, trace_plan.h), bytes per rank of both modes against their
// closed form (checked against CpSpec::comm_per_rank), and the errors against dense attention.
// What it is not: an all-gather or a mask of its own: the tiles, masks and messages are the
// reference's (allgather_kv.h, mask.h, sim/comm.h); the lesson reads and sums them.
#include <algorithm>
#include <cstdio>
#include <string>

#include "modes/allgather_kv.h"
#include "run/experiment.h"
#include "lesson.h"
#include "plan/trace_plan.h"

using namespace cplab;
using namespace cplab::lesson;

namespace {

// per rank: bytes received and messages sent in (phase, step), and the op / tensor seen there
struct StepComm {
  std::vector<std::int64_t> recv, sent, msgs;
  std::string what;
};
StepComm step_comm(const Trace& t, Phase ph, int step) {
  StepComm c{std::vector<std::int64_t>(static_cast<size_t>(t.cp())), std::vector<std::int64_t>(static_cast<size_t>(t.cp())),
             std::vector<std::int64_t>(static_cast<size_t>(t.cp())), "-"};
  for (const Event& e : t.events()) {
    if (e.phase != ph || e.step != step || e.kind == EventKind::tile) continue;
    c.what = e.op + " '" + e.tensor + "'";
    if (e.kind == EventKind::recv) c.recv[static_cast<size_t>(e.rank)] += e.bytes;
    else c.sent[static_cast<size_t>(e.rank)] += e.bytes, ++c.msgs[static_cast<size_t>(e.rank)];
  }
  return c;
}
// KV bytes a rank holds at most at once in the forward: its own block plus what arrives in one step
std::int64_t kv_held(const Trace& t, std::int64_t own) {
  std::int64_t most = 0;
  for (const auto& [ph, step] : t.steps())
    if (ph == Phase::fwd) most = std::max(most, step_comm(t, ph, step).recv[0]);
  return own + most;
}

}  // namespace

int main(int argc, char** argv) {
  Lesson L(argc, argv, "Lesson 7: all-gather KV (Llama 3 style): memory for simplicity",
           "Gather every rank's K and V once, then each rank attends its own queries to the whole sequence.");
  CpFields f;  // zigzag, causal: P = 4 ranks, S = 32 tokens, h = 4 query heads, hk = 2 KV heads, d = 4
  f.mode = Mode::allgather, f.layout = Layout::zigzag, f.causal = true;
  f.cp = 4, f.seq = 32, f.heads = 4, f.kv_heads = 2, f.head_dim = 4;
  const RunSpec s{.cp = CpSpec(f), .backward = true};  // forward + backward, double
  CpFields ring_fields = f;  // the same layer as a ring
  ring_fields.mode = Mode::p2p;
  const RunSpec ring{.cp = CpSpec(ring_fields), .backward = true};
  const CpSpec& cp = s.cp;
  const index_t P = cp.P(), n = cp.n(), c = n / 2, e = 8;  // c: tokens per zigzag chunk; double: 8 bytes
  const Partition& part = cp.partition();
  const RunReport rep = run_experiment(s, make_inputs(s));
  const RunReport rrep = run_experiment(ring, make_inputs(ring));
  const Trace& t = rep.trace;
  const std::int64_t b_kv = n * cp.hk() * (cp.d() + cp.dv()) * e;

  L.step("the setup: zigzag over 4 ranks, 8 chunks of 4 tokens (rank r: chunks r and 7-r)");
  for (index_t r = 0; r < P; ++r) show("rank " + std::to_string(r) + " Q, K, V tokens", to_string(part.spans(r)));
  show("one rank's K and V block: n * hk * (d + dv) * 8 bytes", b_kv);

  L.step("forward step 0: one all-gather of K|V (from the trace)");
  const StepComm g0 = step_comm(t, Phase::fwd, 0);
  std::vector<std::vector<std::string>> rows;
  for (index_t r = 0; r < P; ++r)
    rows.push_back({std::to_string(r), std::to_string(g0.msgs[r]), std::to_string(g0.sent[r]), std::to_string(g0.recv[r]), std::to_string(b_kv + g0.recv[r]), std::to_string((b_kv + g0.recv[r]) / b_kv * n)});
  std::printf("op %s\n", g0.what.c_str());
  table({"rank", "messages sent", "bytes sent", "bytes received", "K|V bytes now held", "tokens of K|V held"}, rows);
  std::printf("Every rank now has K and V of all 32 tokens; it puts them in sequence order with the layout\n"
              "(unshard, layout.h). Q stays sharded: the queries are still rank r's zigzag chunks.\n");

  L.step("forward step 1: local attention, two tiles per rank, bottom-right causal (from the trace)");
  rows.clear();
  std::vector<std::int64_t> keys(static_cast<size_t>(P), 0);
  bool tiles_agree = true;
  for (const Event& ev : t.events()) {
    if (ev.kind != EventKind::tile || ev.phase != Phase::fwd) continue;
    rows.push_back({std::to_string(ev.rank), ev.section, to_string(ev.rows), to_string(ev.cols), ev.mask,
                    std::to_string(ev.pairs), std::to_string(ev.flops)});
    keys[static_cast<size_t>(ev.rank)] += span_count(ev.cols);
    const std::vector<AgTile> lib = allgather_tiles(part, cp.packing(), cp.packed(), cp.rule(), ev.rank);
    bool found = false;
    for (const AgTile& a : lib)
      found = found || (a.section == ev.section && to_string(a.mask) == ev.mask && a.nk == span_count(ev.cols));
    tiles_agree = tiles_agree && found;
  }
  table({"rank", "section", "Q tokens", "keys", "mask", "pairs", "FLOPs"}, rows);
  show("the trace's tiles = allgather_tiles (allgather_kv.h)", yes(tiles_agree));
  show("keys attended per rank ((r+1)c + (2P-r)c)", list(keys));
  show("(2P+1) * c", (2 * P + 1) * c);
  show("per-rank fwd FLOPs", list(rep.flops_fwd));
  std::printf("rank 1's tiles, query by query (mask.h keys of the tile's mask causal(sk - sq)):\n");
  for (const AgTile& a : allgather_tiles(part, cp.packing(), cp.packed(), cp.rule(), 1)) {
    const std::vector<index_t> q = part.indices(1, a.q0, a.nq);
    for (index_t row = 0; row < a.nq; ++row) {
      const KeyRange kr = a.mask.keys(row, a.nk);
      std::printf("  %-12s query %2lld sees keys %lld..%lld\n", a.section.c_str(), static_cast<long long>(q[static_cast<size_t>(row)]),
                  static_cast<long long>(a.k0 + kr.lo), static_cast<long long>(a.k0 + kr.hi - 1));
    }
  }
  std::printf("Bottom-right: the tile's last query lines up with its last key. Each query sees all its keys\n"
              "in one tile, so there is no (O, LSE) merge at all.\n");

  L.step("the price: every rank holds the whole sequence's K and V");
  const std::int64_t ag_held = kv_held(t, b_kv), ring_held = kv_held(rrep.trace, b_kv);
  show("all-gather: K|V bytes held per rank (own + gathered)", ag_held);
  show("ring: K|V bytes held per rank (the block computed on + the one arriving)", ring_held);
  show("all-gather / ring", static_cast<double>(ag_held) / static_cast<double>(ring_held));
  std::printf("planned traces (trace_plan.h), 131072 tokens, 8 KV heads of 128, float, K|V held per rank (MiB):\n");
  rows.clear();
  for (index_t big_P : {2, 4, 8, 16}) {
    CpFields fb = f;  // the same modes at Llama-3-8B-like sizes, forward only, float
    fb.cp = big_P, fb.seq = 131072, fb.heads = 32, fb.kv_heads = 8, fb.head_dim = 128;
    const RunSpec big{.cp = CpSpec(fb), .dtype = "float"};
    fb.mode = Mode::p2p;
    const RunSpec bring{.cp = CpSpec(fb), .dtype = "float"};
    const std::int64_t own = big.cp.n() * big.cp.hk() * (big.cp.d() + big.cp.dv()) * 4;  // float: 4 bytes
    const std::int64_t a = kv_held(plan_trace(big), own), r = kv_held(plan_trace(bring), own);
    char ratio[32];
    std::snprintf(ratio, sizeof ratio, "%.1f", static_cast<double>(a) / static_cast<double>(r));
    rows.push_back({std::to_string(big_P), std::to_string(a >> 20), std::to_string(r >> 20), ratio});
  }
  table({"cp", "all-gather", "ring", "ratio"}, rows);
  std::printf("All-gather's K|V stays at the full sequence whatever cp is; the ring's falls as 2/cp of it.\n");

  L.step("backward: gather K|V again, compute, reduce-scatter dK|dV (from the trace)");
  rows.clear();
  for (const auto& [ph, step] : t.steps()) {
    if (ph != Phase::bwd) continue;
    const StepComm sc = step_comm(t, ph, step);
    std::int64_t fl = 0;
    for (const Event& ev : t.events())
      if (ev.kind == EventKind::tile && ev.phase == ph && ev.step == step && ev.rank == 0) fl += ev.flops;
    rows.push_back({std::to_string(step), sc.what, std::to_string(sc.msgs[0]), std::to_string(sc.sent[0]), std::to_string(sc.recv[0]), std::to_string(fl)});
  }
  table({"bwd step", "communication", "messages (rank 0)", "bytes sent", "bytes received", "tile FLOPs"}, rows);
  std::printf("K|V is not kept from the forward (that is the memory the mode saves between the passes).\n"
              "Each rank's tiles add into full-length dK|dV buffers (zero where its queries saw nothing); the\n"
              "reduce-scatter sums the 4 buffers and hands every rank the rows of its own tokens.\n");

  L.step("bytes and messages per rank: all-gather vs ring (same spec, summed from the traces)");
  const Phase fwd = Phase::fwd, bwd = Phase::bwd;
  rows.clear();
  for (const RunReport* r : {&rep, &rrep})
    rows.push_back({to_string(r->spec.cp.mode()), std::to_string(r->trace.messages_sent_per_rank(&fwd)[0]),
                    std::to_string(r->trace.bytes_sent_per_rank(&fwd)[0]),
                    std::to_string(r->trace.messages_sent_per_rank(&bwd)[0]), std::to_string(r->trace.bytes_sent_per_rank(&bwd)[0])});
  table({"mode", "fwd messages", "fwd bytes", "bwd messages", "bwd bytes"}, rows);
  show("closed form, both modes: forward (P-1) * B_kv", (P - 1) * b_kv);
  show("closed form, both modes: backward 2(P-1) * B_kv", 2 * (P - 1) * b_kv);
  for (const RunSpec* x : {&s, &ring}) {  // the mode table's closed forms (mode_table.h), per mode
    const CommPerRank table_says = x->cp.comm_per_rank(e);
    agrees(to_string(x->cp.mode()) + " forward bytes (P-1) * B_kv", (P - 1) * b_kv, table_says.fwd_bytes);
    agrees(to_string(x->cp.mode()) + " backward bytes 2(P-1) * B_kv", 2 * (P - 1) * b_kv, table_says.bwd_bytes);
  }
  show("every rank sends the same (all-gather)", yes(std::all_of(rep.bytes_sent.begin(), rep.bytes_sent.end(),
                                                                  [&](std::int64_t b) { return b == rep.bytes_sent[0]; })));
  std::printf("Same bytes; the difference is WHEN: the ring's messages travel behind its tiles, step by step,\n"
              "while the all-gather must finish before any tile can start.\n");

  L.step("the result: exact (error vs dense attention, max|x - ref| / max|ref|)");
  show_errors(rep);
  const bool exact = rep.max_error() < 1e-12 && rrep.max_error() < 1e-12;
  show("every error below 1e-12 (all-gather and ring)", yes(exact));

  L.finish(7,
           {"cplab run --mode allgather --cp 4 --seq 32 --heads 4 --kv-heads 2 --head-dim 4 --causal --backward   (this run)",
            "cplab run --mode allgather --cp 16 --seq 131072 --heads 32 --kv-heads 8 --head-dim 128 --causal --backward --dtype float --plan-only   (cp 16 at 128K tokens, planned)"});
  return exact ? 0 : 1;
}
