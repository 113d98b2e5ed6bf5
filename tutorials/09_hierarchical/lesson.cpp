// 09_hierarchical: hierarchical a2a+p2p (TE's "a2a+p2p", USP/LongVILA): an all-to-all inside small
// groups of ranks, a ring across the groups.
//
// What it is: lesson 9's program. A real run (run_experiment) of mode a2a+p2p with icp = 2 (inner
// all-to-all) x ocp = 4 (outer ring) = cp 8, zigzag, causal, forward + backward, 64 tokens, 4 query
// heads, 2 KV heads, head dim 4, double. The rank grid (hcp_rank, hcp_inner_members,
// hcp_ring_members), what every rank holds before and after the inner all-to-all (hcp_inner_plan,
// hcp_outer_partition, ulysses_section), each ring step by step from the run's TRACE, bytes per rank
// inside vs across groups against the closed forms (checked against CpSpec::comm_per_rank), the
// pure modes at the same size (the CpSpec constructor's refusal, trace_plan.h), and the errors
// against dense attention.
// What it is not: a hierarchy of its own: the grid, plans, rings, messages and tiles are the
// reference's (hierarchical_cp.h, ring_p2p.h, ulysses_a2a.h); the lesson reads and sums them.
#include <cstdio>
#include <string>

#include "core/error.h"
#include "run/experiment.h"
#include "modes/hierarchical_cp.h"
#include "lesson.h"
#include "plan/trace_plan.h"

using namespace cplab;
using namespace cplab::lesson;

namespace {

std::string ints(const std::vector<int>& v) {
  std::string s;
  for (int x : v) s += (s.empty() ? "" : ",") + std::to_string(x);
  return "{" + s + "}";
}

}  // namespace

