// spec_from_tensors.cpp: a CP layer's sizes from its Q, K, V tensors (spec_from_tensors.h).
#include "spec_from_tensors.h"

#include <utility>

#include "check/check_inputs.h"
#include "core/error.h"
#include "core/util.h"
#include "run_files.h"

namespace cplab::app {

GivenSizes given_sizes(const CpOptions& o, const CpFields& f) {
  auto given = [&](const char* name, index_t v) { return o.given(name) ? v : index_t{0}; };
  return GivenSizes{given("seq", f.seq), given("heads", f.heads), given("kv-heads", f.kv_heads), given("head-dim", f.head_dim),
                    given("v-head-dim", f.v_head_dim), o.cu};
}

CpSpec check_spec(CpFields f, const GivenSizes& given, const TensorSource& q, const TensorSource& k, const TensorSource& v,
                  const std::function<std::vector<double>(index_t heads)>& sink_logits) {
  // the sizes come from the tensors; a size also given must agree with them
  index_t h = given.heads, hk = given.kv_heads, d = given.head_dim, dv = given.v_head_dim;
  index_t seq = 0;
  header3(q, "Q", seq, h, d);
  header3(k, "K", seq, hk, d);
  header3(v, "V", seq, hk, dv);
  require(given.seq == 0 || given.seq == seq, q.name + ": has " + num(seq) + " tokens but --seq " + num(given.seq) + " was given");
  f.heads = h, f.kv_heads = hk, f.head_dim = d, f.v_head_dim = dv;
  // --sinks: the logits given, else read (CpSpec checks one per head)
  if (f.sinks && f.sink_logits.empty()) f.sink_logits = sink_logits(h);
  f.seq = f.cu_seqlens.empty() ? seq : 0;  // packed: the total of cu_seqlens (padded with --pad)
  const CpSpec spec(f);
  if (spec.thd())
    require(spec.S() == seq, q.name + " has " + num(seq) + " tokens but --cu-seqlens " + given.cu_seqlens + (spec.pad() ? " with --pad" : "") +
                                 " packs " + num(spec.S()) + (spec.packing().has_padding() ? " (padded)" : "") +
                                 ": the files must hold the packed tokens, padding included, in that order");
  return spec;
}

CpSpec check_spec(CpFields f, const GivenSizes& given, const TensorSource& q, const TensorSource& k, const TensorSource& v,
                  const TensorSource* sinks) {
  return check_spec(std::move(f), given, q, k, v, [&](index_t heads) {
    require(sinks != nullptr, "sinks is missing: --sinks needs the sink logits, shape (heads,)");
    return read_sink_logits(*sinks, heads, q.name);
  });
}

void run_sizes(CpFields& f, const GivenSizes& given, const TensorSource& q, const TensorSource& k, const TensorSource& v) {
  index_t seq = given.seq, h = given.heads, hk = given.kv_heads, d = given.head_dim, dv = given.v_head_dim;
  header3(q, "Q", seq, h, d);
  header3(k, "K", seq, hk, d);
  header3(v, "V", seq, hk, dv);
  f.seq = seq, f.heads = h, f.kv_heads = hk, f.head_dim = d, f.v_head_dim = dv;
}

}  // namespace cplab::app
