// 08_ulysses: Ulysses all-to-all: swap the sequence split for a head split, attend, swap back.
//
// What it is: lesson 8's program. A real run (run_experiment) of mode a2a, zigzag, causal, forward
// + backward, on cp = 4 ranks, 32 tokens, 8 query heads, 4 KV heads, head dim 4, double. Which
// (tokens, heads) every rank holds before and after the all-to-all (sequence_plan, the trace's tile
// sections, ulysses_section), the messages of one all-to-all and TE's chunk-id tables
// (chunk_ids_before_attn / after_attn), the one tile per rank, bytes per rank per phase against the
// closed form (checked against CpSpec::comm_per_rank) and the ring (also planned at 128K tokens,
// trace_plan.h), the heads rule as the library refuses it (the CpSpec constructor's cplab::Error)
// and --replicate-kv (CpFields::replicate_kv), and the errors against dense attention.
// What it is not: an all-to-all: plans, messages, tiles and refusals are the reference's
// (ulysses_a2a.h, cp_spec.h, sim/comm.h); the lesson reads and sums them.
#include <cstdio>
#include <string>

#include "core/error.h"
#include "run/experiment.h"
#include "lesson.h"
#include "plan/trace_plan.h"
#include "modes/ulysses_a2a.h"

using namespace cplab;
using namespace cplab::lesson;

namespace {

// Ulysses (a2a) over P ranks, zigzag, causal, S = 32 tokens, h query heads, hk KV heads of d = 4
CpFields a2a_fields(index_t P, index_t h, index_t hk) {
  CpFields f;
  f.mode = Mode::a2a, f.layout = Layout::zigzag, f.causal = true;
  f.cp = P, f.seq = 32, f.heads = h, f.kv_heads = hk, f.head_dim = 4;
  return f;
}
// what the library says about a layer: "accepted", or the message of the cplab::Error the CpSpec
// constructor throws, naming the rule the fields break
std::string verdict(const CpFields& f) {
  try {
    const CpSpec checked(f);
    return "accepted";
  } catch (const Error& e) {
    return std::string("cplab::Error: ") + e.what();
  }
}

}  // namespace

