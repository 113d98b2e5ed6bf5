// cp_spec.h: CpSpec, THE description of one context-parallel attention layer, validated once.
//
// What it is: the mode (mode_table.h), layout, cp = P ranks (and I x O for a2a+p2p), heads,
// head dims, mask (causal or not, a sliding window or chunks: mask_rule.h PositionRule; attention
// sinks on or off), softmax scale, merge, and the token stream: either one sequence
// of S tokens or packed sequences (cu_seqlens, padded to the layout's factor with pad). A caller
// fills in CpFields and constructs a CpSpec from them; the constructor checks every rule (naming
// the rule it broke, as a cplab::Error) and derives, once, S (the packed total when packed), the
// Packing, the Partition (layout.h) and the hops its ring makes (ring_schedule.h). Every consumer (the CPU modes, the trace planner, the GPU
// host code, the benchmark, the CLI, the viz, the tutorials) reads this one value; none keeps a
// second copy of its fields or re-derives S. To change a field, copy fields(), edit, and construct
// a new CpSpec (which is validated again).
// Notation (the paper's): P ranks, S tokens, n = S/P per rank, h / hk query / KV heads, d / dv
// head dims.
// What it is not: a run (run/experiment.h adds the harness: dtype, seed, backward, limits of the
// CPU reference) or a GPU run (cuda/cp/cp_spec.h adds dtype and kernel).
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "core/dtype.h"
#include "core/merge.h"
#include "layout/layout.h"
#include "layout/thd.h"
#include "modes/mode_table.h"

namespace cplab {

// The cp-size rule (1 <= P <= kMaxRanks) is check_cp_size in layout/layout.h: CpSpec applies it
// first, and so does every layout function that takes a cp.
// The other sizes' upper limits, also checked before anything is derived from them: seq <= 2^40
// tokens (kMaxPackedTokens, as a packed batch), heads, kv-heads, head-dim and v-head-dim <=
// kMaxHeads (far above any model; sums and products of two of them cannot overflow, and the
// harness's memory and work estimates see the sizes as given).
inline constexpr index_t kMaxHeads = 65536;
// --window and --chunk are at most this (a C int, as FlashAttention's window_size takes them)
inline constexpr index_t kMaxWindow = 2147483647;

// What a caller fills in. Defaults: 8 query heads over 2 KV heads of dim 64, zigzag over 4 ranks.
struct CpFields {
  Mode mode = Mode::p2p;
  Layout layout = Layout::zigzag;
  index_t cp = 4;
  index_t icp = 0, ocp = 0;  // a2a+p2p: inner all-to-all size x outer ring size (= cp)
  index_t seq = 0;           // tokens, <= 2^40; 0 with cu_seqlens: their packed total (required otherwise)
  index_t heads = 8, kv_heads = 2, head_dim = 64, v_head_dim = 0;  // v_head_dim 0: = head_dim
  bool causal = false;
  // mask_rule.h PositionRule, over positions (inside their sequence when packed); unset: none.
  //   window W (1 <= W <= kMaxWindow): with causal query i sees key j iff i - W < j <= i
  //            (FlashAttention's window_size = (W-1, 0)); without, iff |i - j| < W
  //   chunk C (1 <= C <= kMaxWindow, causal only): iff j <= i and floor(i/C) == floor(j/C)
  //   not both
  std::optional<index_t> window, chunk;
  // attention sinks (gpt-oss): one learnable logit s_h per query head in every row's softmax
  // denominator, nothing added to the output. sink_logits: the values (heads of them, finite);
  // empty: drawn from the run's seed (run/experiment.h make_inputs)
  bool sinks = false;
  std::vector<double> sink_logits;
  double scale = 0;  // 0: 1/sqrt(head_dim)
  MergeKind merge = MergeKind::streaming;
  // the ring's results between steps as a GPU implementation stores them (p2p and a2a+p2p only;
  // emulated, round to nearest even): each step's partial O, dQ, dK, dV rounded to partials_dtype
  // (kernels write their outputs in the input dtype), the running sums across steps (the streaming
  // merge's O, the dQ and the travelling dK, dV accumulators) to merge_dtype (fp32, or bf16 where an
  // implementation accumulates in the input dtype: ring-flash-attention #42). LSE stays in the run's
  // arithmetic. Unset: no rounding (the run's arithmetic dtype throughout).
  std::optional<DType> partials_dtype, merge_dtype;
  std::vector<index_t> cu_seqlens;  // packed sequences (THD); empty: one sequence of seq tokens
  bool pad = false;                 // pad every packed sequence to the layout's factor
  bool replicate_kv = false;        // a2a, a2a+p2p: repeat KV heads when fewer than the a2a group
};

// The mask rules alone (CpSpec's constructor applies them; cplab plan too): window and chunk, when
// set, in [1, kMaxWindow], not both, chunk only with causal; sink_logits only with sinks, one per
// head, finite. cplab::Error naming the rule.
void check_mask_rules(const CpFields& f);

// --hcp ICP,OCP (cplab run, cplab-viz, cplab-bench cp): f.icp, f.ocp from "2,4"; cplab::Error
// "--hcp 'x' must be two sizes ICP,OCP, each >= 1" otherwise
void parse_hcp(const std::string& text, CpFields& f);

class CpSpec {
 public:
  // p2p, zigzag, P = 4, S = 4096, h = 8, hk = 2, d = dv = 64, not causal
  CpSpec();
  // validates f (cplab::Error naming the first rule it breaks) and derives S, packing, partition
  explicit CpSpec(CpFields f);

