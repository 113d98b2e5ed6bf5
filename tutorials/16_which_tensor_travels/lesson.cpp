// 16_which_tensor_travels: why a ring passes KV in training, and when passing Q is cheaper.
//
// What it is: lesson 16's program (issue 37). One attention step of serving: T new tokens over a
// persistent KV cache of P tokens, sharded over N ranks (reference/infer/infer_spec.h). Step 1:
// training's forward is the step with P = 0: pass-KV (the ring of lessons 3-6) and pass-Q (Q blocks
// travel, KV stays, an all-to-all returns the partial outputs) both run and match dense attention,
// and the trace's bytes show why KV travels: with GQA (8 query heads over 2 KV heads) the KV block
// is the smaller tensor, and Q would need its partial outputs sent back. Step 2: a follow-up
// prefill over a growing cache: the bytes of both variants from their planned traces
// (infer_plan_trace) against T/(T+P), and the rule of Yang et al., "Context Parallelism for Scalable
// Million-Token Inference" (arXiv 2411.01783, Algorithm 1): pass-KV when T/(T+P) >= 2 NKV / NH.
// Step 3: decode (T = 1 per request): the ring decode (decode-pass-q) against all-gather-Q decode
// (decode-ag), and what pass-KV would move instead.
// What it is not: a time model (cplab plan prices these traces); every byte printed is a trace's,
// every closed form checked against it (agrees), every error run_infer's against dense attention.
#include <algorithm>
#include <cstdio>

#include "infer/infer_plan.h"
#include "infer/infer_run.h"
#include "lesson.h"

using namespace cplab;
using namespace cplab::lesson;

namespace {

const index_t kN = 4, kHeads = 8, kKvHeads = 2, kHeadDim = 64;  // a ring of 4; GQA 8 query heads over 2 KV heads
const std::int64_t kE = 8;                                       // double: 8 bytes per element

InferRunSpec step_spec(InferMode mode, std::vector<index_t> cached, std::vector<index_t> fresh,
                       CacheLayout cache = CacheLayout::zigzag) {
  InferFields f;
  f.mode = mode, f.layout = Layout::zigzag, f.cache_layout = cache, f.cp = kN;
  f.cached = std::move(cached), f.fresh = std::move(fresh);
  f.heads = kHeads, f.kv_heads = kKvHeads, f.head_dim = kHeadDim, f.causal = true;
  return InferRunSpec{InferSpec(std::move(f))};  // double
}

// bytes rank r sends in a trace, by collective ("p2p" = the ring's messages)
std::int64_t bytes_of(const Trace& t, int r, const std::string& op) {
  std::int64_t b = 0;
  for (const Event& e : t.events())
    if (e.kind == EventKind::send && e.rank == r && (op.empty() || e.op == op)) b += e.bytes;
  return b;
}
std::int64_t most(const Trace& t, const std::string& op = "") {
  std::int64_t b = 0;
  for (int r = 0; r < t.cp(); ++r) b = std::max(b, bytes_of(t, r, op));
  return b;
}
// every rank's bytes in the trace equal the variant's closed form (infer_table.h)
void closed_form_agrees(const InferRunSpec& s, const Trace& t) {
  for (int r = 0; r < t.cp(); ++r)
    agrees(to_string(s.spec.mode()) + " bytes of rank " + std::to_string(r), s.spec.comm_per_rank(r, kE).fwd_bytes, bytes_of(t, r, ""));
}
std::string per_rank(const Trace& t, const std::string& op) {
  std::vector<std::int64_t> v;
  for (int r = 0; r < t.cp(); ++r) v.push_back(bytes_of(t, r, op));
  return list(v);
}
std::string ratio(double a, double b) { return fmt(a / b); }

// run the step on the simulated ranks and print its error against dense attention and its bytes
InferReport run_and_show(const InferRunSpec& s) {
  const InferReport rep = run_infer(s, make_infer_inputs(s));
  std::printf("%-14s within 1e-12 of dense attention: %s; bytes sent per rank %s\n", to_string(s.spec.mode()).c_str(),
              yes(rep.max_error() <= 1e-12).c_str(), per_rank(rep.trace, "").c_str());
  closed_form_agrees(s, rep.trace);
  return rep;
}

}  // namespace

