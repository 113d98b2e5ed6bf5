// infer_model.cpp: an inference step's model for cplab-viz, built by the reference (see infer_model.h).
#include "infer_model.h"

#include "core/error.h"
#include "model.h"

namespace cplab::viz {

InferFields infer_fields(const VizParams& p) {
  const CpFields& c = p.cp;
  InferFields f;
  f.mode = parse_infer_mode(p.infer_mode);          // infer_table.h: the one parser of the names
  f.cache_layout = parse_cache_layout(p.cache_layout);
  f.layout = c.layout;
  f.cp = c.cp;
  if (c.cu_seqlens.empty()) {
    f.fresh = {c.seq};
  } else {  // the new tokens of each request, as --cu-seqlens gives them (cplab run --kv-cache does the same)
    for (size_t i = 1; i < c.cu_seqlens.size(); ++i) f.fresh.push_back(c.cu_seqlens[i] - c.cu_seqlens[i - 1]);
  }
  f.cached = parse_kv_cache(p.kv_cache, static_cast<index_t>(f.fresh.size()));
  double tokens = 0;  // in double: each term may be up to 2^40 (the spec's own rule comes after this one)
  for (size_t b = 0; b < f.cached.size() && b < f.fresh.size(); ++b) tokens += static_cast<double>(f.cached[b]) + static_cast<double>(f.fresh[b]);
  require(tokens <= static_cast<double>(kMaxVizInferTokens),
          "--kv-cache: the cache and new tokens add up to " + std::to_string(static_cast<long long>(tokens)) +
              ", more than the " + std::to_string(kMaxVizInferTokens) + " tokens cplab-viz draws an inference step of");
  f.heads = c.heads, f.kv_heads = c.kv_heads, f.head_dim = c.head_dim, f.v_head_dim = c.v_head_dim;
  f.causal = c.causal, f.window = c.window, f.chunk = c.chunk, f.sinks = c.sinks, f.sink_logits = c.sink_logits;
  f.scale = c.scale;
  return f;
}

InferModel InferModel::build(const VizParams& p) {
  InferRunSpec r{InferSpec(infer_fields(p))};  // every rule of the step, with its message
  r.dtype = p.dtype;
  InferModel m{r, infer_plan_trace(r), {}, {}, {}, {}, {}, {}};  // the dtype and the planner's work bound checked there
  m.steps = m.trace.steps();
  const InferSpec& s = m.spec();
  // the timeline's pair: the two variants of the same step with the same inputs
  const bool decode = s.info().decode_layout;
  for (InferMode mode : decode ? std::vector<InferMode>{InferMode::decode_pass_q, InferMode::decode_ag}
                               : std::vector<InferMode>{InferMode::pass_kv, InferMode::pass_q}) {
    InferFields f = s.fields();
    f.mode = mode;
    InferRunSpec pr{InferSpec(std::move(f))};
    pr.dtype = r.dtype;
    m.pair_traces.push_back(mode == s.mode() ? m.trace : infer_plan_trace(pr));
    m.pair_runs.push_back(std::move(pr));
  }
  m.query_of_kv.assign(static_cast<size_t>(s.KV()), -1);
  for (index_t i = 0; i < s.T(); ++i) m.query_of_kv[static_cast<size_t>(s.kv_row_of_query(i))] = i;
  m.q_owner.assign(static_cast<size_t>(s.T()), -1);
  m.kv_owner.assign(static_cast<size_t>(s.KV()), -1);
  for (index_t rk = 0; rk < s.N(); ++rk) {
    for (index_t i : s.q_rows(rk)) m.q_owner[static_cast<size_t>(i)] = static_cast<int>(rk);
    for (index_t k : s.kv_rows(rk)) m.kv_owner[static_cast<size_t>(k)] = static_cast<int>(rk);
  }
  return m;
}

}  // namespace cplab::viz
