// infer_attention.h: the inference CP variants on simulated ranks (forward only: serving has no
// backward), each in its own file.
//
// What it is: infer_forward dispatches on spec.mode() (infer_table.h) to
//   infer_pass_kv.cpp    pass-KV: the KV ring, messages padded to the largest shard (Mkv rows)
//   infer_pass_q.cpp     pass-Q and pass-Q ring decode: the Q ring (padded to Mq rows), partials
//                        kept where computed, one all-to-all returning (O, LSE) to the owners
//   infer_decode_ag.cpp  all-gather-Q decode: gather Q, attend to the local shard, all-to-all back
// Every tile is the rank's queries x a KV shard under token_mask over the spec's kv_packing (thd.h:
// same request, the run's PositionRule at the queries' positions P_b + t), merged with merge.h's
// exact rule; sinks (core/sinks.h) are applied once per row by the owner, on its final result.
// Every message and tile goes into the Trace held by the SimComm (rows and cols: KV-space rows).
// What it is not: validation (infer_spec.h), the harness (infer_run.h) or the planner
// (infer_plan.h, which repeats these loops without computing).
#pragma once

#include <vector>

#include "core/tensor.h"
#include "infer/infer_spec.h"
#include "sim/comm.h"

namespace cplab {

template <class T>
struct InferLocal {  // per rank r, in its ascending row order
  std::vector<Tensor3<T>> q;  // (n_r, h, d): the rank's new tokens (q_rows(r))
  std::vector<Tensor3<T>> k;  // (m_r, hk, d): its cache shard and new tokens (kv_rows(r))
  std::vector<Tensor3<T>> v;  // (m_r, hk, dv)
};

template <class T>
struct InferOutput {  // per rank r, rows q_rows(r)
  std::vector<Tensor3<T>> o;  // (n_r, h, dv)
  std::vector<Rows<T>> lse;   // (h, n_r)
};

// sinks: one logit per query head when spec.sinks(), else empty
template <class T>
InferOutput<T> infer_forward(const InferSpec& spec, const InferLocal<T>& in, SimComm& comm,
                             const std::vector<T>& sinks = {});

// the variants themselves (infer_forward calls them)
template <class T>
InferOutput<T> infer_pass_kv(const InferSpec& spec, const InferLocal<T>& in, SimComm& comm, const std::vector<T>& sinks);
template <class T>
InferOutput<T> infer_pass_q(const InferSpec& spec, const InferLocal<T>& in, SimComm& comm, const std::vector<T>& sinks);
template <class T>
InferOutput<T> infer_decode_ag(const InferSpec& spec, const InferLocal<T>& in, SimComm& comm,
                               const std::vector<T>& sinks);

}  // namespace cplab
