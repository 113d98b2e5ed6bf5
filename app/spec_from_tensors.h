// spec_from_tensors.h: a CP layer's sizes read from its Q, K, V tensors (files or memory), for
// `cplab check`, `cplab run` and the Python binding alike.
//
// What it is: GivenSizes (the sizes a caller also gave, which must agree with the tensors),
// given_sizes (those of the command line), check_spec (cplab check's spec: seq, heads, kv-heads,
// head-dim, v-head-dim from q, k, v; --seq must agree; --cu-seqlens must pack exactly q's tokens;
// the sink logits read when --sinks has none) and run_sizes (cplab run's sizes from --q, --k, --v).
// Every message names the tensor as its TensorSource does (run/tensor_source.h).
// What it is not: the sizes' own rules (modes/cp_spec.h), or reading the tensors' data
// (check/check_inputs.h, run_files.h).
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "cp_options.h"
#include "modes/cp_spec.h"
#include "run/tensor_source.h"

namespace cplab::app {

// the sizes given besides the tensors: 0 = not given (the tensors' are used), else must agree
struct GivenSizes {
  index_t seq = 0, heads = 0, kv_heads = 0, head_dim = 0, v_head_dim = 0;
  std::string cu_seqlens;  // --cu-seqlens as written, for the message when it packs another total
};

// the sizes of the command line (o.given), with f = cp_fields(o)'s values
GivenSizes given_sizes(const CpOptions& o, const CpFields& f);

// cplab check's spec: f with the sizes of q (S, heads, head-dim), k (S, kv-heads, head-dim) and
// v (S, kv-heads, v-head-dim), headers only (cplab::Error naming the tensor: a size that disagrees
// with given, or seq with --cu-seqlens' packed total); with f.sinks and no f.sink_logits,
// sink_logits(heads) reads them (check_inputs.h's read_sink_logits)
CpSpec check_spec(CpFields f, const GivenSizes& given, const TensorSource& q, const TensorSource& k, const TensorSource& v,
                  const std::function<std::vector<double>(index_t heads)>& sink_logits);
// the same with the sink logits from sinks (heads,) (null: none given, refused when --sinks needs them)
CpSpec check_spec(CpFields f, const GivenSizes& given, const TensorSource& q, const TensorSource& k, const TensorSource& v,
                  const TensorSource* sinks);

// cplab run's sizes from --q, --k, --v: f's seq, heads, kv-heads, head-dim, v-head-dim set from the
// headers (a size given must agree; cplab::Error naming the tensor)
void run_sizes(CpFields& f, const GivenSizes& given, const TensorSource& q, const TensorSource& k, const TensorSource& v);

}  // namespace cplab::app
