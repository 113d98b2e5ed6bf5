// faults_rules.cpp: the hypotheses that are attention under a different rule of which keys a query
// sees (hypotheses.h), each predicted by recomputing attention under that rule at the sampled rows
// and keys (rule_fault, sampled_attention.h); the bug reports of cplab issue 38 in their words:
//   ring bypassed / local-only attention: each rank attends only to its own shard's keys (a kernel
//     upgrade that skipped the CP path: axolotl #3928)
//   the diagonal tile (a rank's queries against its own KV block, ring step 0) computed without its
//     causal mask, the other tiles right (p2p)
//   a mask lost on the CP path (NeMo Automodel #2622): the causal mask, the sliding window, the chunk
//     mask, or all of them dropped (sequence boundaries of packed sequences stay); and the causal
//     mask added to a non-causal spec. Each of these IS another spec: the verdict says which.
//   THD packed sequences with padding (TransformerEngine #3331: its p2p path without
//     pad_between_seqs took every rank's sequence bounds from cu_seqlens // cp, mislabelling rows at
//     the chunk edges): modelled on the whole packed buffer, not per rank, as the two ways the real
//     and padded offsets get confused: cu_seqlens_padded taken as the sequences (the padding tokens
//     attended, as keys and queries, with the K, V the inputs hold), or cu_seqlens taken as the
//     buffer's offsets (every later sequence's boundaries shifted by the padding before it)
// What it is not: the off-by-one masks, the KV head map and the softmax scale (faults_recompute.cpp).
#include "check/hypotheses.h"
#include "core/util.h"

namespace cplab {

void attn_rule_hypotheses(CheckContext& c) {
  const CpSpec& s = c.spec;
  if (!c.worth({CheckTensor::o, CheckTensor::lse, CheckTensor::dq, CheckTensor::dk, CheckTensor::dv},
               "ring bypassed, diagonal tile, masks dropped, THD bounds"))
    return;
  const AttnRule truth = true_rule(s);
  const PositionRule pr = s.rule();
  if (s.P() > 1) {
    AttnRule r = truth;
    r.blocks = KvBlocks::own_only;
    rule_fault(c, r, "local_only",
               "ring bypassed / local-only attention: each rank attends only to its own shard's keys (the CP exchange skipped)", 32);
  }
  if (s.causal() && s.P() > 1 && s.mode() == Mode::p2p) {
    AttnRule r = truth;
    r.blocks = KvBlocks::own_unmasked;
    rule_fault(c, r, "diagonal_unmasked",
               "the diagonal tile computed without its causal mask: each rank's queries see every key of their own KV "
               "block (ring step 0), the other steps right",
               45);
  }
  auto mask = [&](PositionRule p, const std::string& id, const std::string& name, int priority, const std::string& hint) {
    AttnRule r = truth;
    r.positions = p;
    rule_fault(c, r, id, name, priority, hint);
  };
  const std::string W = num(pr.window), C = num(pr.chunk);
  if (!s.causal())
    mask({true, pr.window, 0}, "causal_added", "causal mask applied to a non-causal spec: query q sees keys k <= q only", 54,
         "--causal: the spec given lacks it");
  if (s.causal() && pr.plain())
    mask({false, 0, 0}, "causal_dropped", "causal mask dropped: full attention (each query sees its whole sequence)", 56,
         "the spec without --causal");
  if (pr.window > 0)
    mask({pr.causal, 0, 0}, "window_dropped",
         "sliding window of " + W + " dropped: full " + (pr.causal ? "causal " : "") + "attention", 57,
         "the spec without --window " + W);
  if (pr.chunk > 0)
    mask({true, 0, 0}, "chunk_dropped", "chunk mask dropped (chunks of " + C + "): full causal attention", 58,
         "the spec without --chunk " + C);
  if (s.causal() && !pr.plain())
    mask({false, 0, 0}, "all_masks_dropped",
         "causal mask and " + (pr.window > 0 ? "sliding window of " + W : "chunk mask") + " dropped: full attention", 59,
         "the spec without --causal and --" + (pr.window > 0 ? "window " + W : "chunk " + C));
  if (s.packing().has_padding()) {
    AttnRule r = truth;
    r.bounds = SeqBounds::padded;
    rule_fault(c, r, "thd_padding_attended",
               "THD padding attended: cu_seqlens_padded taken as the sequences (each sequence's padding tokens are keys "
               "and queries of it, with the K, V the inputs hold)",
               91);
    r.bounds = SeqBounds::unpadded;
    rule_fault(c, r, "thd_bounds_shifted",
               "THD sequence boundaries shifted by the padding: cu_seqlens taken as the packed buffer's offsets where "
               "cu_seqlens_padded are meant (no padding between sequences assumed, cf. TransformerEngine #3331)",
               92);
  }
}

}  // namespace cplab
