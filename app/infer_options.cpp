// infer_options.cpp: --kv-cache, --cache-layout and the InferFields of a command line (infer_options.h).
#include "infer_options.h"

#include "core/error.h"
#include "layout/thd.h"

namespace cplab::app {

namespace {

// "--mode allgather": a training mode, or a word that is no mode at all (parse_infer_mode names those)
InferMode infer_mode_of(const std::string& name) {
  if (is_infer_mode(name)) return parse_infer_mode(name);
  bool training = false;
  try {
    parse_mode(name);
    training = true;
  } catch (const Error&) {
  }
  if (training)
    throw Error("--mode " + name +
                " is a training mode and cannot take a KV cache (--kv-cache): the inference modes are " +
                infer_mode_names() + " (p2p is pass-KV)");
  return parse_infer_mode(name);  // throws: "mode 'x' is not an inference mode: ..."
}

}  // namespace

void add_infer_options(CLI::App* sub, InferOptions& o) {
  o.kv_cache_opt =
      sub->add_option("--kv-cache", o.kv_cache,
                      "inference: P tokens already in a persistent KV cache, one value for all requests\n"
                      "or P0,P1,... one per request (--cu-seqlens packs the requests' NEW tokens); --seq T\n"
                      "new tokens at positions P..P+T-1 attend to the cache and themselves. Modes: p2p\n"
                      "(pass-KV), pass-q, decode-pass-q, decode-ag (docs/inference.md); 0: a full prefill");
  o.cache_layout_opt =
      sub->add_option("--cache-layout", o.cache_layout,
                      "with --kv-cache: how the cache is sharded: zigzag (2N chunks per request, rank r\n"
                      "holding r and 2N-1-r) | interleaved (cache token p on rank p mod N)")
          ->capture_default_str();
}

bool infer_wanted(const CpOptions& cp, const InferOptions& io) {
  const bool kv = io.kv_cache_opt && io.kv_cache_opt->count() > 0;
  if (!kv && cp.mode != "p2p" && is_infer_mode(cp.mode))
    throw Error("--mode " + cp.mode + " is an inference mode: give --kv-cache P (0 for a full prefill)");
  if (!kv && io.cache_layout_opt && io.cache_layout_opt->count() > 0)
    throw Error("--cache-layout is for an inference step: it needs --kv-cache P");
  return kv;
}

InferFields infer_fields(const CpOptions& cp, const InferOptions& io, bool backward) {
  require(!backward, "--backward cannot go with --kv-cache: an inference step has no backward (forward only)");
  InferFields f;
  f.mode = infer_mode_of(cp.mode);
  // the training options that mean nothing for a step over a cache, refused rather than ignored
  require(!cp.given("hcp"), "--hcp is for --mode a2a+p2p (training); it cannot go with --kv-cache");
  require(!cp.given("replicate-kv"),
          "--replicate-kv is for the all-to-all of a2a (training); it cannot go with --kv-cache");
  require(!cp.given("pad"),
          "--pad cannot go with --kv-cache: the inference variants split uneven requests themselves "
          "(infer_spec.h: 2N chunks floor(c*L/2N), or position mod N) and pad their messages as the paper does");
  require(cp.merge == "streaming", "--merge " + cp.merge +
                                       " cannot go with --kv-cache: TE's post-loop fold is a training merge; "
                                       "each inference variant merges its partials by its own rule (infer_table.h)");
  const InferInfo& info = infer_info(f.mode);
  require(!(info.decode_layout && cp.given("layout")),
          "--layout cannot go with --mode " + cp.mode +
              ": the decode variants place the new tokens round-robin by position "
              "(token at position p on rank p mod N); --layout splits the new tokens of the prefill variants p2p and "
              "pass-q");
  f.layout = parse_layout(cp.layout);
  f.cache_layout = parse_cache_layout(io.cache_layout);
  // the requests' new tokens: --cu-seqlens (cumulative), else one request of --seq
  require(!cp.given("cu-seqlens") || !cp.cu.empty(), "--cu-seqlens needs a value, got an empty string");
  if (!cp.cu.empty()) {
    const std::vector<index_t> cu = parse_cu_seqlens(cp.cu);
    require(!cp.given("seq") || cp.seq == cu.back(), "--seq " + std::to_string(cp.seq) + " disagrees with the " +
                                                         std::to_string(cu.back()) + " new tokens --cu-seqlens packs");
    for (size_t b = 0; b + 1 < cu.size(); ++b) f.fresh.push_back(cu[b + 1] - cu[b]);
  } else {
    f.fresh = {cp.seq};
  }
  require(!io.kv_cache.empty(), "--kv-cache needs a value, got an empty string");
  f.cached = parse_kv_cache(io.kv_cache, static_cast<index_t>(f.fresh.size()));
  f.cp = cp.f.cp;
  f.heads = cp.f.heads, f.kv_heads = cp.f.kv_heads, f.head_dim = cp.f.head_dim, f.v_head_dim = cp.f.v_head_dim;
  f.causal = cp.f.causal;
  f.scale = cp.f.scale;
  // the mask options through their one reader (mask_options.h), then copied over
  CpFields m;
  m.causal = cp.f.causal;
  apply_mask_options(cp.mask, m);
  f.window = m.window, f.chunk = m.chunk, f.sinks = m.sinks, f.sink_logits = m.sink_logits;
  return f;
}

std::string join_counts(const std::vector<index_t>& v) {
  std::string s;
  for (size_t i = 0; i < v.size(); ++i) s += (i ? "," : "") + std::to_string(v[i]);
  return s;
}

}  // namespace cplab::app
