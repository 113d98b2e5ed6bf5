// infer_spec.cpp: InferSpec's rules, index spaces and ownership (see infer_spec.h).
#include "infer/infer_spec.h"

#include <algorithm>
#include <cmath>
#include <iterator>

#include "core/attention_kernel.h"
#include "core/dense_attention.h"
#include "core/error.h"
#include "core/util.h"
#include "modes/cp_spec.h"

namespace cplab {

CacheLayout parse_cache_layout(const std::string& s) {
  if (s == "zigzag") return CacheLayout::zigzag;
  if (s == "interleaved") return CacheLayout::interleaved;
  throw Error("cache layout '" + s + "' is not one of: zigzag, interleaved");
}

std::string to_string(CacheLayout l) { return l == CacheLayout::zigzag ? "zigzag" : "interleaved"; }

index_t infer_owner(Layout layout, index_t L, index_t N, index_t t) {
  if (layout == Layout::striped) return t % N;
  const index_t K = layout == Layout::zigzag ? 2 * N : N;
  // chunk c = [floor(c*L/K), floor((c+1)*L/K)) holds t iff c = ceil((t+1)*K/L) - 1
  const index_t c = ((t + 1) * K - 1) / L;
  if (layout == Layout::contiguous) return c;
  return c < N ? c : 2 * N - 1 - c;
}

std::vector<index_t> parse_kv_cache(const std::string& text, index_t requests) {
  const std::vector<index_t> v = parse_int_list(text, "--kv-cache");
  require(!v.empty(), "--kv-cache needs a cache length P (or one per request: P0,P1,...)");
  for (index_t p : v) require(p >= 0, "--kv-cache " + num(p) + " must be >= 0 (cached tokens; 0: a full prefill)");
  if (v.size() == 1) return std::vector<index_t>(static_cast<size_t>(requests), v[0]);
  require(static_cast<index_t>(v.size()) == requests,
          "--kv-cache lists " + num(static_cast<index_t>(v.size())) + " cache lengths but there are " + num(requests) +
              " requests (give one length for all, or one per request)");
  return v;
}

namespace {

void check_fields(const InferFields& f) {
  check_cp_size(f.cp);
  require(!f.fresh.empty(), "an inference step needs at least one request with new tokens");
  require(f.cached.size() == f.fresh.size(), "the cache lengths (" + num(static_cast<index_t>(f.cached.size())) +
                                                 ") and new-token counts (" + num(static_cast<index_t>(f.fresh.size())) +
                                                 ") must name the same requests");
  require(static_cast<index_t>(f.fresh.size()) <= kMaxInferRequests,
          num(static_cast<index_t>(f.fresh.size())) + " requests is more than " + num(kMaxInferRequests) +
              ", the most one step takes");
  index_t total = 0;
  for (size_t b = 0; b < f.fresh.size(); ++b) {
    require(f.cached[b] >= 0, "--kv-cache " + num(f.cached[b]) + " must be >= 0 (cached tokens; 0: a full prefill)");
    require(f.fresh[b] >= 1, "request " + num(static_cast<index_t>(b)) + " has " + num(f.fresh[b]) +
                                 " new tokens; every request needs >= 1 (--seq T)");
    require(f.cached[b] <= kMaxPackedTokens && f.fresh[b] <= kMaxPackedTokens,
            "request " + num(static_cast<index_t>(b)) + " is longer than 2^40 tokens, the most cplab takes");
    total += f.cached[b] + f.fresh[b];
    require(total <= kMaxInferTokens, "the cache and new tokens of all requests add up to more than 2^28 = " +
                                          num(kMaxInferTokens) + " tokens, the most one inference step takes (the "
                                          "spec lists every token's row)");
  }
  require(f.v_head_dim >= 0, "v-head-dim " + num(f.v_head_dim) + " must be >= 1 (or 0 for = head-dim)");
  for (const auto& [v, name] :
       {std::pair{f.heads, "heads"}, {f.kv_heads, "kv-heads"}, {f.head_dim, "head-dim"}, {f.v_head_dim, "v-head-dim"}})
    require(v <= kMaxHeads, std::string(name) + " " + num(v) + " is more than " + num(kMaxHeads) +
                                " (cplab's limit on head counts and head dims)");
  const index_t dv = f.v_head_dim > 0 ? f.v_head_dim : f.head_dim;
  check_attention_shapes(1, f.heads, f.head_dim, 1, f.kv_heads, f.head_dim, 1, f.kv_heads, dv);
  require(f.scale >= 0 && std::isfinite(f.scale), "scale must be a finite number > 0 (or 0 for 1/sqrt(head-dim))");
  CpFields mask;  // the same mask rules as training (cp_spec.h check_mask_rules)
  mask.heads = f.heads;
  mask.causal = f.causal;
  mask.window = f.window;
  mask.chunk = f.chunk;
  mask.sinks = f.sinks;
  mask.sink_logits = f.sink_logits;
  check_mask_rules(mask);
}

}  // namespace

namespace {
InferFields default_fields() {
  InferFields f;
  f.cached = {64};
  f.fresh = {16};
  return f;
}
}  // namespace

InferSpec::InferSpec() : InferSpec(default_fields()) {}

InferSpec::InferSpec(InferFields f) : f_(std::move(f)) {
  check_fields(f_);
  const index_t N = f_.cp;
  const size_t B = f_.fresh.size();
  qoff_.assign(B + 1, 0);
  koff_.assign(B + 1, 0);
  for (size_t b = 0; b < B; ++b) {
    qoff_[b + 1] = qoff_[b] + f_.fresh[b];
    koff_[b + 1] = koff_[b] + f_.cached[b] + f_.fresh[b];
  }
  packing_ = Packing::unpadded(koff_);
  q_rows_.assign(static_cast<size_t>(N), {});
  q_kv_rows_.assign(static_cast<size_t>(N), {});
  kv_rows_.assign(static_cast<size_t>(N), {});
  const bool decode = info().decode_layout;
  for (size_t b = 0; b < B; ++b) {
    const index_t P = f_.cached[b], T = f_.fresh[b];
    for (index_t p = 0; p < P; ++p) {
      const index_t r = f_.cache_layout == CacheLayout::interleaved ? p % N : infer_owner(Layout::zigzag, P, N, p);
      kv_rows_[static_cast<size_t>(r)].push_back(koff_[b] + p);
    }
    for (index_t t = 0; t < T; ++t) {
      const index_t r = decode ? (P + t) % N : infer_owner(f_.layout, T, N, t);
      q_rows_[static_cast<size_t>(r)].push_back(qoff_[b] + t);
      q_kv_rows_[static_cast<size_t>(r)].push_back(koff_[b] + P + t);
      kv_rows_[static_cast<size_t>(r)].push_back(koff_[b] + P + t);
    }
  }
  for (index_t r = 0; r < N; ++r) {
    mq_ = std::max(mq_, static_cast<index_t>(q_rows_[static_cast<size_t>(r)].size()));
    mkv_ = std::max(mkv_, static_cast<index_t>(kv_rows_[static_cast<size_t>(r)].size()));
  }
}

double InferSpec::scale() const { return f_.scale > 0 ? f_.scale : default_scale(f_.head_dim); }

std::string InferSpec::mask_name() const {
  std::string m = f_.causal ? "causal" : (f_.window ? "" : "none");
  if (f_.window) m += (m.empty() ? "" : ", ") + std::string("window ") + num(*f_.window);
  if (f_.chunk) m += ", chunk " + num(*f_.chunk);
  if (f_.sinks) m += ", sinks";
  return m;
}

index_t InferSpec::kv_row_of_query(index_t i) const {
  const auto it = std::upper_bound(qoff_.begin(), qoff_.end(), i);
  const size_t b = static_cast<size_t>(it - qoff_.begin()) - 1;
  return koff_[b] + f_.cached[b] + (i - qoff_[b]);
}

std::vector<index_t> InferSpec::cache_rows(index_t r) const {
  std::vector<index_t> out;
  const std::vector<index_t>& kv = kv_rows(r);
  std::set_difference(kv.begin(), kv.end(), q_kv_rows(r).begin(), q_kv_rows(r).end(), std::back_inserter(out));
  return out;
}

CommPerRank InferSpec::comm_per_rank(index_t r, std::int64_t e) const {
  return info().comm(InferSizes{N(), static_cast<std::int64_t>(q_rows(r).size()), T(), mq_, mkv_, h(), hk(), d(), dv(), e});
}

}  // namespace cplab