int main(int argc, char** argv) {
  Lesson L(argc, argv, "Lesson 8: Ulysses all-to-all: the sequence-head swap",
           "Trade the sequence split for a head split: every rank attends the whole sequence for a few heads.");
  const RunSpec s{.cp = CpSpec(a2a_fields(4, 8, 4)), .backward = true};  // forward + backward, double
  const CpSpec& cp = s.cp;
  const index_t P = cp.P(), n = cp.n(), h = cp.h(), hk = cp.hk(), d = cp.d(), dv = cp.dv();
  const index_t e = 8;  // double: 8 bytes per element
  const A2aPlan plan = sequence_plan(cp.partition());
  const RunReport rep = run_experiment(s, make_inputs(s));
  const Trace& t = rep.trace;

  L.step("before: each rank holds its zigzag tokens, every head (cp 4, 32 tokens, 8 heads, 4 KV heads)");
  std::vector<std::vector<std::string>> rows;
  for (index_t r = 0; r < P; ++r)
    rows.push_back({std::to_string(r), to_string(to_spans(plan.from[r])), "heads 0.." + std::to_string(h - 1),
                    "heads 0.." + std::to_string(hk - 1)});
  table({"rank", "tokens", "Q heads", "KV heads"}, rows);
  std::printf("Attention mixes tokens but never heads: each head is an independent attention. So instead of\n"
              "passing KV around, give every rank ALL tokens of a few heads.\n");

  L.step("the all-to-all: rank i sends rank g its own tokens of head group g (from the trace, forward step 0)");
  std::printf("bytes of the 'q' messages, sender down, receiver across (n * h/P * d * 8 each; '.' = kept):\n");
  rows.clear();
  for (index_t i = 0; i < P; ++i) {
    std::vector<std::string> row = {"rank " + std::to_string(i)};
    for (index_t g = 0; g < P; ++g) {
      std::string cell = ".";
      for (const Event& ev : t.events())
        if (ev.kind == EventKind::send && ev.phase == Phase::fwd && ev.step == 0 && ev.tensor == "q" && ev.rank == i && ev.peer == g)
          cell = std::to_string(ev.bytes);
      row.push_back(cell);
    }
    rows.push_back(row);
  }
  table({"", "to 0", "to 1", "to 2", "to 3"}, rows);
  std::int64_t kmsg = 0;
  for (const Event& ev : t.events())
    if (ev.kind == EventKind::send && ev.tensor == "k") kmsg = ev.bytes;
  show("one 'k' (or 'v') message: n * hk/P * d * 8", kmsg);
  show("rank-concatenated chunk order after the exchange (chunk_ids_after_attn)", list(chunk_ids_after_attn(P)));
  show("where sequence chunk p sits in it (chunk_ids_before_attn, TE's index_select)", list(chunk_ids_before_attn(P)));
  std::printf("Rank g receives chunk pairs (0,7), (1,6), (2,5), (3,4), one pair per sender, and reorders them into\n"
              "sequence order (cplab derives this from the layout; the tables are TE's, reproduced).\n");

  L.step("after: each rank holds every token, one head group (tile sections from the trace)");
  rows.clear();
  for (const Event& ev : t.events())
    if (ev.kind == EventKind::tile && ev.phase == Phase::fwd)
      rows.push_back({std::to_string(ev.rank), to_string(to_spans(plan.to[static_cast<size_t>(ev.rank)])), ev.section,
                      ulysses_section(ev.rank, hk / P)});
  table({"rank", "tokens", "Q heads (tile section)", "KV heads (ulysses_section)"}, rows);
  std::printf("GQA: query head i uses KV head i / (h/hk) = i / 2, so Q heads 2g, 2g+1 need exactly KV head g.\n");

  L.step("attention: one ordinary causal tile per rank, no merge (from the trace)");
  rows.clear();
  for (const Event& ev : t.events())
    if (ev.kind == EventKind::tile)
      rows.push_back({to_string(ev.phase), std::to_string(ev.rank), ev.section, to_string(ev.rows), to_string(ev.cols), ev.mask, std::to_string(ev.pairs), std::to_string(ev.flops)});
  table({"phase", "rank", "section", "queries", "keys", "mask", "pairs", "FLOPs"}, rows);
  std::printf("Every rank does the same work whatever the layout: the balance comes from the heads.\n");

  L.step("the way back, and the backward: four all-to-alls per pass (bytes per rank, from the trace)");
  rows.clear();
  for (const auto& [ph, step] : t.steps()) {
    std::string tensors;
    std::int64_t msgs = 0, bytes = 0;
    for (const Event& ev : t.events())
      if (ev.kind == EventKind::send && ev.phase == ph && ev.step == step && ev.rank == 0) {
        if (tensors.find("'" + ev.tensor + "'") == std::string::npos) tensors += (tensors.empty() ? "'" : " '") + ev.tensor + "'";
        ++msgs, bytes += ev.bytes;
      }
    if (msgs > 0) rows.push_back({to_string(ph), std::to_string(step), tensors, std::to_string(msgs), std::to_string(bytes)});
  }
  table({"phase", "step", "all-to-all of", "messages (rank 0)", "bytes sent"}, rows);
  const Phase fwd = Phase::fwd, bwd = Phase::bwd;
  show("forward bytes per rank", list(t.bytes_sent_per_rank(&fwd)));
  show("backward bytes per rank", list(t.bytes_sent_per_rank(&bwd)));
  const std::int64_t a_p = (P - 1) * n * e * (h * d + hk * d + hk * dv + h * dv) / P;
  show("closed form A_P = (P-1)/P * n*e*(h*d + hk*d + hk*dv + h*dv)", a_p);
  agrees("A_P", a_p, cp.comm_per_rank(e).fwd_bytes);  // the mode table's closed form (mode_table.h)
  CpFields ring_fields = cp.fields();  // the same layer as a ring
  ring_fields.mode = Mode::p2p;
  const RunSpec ring{.cp = CpSpec(ring_fields), .backward = true};
  show("the ring, same spec: forward bytes per rank (P-1) * B_kv", plan_trace(ring).bytes_sent_per_rank(&fwd)[0]);
  std::printf("planned traces (trace_plan.h), 131072 tokens, 32 heads, 8 KV heads of 128, float, forward MiB per rank:\n");
  rows.clear();
  for (index_t big_P : {2, 4, 8}) {
    CpFields fb = a2a_fields(big_P, 32, 8);  // forward only, float
    fb.seq = 131072, fb.head_dim = 128;
    const RunSpec big{.cp = CpSpec(fb), .dtype = "float"};
    fb.mode = Mode::p2p;
    const RunSpec bring{.cp = CpSpec(fb), .dtype = "float"};
    rows.push_back({std::to_string(big_P), std::to_string(plan_trace(big).bytes_sent_per_rank(&fwd)[0] >> 20),
                    std::to_string(plan_trace(bring).bytes_sent_per_rank(&fwd)[0] >> 20)});
  }
  table({"cp", "a2a", "ring"}, rows);
  std::printf("An all-to-all moves (P-1)/P of the rank's own Q, K, V, O, which shrink as cp grows; a ring rank\n"
              "receives (P-1)/P of the whole sequence's KV, which grows towards all of it.\n");

  L.step("the catch: cp is bounded by the number of heads (CpSpec, modes/cp_spec.h)");
  struct Case {
    const char* what;
    index_t cp, heads, kv_heads;
    bool replicate;
  };
  for (const Case& c : {Case{"cp 4, 8 heads, 4 KV heads", 4, 8, 4, false}, Case{"cp 4, 8 heads, 2 KV heads", 4, 8, 2, false},
                        Case{"cp 4, 8 heads, 2 KV heads, --replicate-kv", 4, 8, 2, true},
                        Case{"cp 16, 8 heads, 8 KV heads", 16, 8, 8, false},
                        Case{"cp 16, 8 heads, 8 KV heads, --replicate-kv", 16, 8, 8, true}}) {
    CpFields b = a2a_fields(c.cp, c.heads, c.kv_heads);
    b.replicate_kv = c.replicate;
    std::printf("%s:\n  %s\n", c.what, verdict(b).c_str());
  }
  std::printf("Each rank must get a whole number of query heads and of KV heads. --replicate-kv lifts the KV\n"
              "bound by repeating KV heads; nothing lifts the query-heads bound (lesson 9 does, with a ring).\n");

  L.step("--replicate-kv: 2 KV heads on 4 ranks, each repeated twice (a real run)");
  CpFields rk_fields = a2a_fields(4, 8, 2);
  rk_fields.replicate_kv = true;
  const RunSpec rk{.cp = CpSpec(rk_fields), .backward = true};
  const RunReport rrep = run_experiment(rk, make_inputs(rk));
  show("kv_replication() (copies of each KV head)", rrep.spec.cp.kv_replication());
  show("forward bytes per rank, 2 KV heads replicated to 4", rrep.trace.bytes_sent_per_rank(&fwd)[0]);
  show("forward bytes per rank, 4 real KV heads (the run above)", t.bytes_sent_per_rank(&fwd)[0]);
  CpFields rring_fields = rk_fields;  // the same layer as a ring (which has no --replicate-kv)
  rring_fields.mode = Mode::p2p, rring_fields.replicate_kv = false;
  const RunSpec rring{.cp = CpSpec(rring_fields), .backward = true};
  show("the ring with 2 KV heads never replicates: forward bytes per rank", plan_trace(rring).bytes_sent_per_rank(&fwd)[0]);
  show("max error vs dense (replicas' dK, dV summed back)", rrep.max_error());
  std::printf("Replication costs memory and all-to-all bytes as if the model had 4 KV heads.\n");

  L.step("the result: exact (error vs dense attention, max|x - ref| / max|ref|)");
  show_errors(rep);
  const bool exact = rep.max_error() < 1e-12 && rrep.max_error() < 1e-12;
  show("every error below 1e-12 (both runs)", yes(exact));
  std::printf("Each rank runs the very kernel the dense oracle runs, on whole heads: nothing is split, nothing merged.\n");

  L.finish(8,
           {"cplab run --mode a2a --cp 4 --seq 32 --heads 8 --kv-heads 4 --head-dim 4 --causal --backward   (this run)",
            "cplab run --mode a2a --cp 4 --seq 32 --heads 8 --kv-heads 2 --head-dim 4 --causal --backward --replicate-kv   (replicated KV heads)"});
  return exact ? 0 : 1;
}
