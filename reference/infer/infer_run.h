// infer_run.h: one inference CP step on simulated ranks, checked against the dense oracle.
//
// What it is: InferRunSpec, the harness around an InferSpec (dtype, seed, the CPU reference's
// limits); make_infer_inputs (seeded uniform [-1, 1] q (T, h, d), k (P+T, hk, d), v (P+T, hk, dv)
// in global order, request after request, each request's cache first; and the sinks); the
// shard / unshard of those tensors by the spec's ownership; infer_dense_reference, the oracle
// (dense attention in double, one request at a time, each query at its position P_b + t under the
// run's PositionRule: an independent route from the token masks the variants use); and run_infer,
// which shards, runs the variant on SimComm ranks in the run's dtype, unshards and reports errors,
// per-rank FLOPs, bytes and messages (from the trace) and timings. Memory is estimated before
// anything is allocated (at most kMaxRunMemory), and work is bounded (kMaxCpuFlops, lifted by
// allow_long). `cplab run --kv-cache`, the tests, the lesson and the CPU benchmark use it.
// What it is not: an algorithm (infer_attention.h) or a backward (inference has none).
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>
#include <vector>

#include "core/tensor.h"
#include "infer/infer_attention.h"
#include "infer/infer_spec.h"
#include "sim/trace.h"

namespace cplab {

struct InferRunSpec {
  InferSpec spec;
  std::string dtype = "double";  // "float" | "double"
  std::uint64_t seed = 0;
  bool allow_long = false;       // lift kMaxCpuFlops
};

// throws cplab::Error naming the first rule broken (dtype, memory, work; the spec is valid already)
void validate(const InferRunSpec& s);
// the CPU work of the run: the variant's tiles plus the dense oracle (FLOPs plus exponentials)
double infer_cpu_flops_estimate(const InferRunSpec& s);
// the estimated peak memory in bytes (inputs, the oracle's output, every rank's shards and partials)
std::int64_t infer_memory_estimate(const InferRunSpec& s);

struct InferInputs {                 // global order, double
  Tensor3<double> q;                 // (T, h, d): the new tokens
  Tensor3<double> k, v;              // (P+T, hk, d), (P+T, hk, dv): per request, cache then new
  std::vector<double> sinks;         // (h) with sinks, else empty
};
InferInputs make_infer_inputs(const InferRunSpec& s);
// the shapes q, k, v must have for s (the .npy reader's messages name them)
std::string infer_input_shapes(const InferSpec& s);

// global tensors -> each rank's local tensors (rows q_rows(r) of q; kv_rows(r) of k and v)
template <class T>
InferLocal<T> infer_shard(const InferSpec& s, const Tensor3<double>& q, const Tensor3<double>& k,
                          const Tensor3<double>& v);
// each rank's (O, LSE) -> global (T, h, dv) and (h, T)
template <class T>
void infer_unshard(const InferSpec& s, const InferOutput<T>& out, Tensor3<double>& o, Rows<double>& lse);

struct InferDense {
  Tensor3<double> o;  // (T, h, dv)
  Rows<double> lse;   // (h, T)
};
InferDense infer_dense_reference(const InferSpec& s, const Tensor3<double>& q, const Tensor3<double>& k,
                                 const Tensor3<double>& v, const std::vector<double>& sinks);
// FLOPs of the same attention on one device: sum over requests of the visible (query, key) pairs
std::int64_t infer_dense_flops(const InferSpec& s);
// visible (query, key) pairs of request b (closed over its T_b queries at positions P_b + t)
std::int64_t infer_request_pairs(const InferSpec& s, index_t b);

struct InferReport {
  InferRunSpec spec;
  std::optional<double> err_o, err_lse;  // core/rel_error.h against the oracle
  std::vector<std::int64_t> flops, bytes_sent, bytes_recv, messages;  // per rank
  std::vector<std::string> non_finite;   // "o", "lse" holding NaN / inf where the oracle is finite
  std::int64_t dense_flops = 0;
  double work_ratio = 0;                 // max / min FLOPs over ranks (inf if a rank has none)
  double seconds = 0, reference_seconds = 0;
  Trace trace;
  Tensor3<double> o;  // (T, h, dv) global order
  Rows<double> lse;   // (h, T)
  double max_error() const;
};
InferReport run_infer(const InferRunSpec& s, const InferInputs& in);

std::map<std::string, std::string> infer_trace_meta(const InferRunSpec& s);
nlohmann::json infer_report_json(const InferReport& r);

}  // namespace cplab
