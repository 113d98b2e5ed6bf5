// experiment.h: one CP run on simulated ranks, checked against the dense oracle.
//
// What it is: RunSpec, the harness around a CpSpec (modes/cp_spec.h: the CP layer, validated when
// it is built): dtype, seed, backward, and the CPU reference's limits, checked with messages naming
// the broken rule; make_inputs (seeded uniform [-1, 1] Q, K, V, dO, or tensors the caller loaded);
// and run_experiment, which shards the inputs by the layout, runs the mode forward (and backward) in
// the requested dtype on SimComm ranks, unshards, runs the dense oracle in double on the same
// (dtype-rounded) inputs (with the run's window or chunk, mask_rule.h, and its attention sinks in
// the softmax itself, core/sinks.h), and reports errors, per-rank FLOPs, bytes and messages (all summed from
// the trace) and timings. Its memory is estimated before anything is allocated (memory_estimate.h:
// a run above 16 GiB is refused), and a dense reference that overflows is refused (overflow.h).
// `cplab run`, `cplab demo`, the tests and the tutorials all go through it.
// What it is not: an algorithm. The modes live in their own files (ring_p2p.h, ...).
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>
#include <vector>

#include "core/dense_attention.h"
#include "modes/cp_spec.h"
#include "sim/trace.h"

namespace cplab {

struct RunSpec {
  CpSpec cp;                     // the CP layer (mode, layout, P, S, heads, dims, mask, packing)
  bool backward = false;         // also run the backward and check dQ, dK, dV
  std::string dtype = "double";  // "float" | "double": the arithmetic of the CP run
  std::uint64_t seed = 0;        // of the random inputs (make_inputs)
  bool allow_long = false;       // lift the CPU-work limit (kMaxCpuFlops)
  // --precision as given (run/precision.h), for the reports: the caller rounds the inputs, cp
  // carries the ring's storage; "" none
  std::string precision = "";
  // also keep the outputs in the run's dtype (RunReport::o32 ...; float runs only): the Python
  // binding hands them out as float32 arrays without converting them again (python/src/)
  bool keep_run_dtype = false;
};

// Limits of the CPU reference, so that a typo cannot turn into an hour-long (or memory-exhausting)
// run: at most kMaxRanks simulated ranks (cp_spec.h), kMaxRunMemory (16 GiB) of estimated peak
// memory (memory_estimate.h), and kMaxCpuFlops of attention work (CP run + dense oracle; about 3
// minutes on 2 cores) unless allow_long is set.
inline constexpr double kMaxCpuFlops = 4e12;
// the largest softmax scale a run accepts (validate_rules): beyond it the scores scale * q.k of
// ordinary inputs overflow (float) or make the softmax a hard max, and nothing is checked
inline constexpr double kMaxScale = 1e30;
// work the run will spend on the CPU (FLOPs plus the exponentials): the CP mode plus the dense oracle
double cpu_flops_estimate(const RunSpec& s);

// throws cplab::Error naming the first rule the harness breaks (s.cp is valid by construction)
void validate(const RunSpec& s);
// the same rules without the CPU reference's limits (memory, kMaxCpuFlops): what a run must meet
// to be planned (trace_plan.h) rather than run; validate() = validate_rules() + those limits
void validate_rules(const RunSpec& s);
// the meta a run's trace carries (mode, hcp, layout, causal, sizes, dtype, merge)
std::map<std::string, std::string> trace_meta(const RunSpec& s);

struct Inputs {  // global, sequence order, double
  Tensor3<double> q, k, v;  // (s,h,d), (s,hk,d), (s,hk,dv)
  Tensor3<double> dout;     // (s,h,dv); empty when no backward
  std::vector<double> sinks;  // (h) attention sink logits when s.cp.sinks(), else empty
};
// Q, K, V (and dO) uniform in [-1, 1] from s.seed, and the sinks (sink_inputs)
Inputs make_inputs(const RunSpec& s);
// the sink logits of a run: the spec's --sink-logits, else uniform in [-1, 1] from s.seed (a stream
// of their own: the same Q, K, V, dO as without sinks); empty without sinks
std::vector<double> sink_inputs(const RunSpec& s);

struct RunReport {
  RunSpec spec;
  std::optional<double> err_o, err_lse, err_dq, err_dk, err_dv;  // core/rel_error.h
  std::optional<double> err_dsinks;  // with sinks and backward: d s_h against the oracle's
  std::vector<std::int64_t> flops_fwd, flops_bwd, flops, bytes_sent, bytes_recv, messages;  // per rank
  double padding_max_abs = 0;    // max |O|, |dQ|, |dK|, |dV| over padding tokens (must be exactly 0)
  // results ("o", "lse", "dq", "dk", "dv") holding a NaN or an infinity where the reference is finite
  // (a float overflow of the CP run: their errors are +inf). The reference itself never does:
  // run_experiment refuses such a run (run/overflow.h)
  std::vector<std::string> non_finite;
  std::int64_t dense_flops = 0;  // the same attention on one device (what the ranks' FLOPs must sum to)
  double work_ratio = 0;         // max / min FLOPs over ranks (inf if a rank has none)
  double seconds = 0;            // the CP run (forward + backward), wall time
  double reference_seconds = 0;  // the dense oracle
  Trace trace;
  // results, global sequence order, converted to double (exact for float runs)
  Tensor3<double> o, dq, dk, dv;
  Rows<double> lse;
  std::vector<double> dsinks;  // (h) with sinks and backward
  // the same in float, as the run computed them, when spec.keep_run_dtype and the dtype is float
  Tensor3<float> o32, dq32, dk32, dv32;
  Rows<float> lse32;
  double max_error() const;  // over the errors measured
};

RunReport run_experiment(const RunSpec& s, const Inputs& in);

// the largest max_error() a run in `dtype` ("double" or "float") may have against the dense oracle,
// one rule for `cplab demo`, the CPU benchmark and the tests: 1e-10 in double (observed ~1e-15),
// 1e-4 in float (every output: O, LSE, dQ, dK, dV)
double run_tolerance(const std::string& dtype);

// The oracle: dense attention in double, one packed sequence at a time over its real tokens only (an
// independent route from the packed token masks the modes use), on whole global tensors; padding
// rows get O = 0, LSE = -inf and zero gradients. dq, dk, dv are computed when s.backward (dout
// then (S, h, dv)). run_experiment compares every mode with it; cplab check (check/) too.
// With sinks (one logit per query head, --sinks) they enter every row's softmax denominator, and
// dsinks (h) is their gradient when s.backward.
struct DenseReference {
  Tensor3<double> o, dq, dk, dv;  // global order
  Rows<double> lse;               // (h, S)
  std::vector<double> dsinks;     // (h) with sinks and s.backward, else empty
};
DenseReference dense_reference(const RunSpec& s, const Tensor3<double>& q, const Tensor3<double>& k,
                               const Tensor3<double>& v, const Tensor3<double>& dout, const std::vector<double>& sinks = {});
// FLOPs of the same attention on one device (dense oracle): every packed sequence's real tokens
// against themselves under the run's rule (PositionRule::pairs), forward (+ backward); what the
// ranks' FLOPs must sum to
std::int64_t dense_flops(const RunSpec& s);
// fill r's per-rank FLOPs, bytes, messages and work ratio from r.trace (run_experiment does; so does
// `cplab run --plan-only` for a planned trace, trace_plan.h)
void summarize_trace(RunReport& r);
nlohmann::json report_json(const RunReport& r);

}  // namespace cplab
