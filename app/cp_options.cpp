// cp_options.cpp: the CP-layer options of cplab run and cplab check (cp_options.h).
#include "cp_options.h"

#include "core/error.h"
#include "layout/thd.h"

namespace cplab::app {

bool CpOptions::given(const std::string& name) const {
  const auto it = options.find(name);
  return it != options.end() && it->second->count() > 0;
}

void add_cp_options(CLI::App* sub, CpOptions& o) {
  CpFields& f = o.f;
  auto reg = [&](const std::string& name, CLI::Option* opt) { o.options[name] = opt; };
  reg("mode", sub->add_option("--mode", o.mode,
                              "CP mode: p2p (ring), allgather (all-gather KV, Llama 3), a2a (Ulysses all-to-all),\n"
                              "a2a+p2p (hierarchical: needs --hcp); with --kv-cache (inference): p2p (pass-KV),\n"
                              "pass-q, decode-pass-q, decode-ag")->capture_default_str());
  reg("hcp", sub->add_option("--hcp", o.hcp, "a2a+p2p sizes ICP,OCP: inner all-to-all groups of ICP adjacent ranks,\n"
                                             "outer rings of OCP ranks strided by ICP; ICP x OCP = cp"));
  reg("cu-seqlens", sub->add_option("--cu-seqlens", o.cu, "packed sequences (THD): cumulative real lengths, e.g. 0,12,36,42\n"
                                                          "(--seq is then their total); with --kv-cache: of the requests' NEW tokens"));
  reg("pad", sub->add_flag("--pad", f.pad, "pad every packed sequence at its end to a multiple of 2*cp (zigzag) or cp;\n"
                                           "padding tokens get O = 0 and zero gradients"));
  reg("replicate-kv", sub->add_flag("--replicate-kv", f.replicate_kv, "a2a, a2a+p2p: repeat each KV head when kv-heads is not divisible\n"
                                                                      "by the all-to-all size (costs memory and bytes)"));
  reg("cp", sub->add_option("--cp", f.cp, "number of CP ranks (simulated in this process)")->capture_default_str());
  reg("seq", sub->add_option("--seq", o.seq, "global sequence length (zigzag: multiple of 2*cp; others: of cp);\n"
                                                 "with --kv-cache: T, the new tokens (any T >= 1)")->capture_default_str());
  reg("heads", sub->add_option("--heads", f.heads, "query heads")->capture_default_str());
  reg("kv-heads", sub->add_option("--kv-heads", f.kv_heads, "key/value heads (must divide heads: GQA/MQA)")->capture_default_str());
  reg("head-dim", sub->add_option("--head-dim", f.head_dim, "Q/K head dim")->capture_default_str());
  reg("v-head-dim", sub->add_option("--v-head-dim", f.v_head_dim, "V head dim (0: same as --head-dim)")->capture_default_str());
  reg("causal", sub->add_flag("--causal", f.causal, "causal mask (default: none)"));
  add_mask_options(sub, o.mask, true);  // --window --chunk --sinks --sink-logits
  reg("layout", sub->add_option("--layout", o.layout, "token layout: contiguous | zigzag | striped")->capture_default_str());
  reg("merge", sub->add_option("--merge", o.merge, "partial-result merge: streaming | fold (TE's post-loop)")->capture_default_str());
  reg("scale", sub->add_option("--scale", f.scale, "softmax scale (0: 1/sqrt(head-dim))")->capture_default_str());
}

CpFields cp_fields(const CpOptions& o) {
  CpFields f = o.f;
  f.mode = parse_mode(o.mode);
  f.layout = parse_layout(o.layout);
  f.merge = parse_merge(o.merge);
  require(!o.given("cu-seqlens") || !o.cu.empty(), "--cu-seqlens needs a value, got an empty string");
  if (!o.hcp.empty()) parse_hcp(o.hcp, f);
  if (!o.cu.empty()) f.cu_seqlens = parse_cu_seqlens(o.cu);
  // with --cu-seqlens, --seq is their packed total: given, it must agree (CpSpec says so)
  f.seq = f.cu_seqlens.empty() || o.given("seq") ? o.seq : 0;
  apply_mask_options(o.mask, f);
  return f;
}

}  // namespace cplab::app