int main(int argc, char** argv) {
  Lesson L(argc, argv, "Lesson 9: hierarchical a2a+p2p: inner all-to-all, outer ring",
           "An all-to-all inside each group of adjacent ranks, a ring across the groups: cp beyond the KV heads.");
  CpFields f;  // P = 8 ranks = ICP 2 x OCP 4, zigzag, causal, S = 64 tokens, h = 4, hk = 2 heads of d = 4
  f.mode = Mode::a2a_p2p, f.layout = Layout::zigzag, f.causal = true;
  f.cp = 8, f.icp = 2, f.ocp = 4, f.seq = 64, f.heads = 4, f.kv_heads = 2, f.head_dim = 4;
  const RunSpec s{.cp = CpSpec(f), .backward = true};  // forward + backward, double
  const CpSpec& cp = s.cp;
  const index_t P = cp.P(), icp = cp.icp(), ocp = cp.ocp(), n = cp.n();  // icp x ocp: docs/modes.md's I x O
  const index_t h = cp.h(), hk = cp.hk(), d = cp.d(), dv = cp.dv(), e = 8;  // double: 8 bytes per element
  const Partition& part = cp.partition();
  const RunReport rep = run_experiment(s, make_inputs(s));
  const Trace& t = rep.trace;
  // the inner position a and the group p of global rank g, read from the library's grid
  std::vector<index_t> pos_a(static_cast<size_t>(P)), pos_p(static_cast<size_t>(P));
  for (index_t p = 0; p < ocp; ++p)
    for (index_t a = 0; a < icp; ++a) pos_p[hcp_rank(icp, p, a)] = p, pos_a[hcp_rank(icp, p, a)] = a;

  L.step("the rank grid: cp 8 = ICP 2 (inner all-to-all) x OCP 4 (outer ring), rank g = p*ICP + a");
  std::vector<std::vector<std::string>> rows;
  for (index_t p = 0; p < ocp; ++p) {
    std::vector<std::string> row = {"group p = " + std::to_string(p)};
    for (index_t a = 0; a < icp; ++a) row.push_back(std::to_string(hcp_rank(icp, p, a)));
    row.push_back(ints(hcp_inner_members(icp, p)));
    rows.push_back(row);
  }
  table({"", "a = 0", "a = 1", "inner all-to-all group"}, rows);
  for (index_t a = 0; a < icp; ++a) show("ring a = " + std::to_string(a) + " (hcp_ring_members)", ints(hcp_ring_members(icp, ocp, a)));
  std::printf("Groups are adjacent ranks (one node: fast links for the all-to-all); rings are strided by ICP\n"
              "(across nodes: one KV block per step, hidden behind the tiles).\n");

  L.step("before: zigzag over all 8 ranks (16 chunks of 4 tokens), every head");
  rows.clear();
  for (index_t g = 0; g < P; ++g)
    rows.push_back({std::to_string(g), "(" + std::to_string(pos_p[g]) + ", " + std::to_string(pos_a[g]) + ")",
                    to_string(part.spans(g)), "heads 0.." + std::to_string(h - 1)});
  table({"rank", "(p, a)", "tokens", "Q heads"}, rows);

  L.step("forward step 0: the all-to-all inside each group (hcp_inner_plan; bytes from the trace)");
  const Partition outer = hcp_outer_partition(part, ocp);
  bool outer_zigzag = true;
  rows.clear();
  for (index_t g = 0; g < P; ++g) {
    const A2aPlan plan = hcp_inner_plan(part, icp, ocp, pos_p[g]);
    const std::vector<index_t>& got = plan.to[static_cast<size_t>(pos_a[g])];
    outer_zigzag = outer_zigzag && got == outer.indices(pos_p[g]);
    std::int64_t sent = 0;
    std::string peers;
    for (const Event& ev : t.events())
      if (ev.kind == EventKind::send && ev.phase == Phase::fwd && ev.step == 0 && ev.rank == g) {
        sent += ev.bytes;
        if (peers.find("->" + std::to_string(ev.peer)) == std::string::npos) peers += (peers.empty() ? "->" : " ->") + std::to_string(ev.peer);
      }
    rows.push_back({std::to_string(g), to_string(to_spans(got)), ulysses_section(pos_a[g], h / icp),
                    ulysses_section(pos_a[g], hk / icp), peers, std::to_string(sent)});
  }
  table({"rank", "tokens after", "Q heads", "KV heads", "q, k, v sent to", "bytes sent"}, rows);
  show("group p now holds super-chunks p and 7-p: the zigzag layout over 4 ranks (hcp_outer_partition)", yes(outer_zigzag));
  std::printf("Inside a group the all-to-all swaps tokens for heads (lesson 8) over ICP ranks only; the group's\n"
              "tokens come out as two super-chunks of ICP*c = 8 tokens, in causal order, exactly what a zigzag\n"
              "ring of 4 ranks expects.\n");

  L.step("forward steps 1-4: every ring runs the zigzag ring over the 4 groups (from the trace)");
  for (int i = 1; i <= static_cast<int>(ocp); ++i) {
    std::printf("step %d:\n", i);
    rows.clear();
    for (index_t a = 0; a < icp; ++a)
      for (int g : hcp_ring_members(icp, ocp, a)) {
        const Event* tile = t.find(EventKind::tile, Phase::fwd, i, g);
        const Event* snd = t.find(EventKind::send, Phase::fwd, i, g);
        const Event* rcv = t.find(EventKind::recv, Phase::fwd, i, g);
        rows.push_back({std::to_string(a), std::to_string(g), std::to_string(tile->peer), tile->section, to_string(tile->rows), to_string(tile->cols), std::to_string(tile->pairs),
                        snd ? snd->tensor + " " + std::to_string(snd->bytes) + " B -> " + std::to_string(snd->peer) : "-",
                        rcv ? rcv->tensor + " " + std::to_string(rcv->bytes) + " B <- " + std::to_string(rcv->peer) : "-"});
      }
    table({"ring", "rank", "KV of", "section", "Q tokens", "K/V tokens", "pairs", "sends", "receives"}, rows);
  }
  std::printf("The two rings compute the same tiles on different heads (ring a: the heads of inner position a).\n");

  L.step("forward step 5 and the backward: back through the all-to-all; per rank inside vs across groups");
  rows.clear();
  bool grid_ok = true;
  for (const Phase ph : {Phase::fwd, Phase::bwd})
    for (index_t g = 0; g < P; ++g) {
      std::int64_t in_b = 0, in_m = 0, out_b = 0, out_m = 0;
      for (const Event& ev : t.events()) {
        if (ev.kind != EventKind::send || ev.phase != ph || ev.rank != g) continue;
        const bool same_group = pos_p[ev.peer] == pos_p[g], same_ring = pos_a[ev.peer] == pos_a[g];
        if (ev.op == "all_to_all") in_b += ev.bytes, ++in_m, grid_ok = grid_ok && same_group;
        else out_b += ev.bytes, ++out_m, grid_ok = grid_ok && same_ring && !same_group;
      }
      if (g < 2) rows.push_back({to_string(ph), std::to_string(g), std::to_string(in_m), std::to_string(in_b), std::to_string(out_m), std::to_string(out_b)});
    }
  table({"phase", "rank", "a2a messages", "a2a bytes (inside)", "p2p messages", "p2p bytes (across)"}, rows);
  std::printf("(ranks 0 and 1 shown; every rank sends alike)\n");
  show("every all-to-all stays inside a group, every p2p message stays in its ring", yes(grid_ok));
  const std::int64_t a_i = (icp - 1) * n * e * (h * d + hk * d + hk * dv + h * dv) / icp;
  const std::int64_t b_kv = n * hk * (d + dv) * e;
  show("A_I = (I-1)/I * n*e*(h*d + hk*d + hk*dv + h*dv)", a_i);
  show("B_kv = n*hk*(d+dv)*e", b_kv);
  show("forward messages, closed form 4(I-1) + O-1", 4 * (icp - 1) + ocp - 1);
  show("backward messages, closed form 4(I-1) + O", 4 * (icp - 1) + ocp);
  show("forward, closed form A_I + (O-1)*B_kv", a_i + (ocp - 1) * b_kv);
  show("backward, closed form A_I + 2(O-1)*B_kv", a_i + 2 * (ocp - 1) * b_kv);
  const CommPerRank table_says = cp.comm_per_rank(e);  // the mode table's closed forms (mode_table.h)
  agrees("forward messages 4(I-1) + O-1", 4 * (icp - 1) + ocp - 1, table_says.fwd_msgs);
  agrees("backward messages 4(I-1) + O", 4 * (icp - 1) + ocp, table_says.bwd_msgs);
  agrees("forward bytes A_I + (O-1)*B_kv", a_i + (ocp - 1) * b_kv, table_says.fwd_bytes);
  agrees("backward bytes A_I + 2(O-1)*B_kv", a_i + 2 * (ocp - 1) * b_kv, table_says.bwd_bytes);
  const Phase fwd = Phase::fwd, bwd = Phase::bwd;
  show("forward bytes per rank (trace)", list(t.bytes_sent_per_rank(&fwd)));
  show("backward bytes per rank (trace)", list(t.bytes_sent_per_rank(&bwd)));

  L.step("the same 8 ranks as one ring, or as one all-to-all");
  CpFields ring_fields = cp.fields(), a2a_fields = cp.fields();  // the same layer, one mode over all P ranks
  ring_fields.mode = Mode::p2p, ring_fields.icp = ring_fields.ocp = 0;
  a2a_fields.mode = Mode::a2a, a2a_fields.icp = a2a_fields.ocp = 0;
  const Trace rt = plan_trace(RunSpec{.cp = CpSpec(ring_fields), .backward = true});
  rows.clear();
  rows.push_back({"a2a+p2p 2x4", std::to_string(t.bytes_sent_per_rank()[0]), std::to_string(t.messages_sent_per_rank()[0])});
  rows.push_back({"p2p (ring of 8)", std::to_string(rt.bytes_sent_per_rank()[0]), std::to_string(rt.messages_sent_per_rank()[0])});
  table({"mode", "bytes per rank (fwd + bwd)", "messages per rank"}, rows);
  try {
    const CpSpec a2a(a2a_fields);  // the constructor checks the heads rule
    std::printf("a2a over 8: accepted\n");
  } catch (const Error& err) {
    std::printf("a2a over 8: cplab::Error: %s\n", err.what());
  }
  std::printf("With 4 heads and 2 KV heads a pure all-to-all stops at 2 ranks (4 with --replicate-kv); the\n"
              "hierarchy needs only ICP to divide the heads, and the ring multiplies it. Its all-to-all stays on\n"
              "the fast links, and each forward crosses the slow ones OCP - 1 times per rank instead of cp - 1.\n");

  L.step("the result: exact (error vs dense attention, max|x - ref| / max|ref|)");
  show_errors(rep);
  show("work ratio (max / min FLOPs over ranks)", rep.work_ratio);
  const bool exact = rep.max_error() < 1e-12;
  show("every error below 1e-12", yes(exact));

  L.finish(9,
           {"cplab run --mode a2a+p2p --hcp 2,4 --cp 8 --seq 64 --heads 4 --kv-heads 2 --head-dim 4 --causal --backward   (this run)",
            "cplab run --mode a2a+p2p --hcp 4,2 --cp 8 --seq 64 --heads 4 --kv-heads 4 --head-dim 4 --causal --backward   (Megatron's [4, 2]: a2a of 4, ring of 2)"});
  return exact ? 0 : 1;
}
