// 03_naive_ring: the ring (p2p) on 4 simulated ranks: Q stays, KV travels, step by step.
//
// What it is: lesson 3's program. One run of the reference's ring (mode p2p, contiguous layout, no
// mask) through run_experiment on cp = 4 ranks, 16 tokens, GQA (4 query heads, 1 KV head); the
// program reads the run's TRACE and prints, step by step, which KV block every rank holds, the tile
// it computes, and what it sends and receives (bytes); then per-rank FLOPs and bytes, the error
// against dense attention (the bytes' closed form checked against CpSpec::comm_per_rank), and the
// arithmetic of what a ring that moved Q would send instead.
// What it is not: a ring: the schedule, messages and FLOPs are the reference's (ring_p2p.h,
// ring_schedule.h, trace.h); the lesson only reads the events and multiplies tensor sizes.
#include <cstdio>
#include <string>

#include "run/experiment.h"
#include "lesson.h"
#include "modes/ring_schedule.h"

using namespace cplab;
using namespace cplab::lesson;

int main(int argc, char** argv) {
  Lesson L(argc, argv, "Lesson 3: a naive ring: KV moves, Q stays",
           "Every rank keeps its queries; the key/value blocks go around the ring, one hop per step.");
  CpFields f;  // the CP layer: mode, layout, cp = P ranks, seq = S tokens, heads, head dim, mask
  f.mode = Mode::p2p, f.layout = Layout::contiguous, f.causal = false;
  f.cp = 4, f.seq = 16, f.heads = 4, f.kv_heads = 1, f.head_dim = 4;  // GQA: 4 query heads share 1 KV head
  const RunSpec s{.cp = CpSpec(f)};  // CpSpec checks every rule once; the run: forward only, double
  const CpSpec& cp = s.cp;
  const index_t P = cp.P(), n = cp.n(), h = cp.h(), hk = cp.hk(), d = cp.d(), dv = cp.dv();
  const index_t e = 8;  // double: 8 bytes per element
  const RunReport rep = run_experiment(s, make_inputs(s));

  L.step("the setup: 16 tokens on 4 ranks, contiguous, no mask, 4 query heads and 1 KV head");
  const Partition& part = cp.partition();
  for (index_t r = 0; r < P; ++r) show("rank " + std::to_string(r) + " owns tokens", list(part.indices(r)));
  std::printf("each rank holds Q (%lld tokens x %lld heads x %lld) and K, V (%lld tokens x %lld head x %lld)\n",
              static_cast<long long>(n), static_cast<long long>(h), static_cast<long long>(d),
              static_cast<long long>(n), static_cast<long long>(hk), static_cast<long long>(d));
  const std::int64_t b_kv = n * hk * (d + dv) * e;
  show("one KV block = n * hk * (d + dv) * 8 bytes", b_kv);

  L.step("the ring, step by step, read from the run's trace (forward)");
  std::printf("at step i rank r holds the KV block of rank j = (r - i) mod %lld; it posts that block to r+1\n"
              "before computing (the transfer overlaps the tile) and receives the next one from r-1 after.\n",
              static_cast<long long>(P));
  std::int64_t kv_msg_bytes = 0;
  bool q_stays = true, schedule_agrees = true;
  for (const auto& [phase, step] : rep.trace.steps()) {
    if (phase != Phase::fwd) continue;
    std::printf("step %d:\n", step);
    std::vector<std::vector<std::string>> rows;
    for (index_t r = 0; r < P; ++r) {
      std::vector<std::string> row = {std::to_string(r), "", "", "", "", "", "-", "-"};
      for (const Event& ev : rep.trace.events()) {
        if (ev.phase != phase || ev.step != step || ev.rank != r) continue;
        if (ev.kind == EventKind::tile) {
          row[1] = to_string(ev.rows), row[2] = std::to_string(ev.peer), row[3] = to_string(ev.cols);
          row[4] = std::to_string(ev.pairs), row[5] = std::to_string(ev.flops);
          q_stays = q_stays && ev.rows == part.spans(r);
          schedule_agrees = schedule_agrees && ev.peer == ring_fwd_kv_block(P, r, step);
        } else if (ev.kind == EventKind::send) {
          row[6] = ev.tensor + " " + std::to_string(ev.bytes) + " B -> " + std::to_string(ev.peer);
          kv_msg_bytes = ev.bytes;
        } else {
          row[7] = ev.tensor + " " + std::to_string(ev.bytes) + " B <- " + std::to_string(ev.peer);
        }
      }
      rows.push_back(row);
    }
    table({"rank", "Q tokens", "holds KV of", "K/V tokens", "pairs", "FLOPs", "sends", "receives"}, rows);
  }
  show("every tile's queries are the rank's own tokens (Q never moves)", std::string(q_stays ? "yes" : "no"));
  show("the KV block held = ring_fwd_kv_block(P, r, i) (ring_schedule.h)", std::string(schedule_agrees ? "yes" : "no"));
  show("bytes of one kv message (trace)", kv_msg_bytes);

  L.step("per rank: FLOPs, bytes and messages (summed from the trace)");
  std::vector<std::vector<std::string>> rows;
  for (index_t r = 0; r < P; ++r)
    rows.push_back({std::to_string(r), std::to_string(rep.flops_fwd[r]), std::to_string(rep.bytes_sent[r]), std::to_string(rep.bytes_recv[r]), std::to_string(rep.messages[r])});
  table({"rank", "fwd FLOPs", "bytes sent", "bytes recv", "messages"}, rows);
  std::int64_t sum = 0;
  for (std::int64_t fl : rep.flops_fwd) sum += fl;
  show("FLOPs: the ranks sum to", sum);
  show("FLOPs: dense attention needs", rep.dense_flops);
  show("bytes sent per rank, closed form (P-1) * KV block", (P - 1) * b_kv);
  agrees("(P-1) * KV block", (P - 1) * b_kv, cp.comm_per_rank(e).fwd_bytes);  // the mode table's closed form
  std::printf("No mask: every rank does the same work, P tiles of n x n = %lld pairs each.\n", static_cast<long long>(n * n));

  L.step("the result: exact (error vs dense attention, max|x - ref| / max|ref|)");
  show_errors(rep);
  show("ring equals dense attention to 1e-12", yes(rep.max_error() < 1e-12));

  L.step("why KV and not Q: the bytes a hop would carry if Q travelled (arithmetic, same shapes)");
  const std::int64_t b_q = n * h * d * e, b_o = n * h * dv * e, b_lse = h * n * e;
  show("KV block, the ring's message: n*hk*(d+dv)*8", b_kv);
  show("Q block: n*h*d*8", b_q);
  show("Q block + its running O (n*h*dv*8) + LSE (h*n*8)", b_q + b_o + b_lse);
  show("per rank, forward, KV travels: (P-1) hops of KV", (P - 1) * b_kv);
  show("per rank, forward, Q travels: (P-1) hops of Q+O+LSE, then O+LSE home", (P - 1) * (b_q + b_o + b_lse) + b_o + b_lse);
  const std::int64_t b_kv_mha = n * h * (d + dv) * e;
  show("without GQA (hk = h = 4): KV block", b_kv_mha);
  show("without GQA (hk = h = 4): Q+O+LSE", b_q + b_o + b_lse);

  L.finish(3,
           {"cplab run --mode p2p --cp 4 --seq 16 --heads 4 --kv-heads 1 --head-dim 4 --layout contiguous   (this run)",
            "cplab run --mode p2p --cp 8 --seq 131072 --heads 32 --kv-heads 8 --head-dim 128 --layout contiguous --plan-only   (Llama-3-8B-like shapes, planned: bytes per rank)"});
  return 0;
}
