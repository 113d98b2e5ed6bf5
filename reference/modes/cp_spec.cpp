// cp_spec.cpp: CpSpec's rules and derived values (see cp_spec.h).
#include "modes/cp_spec.h"

#include <cmath>

#include "core/attention_kernel.h"
#include "core/dense_attention.h"
#include "core/error.h"
#include "core/util.h"
#include "modes/hierarchical_cp.h"
#include "modes/ring_schedule.h"

namespace cplab {

// the mask rules: --window, --chunk, --sinks (mask_rule.h PositionRule states them)
void check_mask_rules(const CpFields& s) {
  const std::string window_rule = "with --causal query i sees key j iff i - W < j <= i, without iff |i - j| < W";
  const std::string chunk_rule = "query i sees key j iff j <= i and floor(i/C) == floor(j/C)";
  if (s.window)
    require(*s.window >= 1 && *s.window <= kMaxWindow, "--window " + num(*s.window) + " must be in [1, " + num(kMaxWindow) +
                                                             "] (" + window_rule + ")");
  if (s.chunk)
    require(*s.chunk >= 1 && *s.chunk <= kMaxWindow, "--chunk " + num(*s.chunk) + " must be in [1, " + num(kMaxWindow) +
                                                           "] (" + chunk_rule + ")");
  require(!(s.window && s.chunk), "--window and --chunk cannot both be given: a run has one mask rule (a sliding "
                                  "window: " + window_rule + "; or chunks: " + chunk_rule + ")");
  require(!s.chunk || s.causal, "--chunk needs --causal (chunked attention is causal inside each chunk: " + chunk_rule + ")");
  if (s.sink_logits.empty()) return;
  require(s.sinks, "sink logits were given without --sinks");
  require(static_cast<index_t>(s.sink_logits.size()) == s.heads,
          "--sink-logits holds " + num(static_cast<index_t>(s.sink_logits.size())) + " values but heads is " + num(s.heads) +
              " (one learnable logit per query head: shape (heads,))");
  for (size_t i = 0; i < s.sink_logits.size(); ++i)
    require(std::isfinite(s.sink_logits[i]), "--sink-logits value " + num(static_cast<index_t>(i)) + " is " +
                                                 (std::isnan(s.sink_logits[i]) ? "NaN" : "infinite") +
                                                 " (every sink logit must be a finite number)");
}

namespace {

// the heads rule of an all-to-all over `group` ranks, with --replicate-kv as the only way around it
void check_a2a_heads(const CpFields& s, index_t group, const std::string& what) {
  require(s.heads % group == 0, "heads " + num(s.heads) + " is not divisible by " + what + " = " + num(group) +
                                    " (the all-to-all gives every rank heads/" + what + " heads)");
  if (s.kv_heads % group == 0) return;
  require(s.replicate_kv, "kv-heads " + num(s.kv_heads) + " is not divisible by " + what + " = " + num(group) +
                              " (the all-to-all splits the KV heads over ranks); pass --replicate-kv to repeat "
                              "each KV head " +
                              what + "/kv-heads times (more memory and all-to-all bytes)");
  require(group % s.kv_heads == 0, "--replicate-kv needs kv-heads " + num(s.kv_heads) + " to divide " + what + " = " +
                                       num(group) + " (each KV head is repeated the same number of times)");
}

Packing packing_of(const CpFields& f) {
  if (f.cu_seqlens.empty()) return Packing::single(f.seq);
  return f.pad ? Packing::padded(f.cu_seqlens, layout_factor(f.layout, f.cp)) : Packing::unpadded(f.cu_seqlens);
}

// every rule of a spec, in the order they are reported; fills in seq for packed sequences
CpFields validated(CpFields s) {
  const ModeInfo& m = mode_info(s.mode);
  check_cp_size(s.cp);
  if (!s.cu_seqlens.empty()) {
    check_cu_seqlens(s.cu_seqlens);
    const index_t total = packing_of(s).total();
    require(s.seq == 0 || s.seq == total, "seq " + num(s.seq) + " disagrees with the packed total " + num(total) +
                                              " of cu_seqlens" + (s.pad ? " after --pad" : ""));
    s.seq = total;
  }
  require(s.seq >= 1, "seq " + num(s.seq) + " must be >= 1");
  require(s.seq <= kMaxPackedTokens, "seq " + num(s.seq) + " is more than 2^40 tokens, the most cplab takes");
  require(s.v_head_dim >= 0, "v-head-dim " + num(s.v_head_dim) + " must be >= 1 (or 0 for = head-dim)");
  for (const auto& [v, name] :
       {std::pair{s.heads, "heads"}, {s.kv_heads, "kv-heads"}, {s.head_dim, "head-dim"}, {s.v_head_dim, "v-head-dim"}})
    require(v <= kMaxHeads, std::string(name) + " " + num(v) + " is more than " + num(kMaxHeads) +
                                " (cplab's limit on head counts and head dims)");
  const index_t dv = s.v_head_dim > 0 ? s.v_head_dim : s.head_dim;
  check_attention_shapes(s.seq, s.heads, s.head_dim, s.seq, s.kv_heads, s.head_dim, s.seq, s.kv_heads, dv);
  require(s.scale >= 0 && std::isfinite(s.scale), "scale must be a finite number > 0 (or 0 for 1/sqrt(head-dim))");
  check_mask_rules(s);
  require(s.merge == MergeKind::streaming || m.merges, "--merge applies to the modes that merge partial results (" +
                                                           mode_names_with(&ModeInfo::merges, ", ") + "), not " +
                                                           m.name);
  const bool hcp = s.mode == Mode::a2a_p2p;
  require((!s.partials_dtype && !s.merge_dtype) || s.mode == Mode::p2p || hcp,
          std::string("--precision partials= and merge= round the ring's per-step results: modes p2p and a2a+p2p, not ") + m.name +
              " (it merges no ring steps)");
  require(!s.merge_dtype || s.merge == MergeKind::streaming,
          "--precision merge= rounds the streaming merge's running sum after every step; --merge fold sums the "
          "partials once, at the end (round them with partials=)");
  require(hcp || (s.icp == 0 && s.ocp == 0), "--hcp is only for --mode a2a+p2p");
  require(m.all_to_all || !s.replicate_kv,
          "--replicate-kv is only for --mode " + mode_names_with(&ModeInfo::all_to_all, " and "));
  if (s.mode == Mode::a2a) check_a2a_heads(s, s.cp, "cp");
  if (hcp) {
    require(s.icp > 0 && s.ocp > 0,
            "a2a+p2p needs --hcp ICP,OCP (inner all-to-all size x outer ring size = cp); "
            "cplab never falls back to another mode");
    // cp <= kMaxRanks (checked first), so a size above cp cannot be part of it, and the product of two
    // sizes <= cp is small: the message never multiplies two user numbers that could overflow
    if (!(s.cp % s.icp == 0 && s.cp / s.icp == s.ocp))
      throw Error("--hcp " + num(s.icp) + "," + num(s.ocp) + " multiplies to " +
                  (s.icp <= s.cp && s.ocp <= s.cp ? num(s.icp * s.ocp) : std::string("more than cp")) +
                  ", not cp = " + num(s.cp) + " (ICP x OCP must equal cp)");
  }
  require(m.any_layout || s.layout == Layout::zigzag,
          std::string(m.name) +
              " needs --layout zigzag (the data is zigzag over all cp ranks; "
              "the outer ring keeps zigzag over OCP)");
  require(m.packed || s.cu_seqlens.empty(), "packed sequences (--cu-seqlens) are supported by " +
                                                mode_names_with(&ModeInfo::packed, " and ") + ", not " + m.name);
  if (hcp) check_a2a_heads(s, s.icp, "ICP");
  if (!s.cu_seqlens.empty()) {
    if (!s.pad) check_packed_lengths(s.cu_seqlens, s.layout, s.cp);
  } else {
    require(!s.pad, "--pad needs --cu-seqlens (it pads each packed sequence)");
  }
  return s;
}

// the hops of the mode's ring (ring_schedule.h ring_hops), -1 for the modes without one
index_t hops_of(const CpFields& f, const Packing& pk, const Partition& part) {
  const PositionRule rule{f.causal, f.window.value_or(0), f.chunk.value_or(0)};
  const bool packed = pk.num_seqs() > 1 || pk.has_padding();
  if (f.mode == Mode::p2p) return ring_hops(part, packed ? &pk : nullptr, rule);
  if (f.mode == Mode::a2a_p2p) return ring_hops(hcp_outer_partition(part, f.ocp), nullptr, rule);
  return -1;
}

CpFields default_fields() {
  CpFields f;
  f.seq = 4096;
  return f;
}

}  // namespace

CpSpec::CpSpec() : CpSpec(default_fields()) {}

CpSpec::CpSpec(CpFields f)
    : f_(validated(std::move(f))),
      packing_(packing_of(f_)),
      partition_(f_.layout, packing_.cu_seqlens_padded, f_.cp),  // the layout's divisibility rule
      hops_(hops_of(f_, packing_, partition_)) {}

void parse_hcp(const std::string& text, CpFields& f) {
  const std::vector<index_t> v = parse_int_list(text, "--hcp");
  require(v.size() == 2 && v[0] >= 1 && v[1] >= 1, "--hcp '" + text + "' must be two sizes ICP,OCP, each >= 1");
  for (const index_t x : v)  // ICP x OCP = cp <= kMaxRanks: a larger size is refused before any product
    require(x <= kMaxRanks, "--hcp '" + text + "': size " + num(x) + " is more than the " + num(kMaxRanks) +
                                " ranks cplab takes (ICP x OCP must equal cp)");
  f.icp = v[0], f.ocp = v[1];
}

std::string CpSpec::mask_name() const {
  std::string m = f_.causal ? "causal" : (f_.window ? "" : "none");
  if (f_.window) m += (m.empty() ? "" : ", ") + std::string("window ") + num(*f_.window);
  if (f_.chunk) m += ", chunk " + num(*f_.chunk);
  if (f_.sinks) m += ", sinks";
  return m;
}

double CpSpec::scale() const { return f_.scale > 0 ? f_.scale : default_scale(f_.head_dim); }

index_t CpSpec::kv_replication() const {
  const index_t group = a2a_group();
  if (!f_.replicate_kv || group <= 1 || f_.kv_heads % group == 0) return 1;
  return group / f_.kv_heads;
}

CommPerRank CpSpec::comm_per_rank(std::int64_t e) const {
  return info().comm(CommSizes{ranks(), n(), h(), hk() * kv_replication(), d(), dv(), e});
}

}  // namespace cplab
