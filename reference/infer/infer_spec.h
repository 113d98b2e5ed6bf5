// infer_spec.h: InferSpec, THE description of one inference CP attention step, validated once.
//
// What it is: a batch of B requests; request b has P_b tokens in its persistent KV cache (earlier
// turns, or the prompt when decoding) and T_b new tokens at positions P_b .. P_b+T_b-1 that attend
// to the cache and to themselves (causal with an offset of P_b, and the run's window, chunk and
// sinks, over positions inside the request). Two index spaces, both global and request after
// request:
//   query space  the new tokens: request b's T_b rows at [qoff_b, qoff_b + T_b)   (q, O, LSE)
//   KV space     cache then new: request b's P_b + T_b rows at [koff_b, ...)      (k, v)
// so new token t of request b is query row qoff_b + t and KV row koff_b + P_b + t. Trace tiles
// name rows and cols by KV-space rows (a query by the KV row of its own token).
// Who holds what (each request split on its own, so every request is balanced; uneven sizes allowed):
//   cache, --cache-layout zigzag       the P_b tokens cut into 2N chunks, chunk c = [floor(c*P/2N),
//                                      floor((c+1)*P/2N)), rank r holding chunks r and 2N-1-r
//                                      (what the paper's zigzag prefills leave behind)
//   cache, --cache-layout interleaved  cache token p on rank p mod N (serving engines' decode layout)
//   new tokens, prefill variants       split by --layout the same way over T_b (zigzag: 2N chunks as
//                                      above; contiguous: N chunks; striped: token t on rank t mod N)
//   new tokens, decode variants        round-robin by position: token at position p on rank p mod N
// A new token's Q and its KV live on the same rank (the rank that projected it appends its KV to
// its cache shard). Every list is ascending; a rank may hold no new token (decode with T < N).
// Notation (the paper's): N ranks, P cached and T new tokens, h / hk query / KV heads, d / dv dims.
// What it is not: a training spec (modes/cp_spec.h) or a run (infer_run.h adds dtype, seed, limits).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/mask_rule.h"
#include "infer/infer_table.h"
#include "layout/layout.h"
#include "layout/thd.h"

namespace cplab {

enum class CacheLayout { zigzag, interleaved };
CacheLayout parse_cache_layout(const std::string& s);  // "zigzag" | "interleaved", else cplab::Error
std::string to_string(CacheLayout l);

// the most requests one step takes, and the most tokens (cache + new) over all of them: the spec
// lists every token's row (8 bytes each, a few times over), so it is bounded before any list is built
inline constexpr index_t kMaxInferRequests = 65536;
inline constexpr index_t kMaxInferTokens = index_t{1} << 28;

struct InferFields {
  InferMode mode = InferMode::pass_kv;
  Layout layout = Layout::zigzag;  // prefill variants: how each request's new tokens are split
  CacheLayout cache_layout = CacheLayout::zigzag;
  index_t cp = 4;                   // N
  std::vector<index_t> cached;      // P_b per request (>= 0); one entry per request
  std::vector<index_t> fresh;       // T_b per request (>= 1); same length as cached
  index_t heads = 8, kv_heads = 2, head_dim = 64, v_head_dim = 0;  // v_head_dim 0: = head_dim
  bool causal = true;
  std::optional<index_t> window, chunk;  // as CpFields (mask_rule.h PositionRule), over positions
  bool sinks = false;
  std::vector<double> sink_logits;  // empty with sinks: drawn from the run's seed
  double scale = 0;                 // 0: 1/sqrt(head_dim)
};

class InferSpec {
 public:
  // pass-KV over N = 4 ranks, one request of P = 64 cached and T = 16 new tokens, causal
  InferSpec();
  // validates f (cplab::Error naming the first rule it breaks) and derives the two index spaces
  // and who holds what
  explicit InferSpec(InferFields f);

  const InferFields& fields() const { return f_; }
  InferMode mode() const { return f_.mode; }
  const InferInfo& info() const { return infer_info(f_.mode); }
  index_t N() const { return f_.cp; }
  index_t B() const { return static_cast<index_t>(f_.cached.size()); }
  index_t T() const { return qoff_.back(); }    // all new tokens (query rows)
  index_t KV() const { return koff_.back(); }   // all KV rows (cache + new)
  index_t P_total() const { return KV() - T(); }
  index_t h() const { return f_.heads; }
  index_t hk() const { return f_.kv_heads; }
  index_t d() const { return f_.head_dim; }
  index_t dv() const { return f_.v_head_dim > 0 ? f_.v_head_dim : f_.head_dim; }
  double scale() const;
  PositionRule rule() const { return PositionRule{f_.causal, f_.window.value_or(0), f_.chunk.value_or(0)}; }
  bool sinks() const { return f_.sinks; }
  std::string mask_name() const;  // "causal", "causal, window 64", ... (+ ", sinks")

  // request offsets (B+1 entries each)
  const std::vector<index_t>& qoff() const { return qoff_; }
  const std::vector<index_t>& koff() const { return koff_; }
  // the KV rows as packed sequences (one per request, no padding): token_mask (thd.h) reads it
  const Packing& kv_packing() const { return packing_; }
  // KV row of query row i
  index_t kv_row_of_query(index_t i) const;

  // rank r's query rows (query space) and the KV rows of the same tokens, ascending
  const std::vector<index_t>& q_rows(index_t r) const { return q_rows_[static_cast<size_t>(r)]; }
  const std::vector<index_t>& q_kv_rows(index_t r) const { return q_kv_rows_[static_cast<size_t>(r)]; }
  // rank r's KV rows (its cache shard and its new tokens), ascending
  const std::vector<index_t>& kv_rows(index_t r) const { return kv_rows_[static_cast<size_t>(r)]; }
  // rank r's cache rows alone (KV space), ascending
  std::vector<index_t> cache_rows(index_t r) const;
  index_t Mq() const { return mq_; }    // the most new tokens any rank holds (pass-Q pads to it)
  index_t Mkv() const { return mkv_; }  // the most KV rows any rank holds (pass-KV pads to it)

  // the closed-form messages and bytes rank r sends, elements of e bytes
  CommPerRank comm_per_rank(index_t r, std::int64_t e) const;
  std::int64_t steps() const { return info().steps(f_.cp); }

 private:
  InferFields f_;
  std::vector<index_t> qoff_, koff_;
  Packing packing_;
  std::vector<std::vector<index_t>> q_rows_, q_kv_rows_, kv_rows_;
  index_t mq_ = 0, mkv_ = 0;
};

// "4" or "100,200": one cache length for every request, or one per request (--kv-cache); the
// request count comes from the new tokens (--seq T, or --cu-seqlens of the new tokens)
std::vector<index_t> parse_kv_cache(const std::string& text, index_t requests);

// which rank holds token t of L when a sequence of L tokens is split by layout over N ranks (the
// uneven rule above: zigzag 2N chunks, contiguous N chunks, striped t mod N)
index_t infer_owner(Layout layout, index_t L, index_t N, index_t t);

}  // namespace cplab