  const CpFields& fields() const { return f_; }
  Mode mode() const { return f_.mode; }
  const ModeInfo& info() const { return mode_info(f_.mode); }
  Layout layout() const { return f_.layout; }
  index_t P() const { return f_.cp; }
  index_t icp() const { return f_.icp; }
  index_t ocp() const { return f_.ocp; }
  index_t S() const { return f_.seq; }  // the packed total (after padding) when packed
  index_t n() const { return f_.seq / f_.cp; }
  index_t h() const { return f_.heads; }
  index_t hk() const { return f_.kv_heads; }  // as given (before --replicate-kv)
  index_t d() const { return f_.head_dim; }
  index_t dv() const { return f_.v_head_dim > 0 ? f_.v_head_dim : f_.head_dim; }
  bool causal() const { return f_.causal; }
  index_t window() const { return f_.window.value_or(0); }  // 0: none
  index_t chunk() const { return f_.chunk.value_or(0); }    // 0: none
  // THE mask of the run over positions: every mode's tiles and the dense oracle read it
  PositionRule rule() const { return PositionRule{f_.causal, window(), chunk()}; }
  bool sinks() const { return f_.sinks; }
  // "causal", "causal, window 64", "chunk 16", "none" (+ ", sinks"): how reports name the mask
  std::string mask_name() const;
  double scale() const;  // the softmax scale used: the given one, or 1/sqrt(d)
  MergeKind merge() const { return f_.merge; }
  std::optional<DType> partials_dtype() const { return f_.partials_dtype; }
  std::optional<DType> merge_dtype() const { return f_.merge_dtype; }
  bool pad() const { return f_.pad; }
  bool replicate_kv() const { return f_.replicate_kv; }

  // cu_seqlens were given (THD input), even a single unpadded sequence
  bool thd() const { return !f_.cu_seqlens.empty(); }
  // THE definition of "packed": the token masks are those of several sequences or of padding (a
  // THD input of one unpadded sequence computes exactly like the unpacked one)
  bool packed() const { return packing_.num_seqs() > 1 || packing_.has_padding(); }
  // the packing token masks use: cu_seqlens (padded with pad), or Packing::single(S)
  const Packing& packing() const { return packing_; }
  // the data layout over all P ranks (per packed sequence when thd())
  const Partition& partition() const { return partition_; }

  // ranks an all-to-all spans (P for a2a, I for a2a+p2p; 1: none), and how many times
  // --replicate-kv repeats each KV head for it (1: none)
  index_t a2a_group() const { return info().a2a_group(ranks()); }
  index_t kv_replication() const;
  // the hops of the mode's ring (p2p: over P; a2a+p2p: the rings over O; -1 for the other modes):
  // the whole ring unless a window or chunk lets it stop early (ring_schedule.h ring_hops)
  index_t ring_hops() const { return hops_; }
  // trace steps of the forward and backward (trace_plan.h numbering)
  std::int64_t fwd_steps() const { return info().fwd_steps(ranks()); }
  std::int64_t bwd_steps() const { return info().bwd_steps(ranks()); }
  // the closed-form messages and bytes every rank sends, for elements of e bytes
  CommPerRank comm_per_rank(std::int64_t e) const;
  ModeRanks ranks() const { return ModeRanks{f_.cp, f_.icp, f_.ocp, hops_}; }

 private:
  CpFields f_;
  Packing packing_;
  Partition partition_;
  index_t hops_ = -1;
};

}  // namespace cplab
