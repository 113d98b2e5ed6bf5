// sampled_attention.h: attention recomputed on chosen query rows or key columns, under the true
// rule or a faulted one, for the hypotheses of cplab check (hypotheses.h).
//
// What it is: AttnRule (the softmax scale, a causal mask shifted by one key either way, and the
// KV head of each query head: i / (h / hk) as PyTorch and cplab map it, or i % hk; the mask over
// positions replaced (a mask dropped, causal added); the sequence boundaries taken from the padded
// offsets or the real lengths; each rank's queries seeing only their own rank's KV block, or it
// unmasked), the mask it gives between any query positions and sorted key positions (packed
// sequences: same sequence, real keys), and four recomputations in double, each the tested kernel
// of core/attention_kernel.h run on gathered tokens with that mask (no new arithmetic; a rule on
// KV blocks runs it once per (query rank, KV block) tile and merges the partials, core/merge.h):
//   forward_at    O and LSE of some query rows over all keys or a sorted subset of them (a ring
//                 step's KV block: its partial result)
//   score_max_at  the largest score scale * q.k each row sees, over all keys or a sorted subset (an
//                 LSE computed without the max; a ring step's block maximum)
//   dq_at         dQ of some rows, from those rows' O and LSE (what the backward reads), over all keys
//                 or a sorted subset (one ring step's share), optionally with another block's K and V
//                 read at the subset's positions (a stale KV buffer)
//   dkv_at        dK and dV of some keys: the contributions of the given queries (all of them: the
//                 whole gradient; one rank's: its share before the cross-rank reduction)
// and the ring's bookkeeping: block_partials (every rank's KV block's partial result at some rows)
// and ring_kv_block (the block rank r holds at ring step i).
// Rows and keys are global token positions; results are (rows, heads, dim), LSE (rows, heads, 1).
// With attention sinks (in.sinks) a forward over all keys includes them; the backward ones read the
// final (sink-including) O and LSE they are given, which is all a sink changes there (sinks.h).
// What it is not: a CP mode, or fast: the cost is rows x keys, so callers pass samples.
#pragma once

#include <optional>
#include <vector>

#include "core/mask.h"
#include "modes/cp_spec.h"
#include "run/experiment.h"

namespace cplab {

// which sequence a packed token belongs to
enum class SeqBounds {
  real,      // cu_seqlens within cu_seqlens_padded's offsets (padding belongs to no sequence)
  padded,    // cu_seqlens_padded as the sequences: padding tokens are real tokens of theirs
  unpadded,  // cu_seqlens as the buffer's offsets (no padding between sequences assumed): every
             // sequence after the first shifted by the padding before it; tokens past cu.back() are padding
};
// which KV blocks (a rank's tokens, partition().indices) the queries of a rank see
enum class KvBlocks {
  all,           // every block, under the rule
  own_only,      // their own rank's block only (the ring or all-gather bypassed: local attention)
  own_unmasked,  // every block, their own one without the mask over positions (same sequence only)
};

struct AttnRule {
  double scale = 0;       // the softmax scale used
  int causal_shift = 0;   // causal masks only: key k visible to query q iff k <= q + shift (0: the true mask)
  int window_shift = 0;   // sliding windows only: a window of W + shift keys instead of W (0: the true mask)
  bool head_mod = false;  // query head i reads KV head i % hk instead of i / (h / hk)
  // another KV head count: only the first kv_heads of the inputs' KV heads are read, query head i
  // reads KV head i / (h / kv_heads) (0: the spec's own; a divisor of it)
  index_t kv_heads = 0;
  std::optional<PositionRule> positions;  // the mask over positions used instead of spec.rule()
  SeqBounds bounds = SeqBounds::real;
  KvBlocks blocks = KvBlocks::all;
};
AttnRule true_rule(const CpSpec& spec);  // scale spec.scale(), no shift, i / (h / hk)

// the global keys query g sees under rule (its sequence's keys; causal: up to g + shift), before
// rule.blocks: a superset of them for own_only; own_unmasked adds g's sequence's keys in its rank
KeyRange visible_keys(const CpSpec& spec, const AttnRule& rule, index_t g);
// the rule of a query rank's tile against its own KV block (blocks resolved to all)
AttnRule own_block_rule(const AttnRule& rule);
// the ranges mask between query positions q (any order) and sorted key positions k under rule
// (rule.blocks ignored: the recomputations below split a rule on KV blocks into tiles first)
Mask rule_mask(const CpSpec& spec, const AttnRule& rule, const std::vector<index_t>& q, const std::vector<index_t>& k);

// the tokens of x (n, h, d) at positions, in that order
Tensor3<double> gather(const Tensor3<double>& x, const std::vector<index_t>& positions);

struct RowsOut {
  Tensor3<double> o;    // (rows, h, dv)
  Tensor3<double> lse;  // (rows, h, 1); -inf for a row that sees no key
};
// keys: sorted positions, or null for all keys (then with in.sinks, if any, in each row's softmax:
// core/sinks.h apply_sinks on the row's final result; a partial over a key subset has none)
RowsOut forward_at(const CpSpec& spec, const Inputs& in, const AttnRule& rule, const std::vector<index_t>& rows,
                   const std::vector<index_t>* keys = nullptr);
// the sinks (h) merged once into rows' final (O, LSE) (core/sinks.h apply_sinks)
void apply_row_sinks(RowsOut& x, const std::vector<double>& sinks);
// (rows, h, 1); keys: sorted positions, or null for all keys; -inf for a row that sees none of them
Tensor3<double> score_max_at(const CpSpec& spec, const Inputs& in, const AttnRule& rule, const std::vector<index_t>& rows,
                             const std::vector<index_t>* keys = nullptr);
// fwd: O and LSE of `rows` (forward_at's, or the reference's gathered; O only gives D = rowsum(dO * O));
// keys: sorted positions the mask sees (null: all keys); kv_from: the tokens whose K and V are read at
// those positions, one per key (null: the keys' own)
Tensor3<double> dq_at(const CpSpec& spec, const Inputs& in, const AttnRule& rule, const std::vector<index_t>& rows,
                      const RowsOut& fwd, const std::vector<index_t>* keys = nullptr,
                      const std::vector<index_t>* kv_from = nullptr);
struct KeyGrads {
  Tensor3<double> dk, dv;  // (keys, hk, d), (keys, hk, dv)
};
// the contributions of `queries` (their O and LSE in fwd) to dK, dV at the sorted positions `keys`
KeyGrads dkv_at(const CpSpec& spec, const Inputs& in, const AttnRule& rule, const std::vector<index_t>& queries,
                const RowsOut& fwd, const std::vector<index_t>& keys);

// the KV block of ring p2p rank r at step i (it holds the KV of rank r - i)
inline index_t ring_kv_block(index_t r, index_t i, index_t P) { return ((r - i) % P + P) % P; }
// block j's partial result (O_j, LSE_j) at `rows` for every rank j's KV block (spec.partition()),
// under the true rule and without sinks
std::vector<RowsOut> block_partials(const CpSpec& spec, const Inputs& in, const std::vector<index_t>& rows);

}  // namespace cplab
