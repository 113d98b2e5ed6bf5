// 06_ring_backward: the ring's backward pass: what travels (KV, then the dK/dV accumulators), what
// stays (Q, O, LSE, dO, dQ), step by step.
//
// What it is: lesson 6's program. One real run of the reference's ring (mode p2p, zigzag, causal,
// forward + backward) through run_experiment on cp = 4 ranks, 32 tokens, 4 query heads, 2 KV heads,
// head dim 4, double. The program reads the run's TRACE and prints, for every backward step and
// rank, the KV block held, the tile computed and every message (name, bytes, what it carries);
// follows one block's dK/dV accumulator around the ring to its owner; sums bytes and messages per
// phase (their closed forms checked against CpSpec::comm_per_rank); and prints the gradient errors
// against dense attention (asserted below 1e-12).
// What it is not: a ring: the schedule, messages, FLOPs and gradients are the reference's
// (ring_p2p.h, ring_schedule.h, trace.h); the lesson only reads events and names what they carry
// with ring_schedule.h's own functions.
#include <cstdio>
#include <string>

#include "run/experiment.h"
#include "lesson.h"
#include "modes/ring_schedule.h"

using namespace cplab;
using namespace cplab::lesson;

int main(int argc, char** argv) {
  Lesson L(argc, argv, "Lesson 6: backward through the ring: what travels and when",
           "Q, O, LSE, dO and dQ stay on their rank; KV goes round again, and dK/dV ride along with it.");
  CpFields f;  // a causal zigzag ring: P = 4 ranks, S = 32 tokens, h = 4 query heads, hk = 2 KV heads, d = 4
  f.mode = Mode::p2p, f.layout = Layout::zigzag, f.causal = true;
  f.cp = 4, f.seq = 32, f.heads = 4, f.kv_heads = 2, f.head_dim = 4;
  const RunSpec s{.cp = CpSpec(f), .backward = true};  // forward + backward, double
  const CpSpec& cp = s.cp;
  const index_t P = cp.P(), n = cp.n(), e = 8;  // double: 8 bytes per element
  const int last = static_cast<int>(P) - 1;
  const Partition& part = cp.partition();
  const RunReport rep = run_experiment(s, make_inputs(s));
  const Trace& t = rep.trace;
  const std::int64_t b_kv = n * cp.hk() * (cp.d() + cp.dv()) * e;

  L.step("where the forward left off (zigzag, causal, cp 4, 32 tokens, 4 heads, 2 KV heads)");
  std::vector<std::vector<std::string>> rows;
  bool starts_there = true;
  for (index_t r = 0; r < P; ++r) {
    const Event* fw = t.find(EventKind::tile, Phase::fwd, last, static_cast<int>(r));
    const Event* bw = t.find(EventKind::tile, Phase::bwd, 0, static_cast<int>(r));
    starts_there = starts_there && fw->peer == bw->peer && bw->peer == ring_bwd_kv_block(P, r, 0);
    rows.push_back({std::to_string(r), to_string(part.spans(r)), std::to_string(fw->peer), std::to_string(bw->peer)});
  }
  table({"rank", "its tokens: Q, O, LSE, dO, dQ", "KV block held after forward step 3", "KV block of backward step 0"}, rows);
  show("backward step 0 uses the block the forward received last (r+1): no message needed to start", yes(starts_there));
  show("one KV block: n * hk * (d + dv) * 8 bytes", b_kv);
  std::printf("The backward of a tile needs the FINAL O and LSE of its queries (P = exp(scale QK^T - LSE),\n"
              "Delta = rowsum(dO * O)); both already live on the query's rank, so only KV has to move.\n");

  L.step("the backward, step by step, from the run's trace (KV and dK/dV travel r -> r-1)");
  std::printf("at backward step i rank r holds block j = (r + 1 + i) mod 4: the forward's step 3 - i, reversed.\n"
              "a message at step i carries the KV block the receiver needs at step i+1 and/or the dK/dV\n"
              "the sender accumulated at step i-1 (for the block the receiver holds now).\n");
  bool schedule_agrees = true;
  for (int i = 0; i <= last; ++i) {
    const RingPost post = ring_bwd_post(P, i);
    std::printf("step %d: every rank posts '%s' (%lld part%s)\n", i, post.tensor.c_str(), static_cast<long long>(post.parts()),
                post.parts() > 1 ? "s" : "");
    rows.clear();
    for (index_t r = 0; r < P; ++r) {
      const Event* tile = t.find(EventKind::tile, Phase::bwd, i, static_cast<int>(r));
      const Event* snd = t.find(EventKind::send, Phase::bwd, i, static_cast<int>(r));
      const Event* rcv = t.find(EventKind::recv, Phase::bwd, i, static_cast<int>(r));
      schedule_agrees = schedule_agrees && tile->peer == ring_bwd_kv_block(P, r, i) && snd->tensor == post.tensor &&
                        snd->peer == ring_bwd_dst(P, r) && rcv->peer == ring_bwd_src(P, r);
      std::string carries;
      if (post.kv) carries += "KV of " + std::to_string(ring_bwd_kv_block(P, r, i));
      if (post.dkv) carries += std::string(carries.empty() ? "" : " + ") + "dKV of " + std::to_string(ring_bwd_kv_block(P, r, i - 1));
      rows.push_back({std::to_string(r), std::to_string(tile->peer), tile->section, to_string(tile->rows), to_string(tile->cols), std::to_string(tile->pairs),
                      std::to_string(tile->flops), snd->tensor + " " + std::to_string(snd->bytes) + " B -> " + std::to_string(snd->peer), carries,
                      rcv->tensor + " " + std::to_string(rcv->bytes) + " B <- " + std::to_string(rcv->peer)});
    }
    table({"rank", "KV of", "section", "Q tokens", "K/V tokens", "pairs", "bwd FLOPs", "sends", "carrying", "receives"}, rows);
  }
  show("KV held, message names and peers = ring_schedule.h (ring_bwd_kv_block, ring_bwd_post)", yes(schedule_agrees));

  L.step("one accumulator: the dK/dV of block 0 on its way home");
  std::printf("who adds to block 0's dK/dV at each step (tile events with KV of 0), and where it goes next:\n");
  int holder = -1;
  bool chain = true;
  for (int i = 0; i <= last; ++i) {
    for (index_t r = 0; r < P; ++r) {
      const Event* tile = t.find(EventKind::tile, Phase::bwd, i, static_cast<int>(r));
      if (tile->peer != 0) continue;
      if (holder >= 0) chain = chain && t.find(EventKind::send, Phase::bwd, i, holder)->peer == r;  // it came from the last holder
      holder = static_cast<int>(r);
      const Event* next = i < last ? t.find(EventKind::send, Phase::bwd, i + 1, holder) : nullptr;
      std::printf("  step %d: rank %d adds its %s tile's dK/dV (%lld pairs)%s\n", i, holder, tile->section.c_str(),
                  static_cast<long long>(tile->pairs),
                  next ? (" -> sent to rank " + std::to_string(next->peer) + " in '" + next->tensor + "' at step " + std::to_string(i + 1)).c_str()
                       : ": complete, on its owner");
    }
  }
  show("block 0's dK/dV reached rank 0 on its diagonal step, with no separate reduction", yes(chain && holder == 0));
  std::printf("Each partial dK/dV is posted one step after it was computed, so it travels while the receiver\n"
              "computes; the receiver adds its own contribution to it once it has arrived.\n");

  L.step("bytes and messages per rank, per phase (summed from the trace)");
  const Phase fwd = Phase::fwd, bwd = Phase::bwd;
  const auto bf = t.bytes_sent_per_rank(&fwd), bb = t.bytes_sent_per_rank(&bwd);
  const auto mf = t.messages_sent_per_rank(&fwd), mb = t.messages_sent_per_rank(&bwd);
  const auto rb = t.bytes_recv_per_rank(&bwd);
  rows.clear();
  for (index_t r = 0; r < P; ++r)
    rows.push_back({std::to_string(r), std::to_string(mf[r]), std::to_string(bf[r]), std::to_string(mb[r]), std::to_string(bb[r]), std::to_string(rb[r])});
  table({"rank", "fwd messages", "fwd bytes", "bwd messages", "bwd bytes sent", "bwd bytes recv"}, rows);
  show("forward, closed form (P-1) * B_kv", (P - 1) * b_kv);
  show("backward, closed form 2(P-1) * B_kv (KV P-1 hops, dKV P-1 hops)", 2 * (P - 1) * b_kv);
  show("backward messages per rank (kv, kv+dkv, kv+dkv, dkv)", mb[0]);
  const CommPerRank table_says = cp.comm_per_rank(e);  // the mode table's closed forms (mode_table.h)
  agrees("forward bytes (P-1) * B_kv", (P - 1) * b_kv, table_says.fwd_bytes);
  agrees("backward bytes 2(P-1) * B_kv", 2 * (P - 1) * b_kv, table_says.bwd_bytes);
  agrees("backward messages per rank", mb[0], table_says.bwd_msgs);

  L.step("dQ stays home; the backward does 2.5x the forward's FLOPs on the same tiles");
  bool q_home = true, same_tiles = true, no_dq_msg = true;
  for (const Event& ev : t.events()) {
    if (ev.kind == EventKind::tile && ev.phase == Phase::bwd) {
      const Event* fw = t.find(EventKind::tile, Phase::fwd, last - ev.step, ev.rank);
      same_tiles = same_tiles && fw->rows == ev.rows && fw->cols == ev.cols && fw->pairs == ev.pairs;
      for (const Span& sp : ev.rows)
        for (index_t k = 0; k < sp.count; ++k) q_home = q_home && part.owner(sp.begin + k * sp.stride).rank == ev.rank;
    }
    if (ev.kind == EventKind::send && ev.tensor.find("dq") != std::string::npos) no_dq_msg = false;
  }
  show("every backward tile's queries are its rank's own tokens (dQ accumulates in place)", yes(q_home));
  show("no message carries dQ", yes(no_dq_msg));
  show("backward step i computes the forward step 3-i's tile (same rows, cols, pairs)", yes(same_tiles));
  show("per-rank bwd FLOPs", list(rep.flops_bwd));
  show("bwd / fwd FLOPs (2 h pairs (3d + 2dv) over 2 h pairs (d + dv), d = dv)",
       static_cast<double>(rep.flops_bwd[0]) / static_cast<double>(rep.flops_fwd[0]));

  L.step("the gradients are exact (error vs dense attention, max|x - ref| / max|ref|)");
  show_errors(rep);
  const bool exact = rep.max_error() < 1e-12;
  show("every error below 1e-12", yes(exact));

  L.finish(6,
           {"cplab run --mode p2p --cp 4 --seq 32 --heads 4 --kv-heads 2 --head-dim 4 --causal --backward   (this run)",
            "cplab run --mode p2p --cp 8 --seq 131072 --heads 32 --kv-heads 8 --head-dim 128 --causal --backward --plan-only   (the same closed forms at 128K tokens, planned)"});
  return exact ? 0 : 1;
}