int main(int argc, char** argv) {
  Lesson L(argc, argv, "Lesson 16: which tensor travels? pass-KV, pass-Q and decode",
           "A ring can pass KV or Q. Training passes KV; with a long KV cache, Q is the smaller tensor.");

  L.step("training's forward, as an inference step with no cache (P = 0)");
  std::printf("A ring of %lld ranks, T = 256 tokens (zigzag), %lld query heads over %lld KV heads of dim %lld, causal,\n"
              "double (8 bytes per element). pass-KV: each rank's K and V travel the ring (lessons 3-6). pass-Q: each\n"
              "rank's Q travels instead, KV stays, and every partial (O, LSE) a rank computed for a visiting Q block\n"
              "goes back to the block's owner in one all-to-all at the end. Both are exact:\n",
              static_cast<long long>(kN), static_cast<long long>(kHeads), static_cast<long long>(kKvHeads),
              static_cast<long long>(kHeadDim));
  const InferReport kv0 = run_and_show(step_spec(InferMode::pass_kv, {0}, {256}));
  const InferReport q0 = run_and_show(step_spec(InferMode::pass_q, {0}, {256}));
  const std::int64_t kv_msg = 64 * kKvHeads * (kHeadDim + kHeadDim) * kE, q_msg = 64 * kHeads * kHeadDim * kE;
  std::printf("one ring message: a KV block = 64 tokens x %lld KV heads x (d + dv) x 8 = %lld bytes;\n"
              "                  a Q block  = 64 tokens x %lld heads x d x 8          = %lld bytes\n",
              static_cast<long long>(kKvHeads), static_cast<long long>(kv_msg), static_cast<long long>(kHeads), static_cast<long long>(q_msg));
  agrees("a KV block's bytes", kv_msg, bytes_of(kv0.trace, 0, "p2p") / (kN - 1));
  agrees("a Q block's bytes", q_msg, bytes_of(q0.trace, 0, "p2p") / (kN - 1));
  show("pass-KV, ring bytes per rank", most(kv0.trace, "p2p"));
  show("pass-Q, ring bytes per rank", most(q0.trace, "p2p"));
  show("pass-Q, all-to-all bytes per rank (the partial outputs)", most(q0.trace, "all_to_all"));
  show("pass-Q / pass-KV, all bytes", ratio(static_cast<double>(most(q0.trace)), static_cast<double>(most(kv0.trace))));
  std::printf("With GQA the KV block (2 heads x (d + dv)) is half the Q block (8 heads x d), and pass-Q must also\n"
              "return every partial output it computed for another rank's queries (h x (dv + 1) per query, the size\n"
              "of a Q row and one more value per head): about as many bytes again as its ring. KV travels.\n");

  L.step("a follow-up prefill over a long cache: the flip");
  std::printf("T = 64 new tokens over P cached ones (the cache zigzag-sharded as earlier prefills left it), same ring.\n"
              "pass-KV sends the P + T rows of KV around the ring; pass-Q only the T rows of Q, plus the all-to-all.\n"
              "Bytes per rank from each variant's planned trace (the most any rank sends):\n");
  const double rule = 2.0 * static_cast<double>(kKvHeads) / static_cast<double>(kHeads);
  std::vector<std::vector<std::string>> rows;
  for (index_t P : {0, 64, 192, 448, 960, 1984, 4032}) {
    const InferRunSpec kv = step_spec(InferMode::pass_kv, {P}, {64}), q = step_spec(InferMode::pass_q, {P}, {64});
    const Trace tkv = infer_plan_trace(kv), tq = infer_plan_trace(q);
    closed_form_agrees(kv, tkv);
    closed_form_agrees(q, tq);
    const double frac = 64.0 / static_cast<double>(64 + P);
    const std::int64_t ring_kv = most(tkv, "p2p"), ring_q = most(tq, "p2p"), all_q = most(tq);
    rows.push_back({std::to_string(P), fmt(frac), std::to_string(ring_kv), std::to_string(ring_q), std::to_string(most(tq, "all_to_all")),
                    std::to_string(all_q), ring_q < ring_kv ? "Q" : ring_q == ring_kv ? "equal" : "KV",
                    all_q < ring_kv ? "pass-q" : "p2p", frac >= rule ? "pass-KV" : "pass-Q"});
  }
  table({"P", "T/(T+P)", "pass-KV", "pass-Q ring", "+ all-to-all", "pass-Q all", "smaller ring msg", "fewer bytes", "paper's rule"}, rows);
  show("2 NKV / NH", rule);
  std::printf("The ring messages alone: pass-Q / pass-KV = (T / (T+P)) x NH / (2 NKV), so Q is the smaller tensor\n"
              "exactly when T/(T+P) < 2 NKV / NH: the paper's rule (its Algorithm 1 also passes KV when T is large\n"
              "enough for the ring to hide behind compute). The all-to-all of partials moves the crossover to a\n"
              "longer cache; cplab plan prices both on a link and a GPU. pass-Q over the longest cache, run:\n");
  run_and_show(step_spec(InferMode::pass_q, {4032}, {64}));

  L.step("decode: one new token per request");
  std::printf("8 requests with caches of 1000 to 1007 tokens, 1 new token each. The cache is interleaved (token p on\n"
              "rank p mod 4, as serving engines keep a decode cache) and so are the new tokens (position p on rank\n"
              "p mod 4): here two on each rank. decode-pass-q: the Q ring; decode-ag: every rank gathers all Q,\n"
              "attends to its shard, and one all-to-all returns the partials.\n");
  const std::vector<index_t> caches = {1000, 1001, 1002, 1003, 1004, 1005, 1006, 1007}, ones(8, 1);
  const InferReport dq = run_and_show(step_spec(InferMode::decode_pass_q, caches, ones, CacheLayout::interleaved));
  const InferReport dag = run_and_show(step_spec(InferMode::decode_ag, caches, ones, CacheLayout::interleaved));
  const InferRunSpec pkv = step_spec(InferMode::pass_kv, caches, ones, CacheLayout::interleaved);
  const Trace tpkv = infer_plan_trace(pkv);
  closed_form_agrees(pkv, tpkv);
  rows.clear();
  for (const auto& [name, t] : {std::pair<std::string, const Trace*>{"decode-pass-q", &dq.trace}, {"decode-ag", &dag.trace}, {"p2p (pass-KV)", &tpkv}}) {
    std::int64_t msgs = 0;
    for (std::int64_t x : t->messages_sent_per_rank()) msgs = std::max(msgs, x);
    rows.push_back({name, std::to_string(t->steps().size()), std::to_string(msgs), std::to_string(most(*t))});
  }
  table({"variant", "steps", "messages per rank", "bytes per rank"}, rows);
  show("decode-ag / decode-pass-q, bytes", ratio(static_cast<double>(most(dag.trace)), static_cast<double>(most(dq.trace))));
  show("pass-KV / decode-pass-q, bytes", ratio(static_cast<double>(most(tpkv)), static_cast<double>(most(dq.trace))));
  std::printf("With T = 1 the cache is everything and Q almost nothing: passing KV would move the whole cache for\n"
              "a token per request. Both decode variants move Q and partials only, the same bytes here; the ring\n"
              "takes N steps of small messages, the gather and the all-to-all two collectives (the route of vLLM's\n"
              "decode context parallelism), where each step's fixed latency, not its bytes, is the cost.\n");

  L.finish(16, {"cplab run --mode p2p --cp 4 --seq 256 --heads 8 --kv-heads 2 --head-dim 64 --causal --dtype double   "
                "(step 1's pass-KV as the training forward it is: the same bytes per rank)"});
  return 0;
}
