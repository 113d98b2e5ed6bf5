// infer_table.h: THE table of inference CP variants (one attention step of serving: T new tokens
// over a persistent KV cache of P tokens, sharded over N ranks), as mode_table.h is for training.
//
// What it is: InferMode and one InferInfo per variant: its --mode spelling, title, what travels,
// how the new tokens are placed, its step count and its closed-form messages and bytes per rank
// (tests/test_infer.cpp checks every run's trace against them; docs/modes.md's inference table is
// written from the readme[] columns). The variants (Yang et al., "Context Parallelism for Scalable
// Million-Token Inference", arXiv 2411.01783, MLSys 2025; vLLM's decode context parallelism):
//   p2p            pass-KV: the ring of training; every rank's KV (cache shard + new tokens) travels,
//                  padded to the largest shard as the paper does, N steps, partials merged on the
//                  spot (infer_pass_kv.cpp)
//   pass-q         pass-Q: Q blocks (padded to the largest) travel the ring and KV stays put; each
//                  rank keeps the partial (O, LSE) of every visiting Q block, and one all-to-all
//                  after the ring returns them to their owners, who merge them (infer_pass_q.cpp)
//   decode-pass-q  pass-Q ring decode: the same ring, the new tokens placed round-robin (position
//                  p on rank p mod N) so that no rank's cache fills first
//   decode-ag      all-gather-Q decode: every rank gathers every new token's Q, attends to its own
//                  cache shard, and one all-to-all returns the partials to the owners
//                  (infer_decode_ag.cpp)
// Step numbering (the trace's): ring variants 0..N-1 (+ step N: the all-to-all, pass-Q only, when
// N > 1); decode-ag 0 all-gather Q, 1 tiles, 2 all-to-all.
// What it is not: a training mode (mode_table.h; inference has no backward) or validation
// (infer_spec.h).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "modes/mode_table.h"

namespace cplab {

enum class InferMode { pass_kv, pass_q, decode_pass_q, decode_ag };

// The sizes the closed forms read, for one rank r of N: n_r its new tokens (its queries), T all
// new tokens, Mq the most new tokens any rank holds, Mkv the most KV tokens (cache + new) any rank
// holds, h / hk query / KV heads, d / dv head dims, e bytes per element.
struct InferSizes {
  std::int64_t N = 1, n_r = 0, T = 0, Mq = 0, Mkv = 0, h = 0, hk = 0, d = 0, dv = 0, e = 8;
};

struct InferInfo {
  InferMode mode;
  const char* name;    // the --mode spelling
  const char* title;   // the inference table's first column
  const char* travels; // "KV" | "Q": what the ring (or the gather) moves
  bool decode_layout;  // new tokens round-robin by position (true) or split by --layout (false)
  bool ring;           // a ring of N steps (false: gather, compute, all-to-all)
  std::int64_t (*steps)(std::int64_t N);    // trace steps (0 .. steps-1)
  CommPerRank (*comm)(const InferSizes&);   // forward messages and bytes rank r sends (bwd: 0)
  const char* readme[2];                    // the closed forms as docs write them (messages, bytes)
};

const std::vector<InferInfo>& infer_table();
const InferInfo& infer_info(InferMode m);
// the --mode spelling to the enum; cplab::Error "mode 'x' is not an inference mode: p2p, pass-q, ..."
InferMode parse_infer_mode(const std::string& name);
bool is_infer_mode(const std::string& name);
std::string to_string(InferMode m);
std::string infer_mode_names();  // "p2p, pass-q, decode-pass-q, decode-ag"
// docs/modes.md's inference communication table (markdown rows, header first)
std::string infer_comm_table_markdown();

}  // namespace cplab
