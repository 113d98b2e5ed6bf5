// infer_model.h: what cplab-viz shows of an inference step (issue 37), built once by the reference.
//
// What it is: InferModel, an inference CP step (T new tokens over a persistent KV cache of P
// tokens sharded over N ranks: reference/infer/infer_spec.h) as the views draw it: the
// InferRunSpec constructed, and so validated, once from the viz options (VizParams's kv_cache,
// infer_mode, cache_layout beside the run's cp, seq or cu_seqlens, heads, mask), the trace
// infer_plan_trace records for it (reference/infer/infer_plan.h: the events run_infer would
// record, without computing attention), and for the timeline the planned traces of the two variants
// the step chooses between (prefill: pass-KV `p2p` and `pass-q`; decode: `decode-pass-q` and
// `decode-ag`), each of the same step. Who holds which token and which tiles are computed are the
// spec's and the trace's; nothing here derives them again. The only index map built here is the
// inverse of InferSpec::kv_row_of_query (a KV row -> the query row of the same new token), so that
// a tile's rows (KV-space rows, infer_spec.h) are drawn on the T query rows.
// What it is not: drawing (views_infer.h) or a time model (cplab plan's inference model prices the
// traces; the views show their messages, bytes and FLOPs).
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "infer/infer_plan.h"
#include "infer/infer_run.h"
#include "sim/trace.h"

namespace cplab::viz {

struct VizParams;

// the most tokens (cache + new, all requests) cplab-viz draws an inference step of: the spec, the
// planned traces and the views hold a few words per token (about 1 GB at this bound) and walk every
// token per frame; refused above it by name before anything is allocated
inline constexpr index_t kMaxVizInferTokens = index_t{1} << 24;

struct InferModel {
  InferRunSpec run;  // the step drawn
  Trace trace;       // infer_plan_trace(run)
  std::vector<std::pair<Phase, int>> steps;  // trace.steps()
  // the timeline's two variants of the same step (prefill: p2p and pass-q; decode: decode-pass-q and
  // decode-ag), their planned traces
  std::vector<InferRunSpec> pair_runs;
  std::vector<Trace> pair_traces;
  // per KV row: the query row of its token when it is a new token, else -1 (a cached token)
  std::vector<index_t> query_of_kv;
  // per query row / per KV row: the rank that holds it (the spec's q_rows / kv_rows)
  std::vector<int> q_owner, kv_owner;

  const InferSpec& spec() const { return run.spec; }
  // throws cplab::Error naming the rule the options break
  static InferModel build(const VizParams& p);
};

// the InferFields the viz options give (throws cplab::Error: --kv-cache's list, the mode's name)
InferFields infer_fields(const VizParams& p);

}  // namespace cplab::viz
