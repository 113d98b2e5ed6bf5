// experiment.cpp: validation, inputs, and run_experiment (see experiment.h).
#include "run/experiment.h"

#include <algorithm>
#include <chrono>
#include <type_traits>
#include <cmath>
#include <cstdio>
#include <limits>
#ifdef __GLIBC__
#include <malloc.h>
#endif
#include <new>
#include <nlohmann/json.hpp>
#include <random>

#include "core/alloc.h"
#include "core/error.h"
#include "core/flops.h"
#include "core/interrupt.h"
#include "core/rel_error.h"
#include "core/util.h"
#include "modes/cp_attention.h"
#include "run/memory_estimate.h"
#include "run/overflow.h"
#include "run/seeded_sinks.h"

namespace cplab {

namespace {

using Clock = std::chrono::steady_clock;
double secs(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }


template <class T>
Tensor3<T> rounded(const Tensor3<double>& x) {
  return cast<T>(x);
}

template <class T>
void run_typed(const RunSpec& s, const Inputs& in, RunReport& rep) {
  const CpSpec& cp = s.cp;
  const Partition& part = cp.partition();
  const index_t f = cp.kv_replication();  // KV heads repeated for the all-to-all (1: none)
  const PerRank<T> q = shard(part, rounded<T>(in.q));
  const PerRank<T> k = shard(part, f > 1 ? repeat_heads(rounded<T>(in.k), f) : rounded<T>(in.k));
  const PerRank<T> v = shard(part, f > 1 ? repeat_heads(rounded<T>(in.v), f) : rounded<T>(in.v));
  SimComm comm(static_cast<int>(cp.P()), &rep.trace);
  const std::vector<T> sinks(in.sinks.begin(), in.sinks.end());  // rounded to the run's dtype
  const auto t0 = Clock::now();
  CpState<T> state;
  const CpOutput<T> out = cp_attention_forward(cp, q, k, v, comm, state, sinks);
  CpGrads<T> g;
  if (s.backward) g = cp_attention_backward(cp, state, shard(part, rounded<T>(in.dout)), comm);
  rep.seconds = secs(t0);
  // the results in double; with keep_run_dtype (float runs) also as computed (keep)
  auto report = [&](Tensor3<T>&& x, Tensor3<double>& d, Tensor3<float>& kept) {
    d = cast<double>(x);
    if constexpr (std::is_same_v<T, float>)
      if (s.keep_run_dtype) kept = std::move(x);
  };
  report(unshard(part, out.o), rep.o, rep.o32);
  Rows<T> lse = unshard_rows(part, out.lse);
  rep.lse = cast<double>(lse);
  if constexpr (std::is_same_v<T, float>)
    if (s.keep_run_dtype) rep.lse32 = std::move(lse);
  if (s.backward) {
    report(unshard(part, g.dq), rep.dq, rep.dq32);
    Tensor3<T> dk = unshard(part, g.dk), dv = unshard(part, g.dv);
    if (f > 1) dk = sum_repeated_heads(dk, f), dv = sum_repeated_heads(dv, f);  // replicas' gradients add up
    report(std::move(dk), rep.dk, rep.dk32);
    report(std::move(dv), rep.dv, rep.dv32);
    rep.dsinks.assign(g.dsinks.begin(), g.dsinks.end());
  }
}

}  // namespace

// The oracle: dense attention in double, one sequence at a time over its real tokens only (an
// independent route from the packed token masks the modes use), each under the rule's mask of the
// whole sequence (sequence_mask) and with the sinks inside the softmax (attention_kernel.h, not the
// modes' merge); padding rows get O = 0, LSE = -inf and zero gradients.
DenseReference dense_reference(const RunSpec& s, const Tensor3<double>& q, const Tensor3<double>& k,
                               const Tensor3<double>& v, const Tensor3<double>& dout, const std::vector<double>& sinks) {
  const Packing& pk = s.cp.packing();
  DenseReference r{Tensor3<double>(q.n, q.h, v.d), {}, {}, {}, Rows<double>::Constant(q.h, q.n, -std::numeric_limits<double>::infinity()), {}};
  if (s.backward) r.dq = Tensor3<double>(q.n, q.h, q.d), r.dk = Tensor3<double>(k.n, k.h, k.d), r.dv = Tensor3<double>(v.n, v.h, v.d);
  if (s.backward && !sinks.empty()) r.dsinks.assign(sinks.size(), 0.0);
  const double* sink = sinks.empty() ? nullptr : sinks.data();
  auto rows = [](const Tensor3<double>& x, index_t b, index_t n) {
    Tensor3<double> y(n, x.h, x.d);
    std::copy(x.token(b), x.token(b) + n * x.h * x.d, y.data.begin());
    return y;
  };
  auto put = [](Tensor3<double>& x, index_t b, const Tensor3<double>& y) { std::copy(y.data.begin(), y.data.end(), x.token(b)); };
  for (index_t sq = 0; sq < pk.num_seqs(); ++sq) {
    interruption_point();  // core/interrupt.h; within a sequence the kernel polls per row block
    const index_t b = pk.cu_seqlens_padded[static_cast<size_t>(sq)], L = pk.length(sq);
    const Tensor3<double> qs = rows(q, b, L), ks = rows(k, b, L), vs = rows(v, b, L);
    const Mask mask = sequence_mask(s.cp.rule(), L);
    const AttnOut<double> f = dense_forward(qs, ks, vs, mask, s.cp.scale(), sink);
    put(r.o, b, f.o);
    r.lse.block(0, b, q.h, L) = f.lse;
    if (s.backward) {
      interruption_point();
      const AttnGrads<double> g = dense_backward(qs, ks, vs, f, rows(dout, b, L), mask, s.cp.scale(), sink);
      put(r.dq, b, g.dq);
      put(r.dk, b, g.dk);
      put(r.dv, b, g.dv);
      for (size_t i = 0; i < g.dsinks.size(); ++i) r.dsinks[i] += g.dsinks[i];
    }
  }
  return r;
}

void validate_rules(const RunSpec& s) {
  require(s.dtype == "float" || s.dtype == "double", "dtype '" + s.dtype + "' is not one of: float, double");
  const double scale = s.cp.fields().scale;  // CpSpec: finite and >= 0 (0: 1/sqrt(head-dim))
  if (scale > kMaxScale) {
    char b[320];
    if (s.dtype == "float")
      std::snprintf(b, sizeof b, "scale %g overflows float arithmetic; use --dtype double or a smaller scale", scale);
    else
      std::snprintf(b, sizeof b,
                    "scale %g is above %g, the largest softmax scale the CPU reference checks (the scores "
                    "scale * q.k overflow or the softmax is a hard max; the usual scale is 1/sqrt(head-dim) = %g)",
                    scale, kMaxScale, default_scale(s.cp.d()));
    throw Error(b);
  }
}

void validate(const RunSpec& s) {
  validate_rules(s);
  // memory: run/memory_estimate.h, derived from what the run allocates, checked before it allocates
  const CpSpec& cp = s.cp;
  const MemoryEstimate mem = estimate_memory(s);
  if (mem.bytes > kMaxRunMemory) {
    char gib[64];
    std::snprintf(gib, sizeof gib, "%.1f GiB", mem.bytes / (1024.0 * 1024.0 * 1024.0));
    throw Error("this run needs about " + std::string(gib) + " in the CPU reference at its peak (" + mem.phase +
                "; mode " + to_string(cp.mode()) + ", cp " + num(cp.P()) + ", seq " + num(cp.S()) + ", heads " +
                num(cp.h()) + ", kv-heads " + num(cp.hk()) + ", head-dim " + num(cp.d()) + ", v-head-dim " +
                num(cp.dv()) + ", " + s.dtype + (s.backward ? ", forward + backward" : ", forward") +
                "); the limit is 16 GiB");
  }
  const double work = cpu_flops_estimate(s);
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.1f TFLOP", work * 1e-12);
  require(s.allow_long || work <= kMaxCpuFlops,
          std::string("this run needs about ") + buf + " of CPU work (CP mode + dense oracle), more than the " +
              "4 TFLOP limit (a few minutes on 2 cores); pass --allow-long to run it anyway");
}

double cpu_flops_estimate(const RunSpec& s) {
  // flops.h in floating point (absurd sizes must not overflow before they are refused); pairs is
  // visible_pairs() of the full (causal) mask
  const double S = static_cast<double>(s.cp.S()), h = static_cast<double>(s.cp.h());
  const double d = static_cast<double>(s.cp.d()), dv = static_cast<double>(s.cp.dv());
  const PositionRule rule = s.cp.rule();  // the pairs of one sequence of S tokens, in floating point
  const double pairs = !rule.plain() && S < 1e9 ? static_cast<double>(rule.pairs(s.cp.S()))
                                                : (s.cp.causal() ? S * (S + 1) / 2 : S * S);
  // + about 30 operation-equivalents per visible pair and pass for the exponential and masking,
  // which dominate when head dims are tiny
  const double once = fwd_flops(pairs, h, d, dv) + 30.0 * pairs * h +
                      (s.backward ? bwd_flops(pairs, h, d, dv) + 30.0 * pairs * h : 0.0);
  return 2.0 * once;  // the CP run and the dense oracle each do the work once
}

Inputs make_inputs(const RunSpec& s) {
  std::mt19937_64 rng(s.seed);
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  auto fill = [&](index_t n, index_t h, index_t d) {
    Tensor3<double> x(n, h, d);
    for (double& e : x.data) e = u(rng);
    return x;
  };
  Inputs in;
  const CpSpec& cp = s.cp;
  in.q = fill(cp.S(), cp.h(), cp.d());
  in.k = fill(cp.S(), cp.hk(), cp.d());
  in.v = fill(cp.S(), cp.hk(), cp.dv());
  if (s.backward) in.dout = fill(cp.S(), cp.h(), cp.dv());
  in.sinks = sink_inputs(s);
  return in;
}

std::vector<double> sink_inputs(const RunSpec& s) {
  if (!s.cp.sinks()) return {};
  if (!s.cp.fields().sink_logits.empty()) return s.cp.fields().sink_logits;
  return seeded_sink_logits(s.seed, s.cp.h());
}

std::vector<double> seeded_sink_logits(std::uint64_t seed, index_t h) {
  std::seed_seq seq{static_cast<std::uint32_t>(seed), static_cast<std::uint32_t>(seed >> 32), 0x73696e6bu /*"sink"*/};
  std::mt19937_64 rng(seq);
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  std::vector<double> x(static_cast<size_t>(h));
  for (double& e : x) e = u(rng);
  return x;
}

double run_tolerance(const std::string& dtype) { return dtype == "double" ? 1e-10 : 1e-4; }

double RunReport::max_error() const {
  double m = 0;
  for (const auto& e : {err_o, err_lse, err_dq, err_dk, err_dv, err_dsinks})
    if (e) m = std::max(m, *e);
  return m;
}

std::map<std::string, std::string> trace_meta(const RunSpec& s) {
  const CpSpec& cp = s.cp;
  std::map<std::string, std::string> m = {
      {"mode", to_string(cp.mode())}, {"hcp", num(cp.icp()) + "," + num(cp.ocp())}, {"layout", to_string(cp.layout())},
      {"causal", cp.causal() ? "true" : "false"}, {"cp", num(cp.P())}, {"seq", num(cp.S())}, {"heads", num(cp.h())},
      {"kv_heads", num(cp.hk())}, {"head_dim", num(cp.d())}, {"v_head_dim", num(cp.dv())},
      {"dtype", s.dtype}, {"merge", to_string(cp.merge())}};
  // only when set: a plain run's trace is what it was before these options existed
  if (cp.window() > 0) m["window"] = num(cp.window());
  if (cp.chunk() > 0) m["chunk"] = num(cp.chunk());
  if (cp.sinks()) m["sinks"] = "true";
  if (!s.precision.empty()) m["precision"] = s.precision;
  return m;
}

namespace {

RunReport run_checked(const RunSpec& s, const Inputs& in) {
  RunReport rep;
  rep.spec = s;
  rep.trace = Trace(static_cast<int>(s.cp.P()));
  rep.trace.meta() = trace_meta(s);
  if (s.dtype == "float") run_typed<float>(s, in, rep);
  else run_typed<double>(s, in, rep);
#ifdef __GLIBC__
  malloc_trim(0);  // the CP run's freed blocks back to the system: the oracle's peak is its own (memory_estimate.h)
#endif

  // the oracle, in double, on the inputs rounded to the run's dtype
  const auto t0 = Clock::now();
  const bool f32 = s.dtype == "float";
  auto as_run = [&](const Tensor3<double>& x) { return f32 ? cast<double>(cast<float>(x)) : x; };
  const Packing& pk = s.cp.packing();
  std::vector<double> sinks = in.sinks;  // rounded to the run's dtype, as the CP run takes them
  if (f32)
    for (double& x : sinks) x = static_cast<double>(static_cast<float>(x));
  const DenseReference ref = dense_reference(s, as_run(in.q), as_run(in.k), as_run(in.v),
                                             s.backward ? as_run(in.dout) : Tensor3<double>(), sinks);
  // an overflow of the reference is not a result to compare (matching infinities would read as error 0)
  check_reference_finite(s, in, {&ref.o, &ref.lse, s.backward ? &ref.dq : nullptr, s.backward ? &ref.dk : nullptr,
                                 s.backward ? &ref.dv : nullptr});
  // what the CP run got non-finite where the reference is finite (their errors are +inf: a failure)
  const std::pair<const char*, const Tensor3<double>*> results[] = {{"o", &rep.o}, {"dq", &rep.dq}, {"dk", &rep.dk}, {"dv", &rep.dv}};
  for (const auto& [name, x] : results)
    if (first_non_finite(x->data.data(), static_cast<std::int64_t>(x->data.size()))) rep.non_finite.push_back(name);
  for (index_t t = 0; t < rep.lse.cols(); ++t)
    if (pk.real(t) && !rep.lse.col(t).isFinite().all()) {
      rep.non_finite.push_back("lse");
      break;
    }
  rep.err_o = rel_error(rep.o.data.data(), ref.o.data.data(), ref.o.data.size());
  rep.err_lse = rel_error(rep.lse.data(), ref.lse.data(), static_cast<size_t>(ref.lse.size()));
  if (s.backward) {
    rep.err_dq = rel_error(rep.dq.data.data(), ref.dq.data.data(), ref.dq.data.size());
    rep.err_dk = rel_error(rep.dk.data.data(), ref.dk.data.data(), ref.dk.data.size());
    rep.err_dv = rel_error(rep.dv.data.data(), ref.dv.data.data(), ref.dv.data.size());
    if (!ref.dsinks.empty()) rep.err_dsinks = rel_error(rep.dsinks.data(), ref.dsinks.data(), ref.dsinks.size());
  }
  rep.reference_seconds = secs(t0);
  // padding tokens must come out exactly zero, in every output and gradient
  for (index_t g = 0; g < pk.total(); ++g) {
    if (pk.real(g)) continue;
    for (const Tensor3<double>* x : {&rep.o, &rep.dq, &rep.dk, &rep.dv})
      if (x->n > 0)
        for (index_t e = 0; e < x->h * x->d; ++e) rep.padding_max_abs = std::max(rep.padding_max_abs, std::abs(x->token(g)[e]));
  }

  rep.dense_flops = dense_flops(s);
  summarize_trace(rep);
  return rep;
}

}  // namespace

RunReport run_experiment(const RunSpec& s, const Inputs& in) {
  validate(s);
  if (s.dtype == "float") check_float_range(in);
  try {
    return run_checked(s, in);
  } catch (const std::bad_alloc&) {  // Tensor3 names its own size (core/alloc.h); this is everything else
    throw Error("out of memory in the CPU reference run (its estimated peak is " + bytes_text(estimate_memory(s).bytes) +
                "; the machine has less available)");
  }
}

std::int64_t dense_flops(const RunSpec& s) {
  const CpSpec& cp = s.cp;
  const Packing& pk = cp.packing();
  std::int64_t pairs = 0;
  for (index_t sq = 0; sq < pk.num_seqs(); ++sq) pairs += cp.rule().pairs(pk.length(sq));
  return fwd_flops(pairs, cp.h(), cp.d(), cp.dv()) + (s.backward ? bwd_flops(pairs, cp.h(), cp.d(), cp.dv()) : 0);
}

void summarize_trace(RunReport& rep) {
  const Phase fwd = Phase::fwd, bwd = Phase::bwd;
  rep.flops_fwd = rep.trace.flops_per_rank(&fwd);
  rep.flops_bwd = rep.trace.flops_per_rank(&bwd);
  rep.flops = rep.trace.flops_per_rank();
  rep.bytes_sent = rep.trace.bytes_sent_per_rank();
  rep.bytes_recv = rep.trace.bytes_recv_per_rank();
  rep.messages = rep.trace.messages_sent_per_rank();
  const auto [mn, mx] = std::minmax_element(rep.flops.begin(), rep.flops.end());
  rep.work_ratio = *mn > 0 ? static_cast<double>(*mx) / static_cast<double>(*mn)
                           : std::numeric_limits<double>::infinity();
}

nlohmann::json report_json(const RunReport& r) {
  using nlohmann::json;
  auto opt = [](const std::optional<double>& e) { return e ? json(*e) : json(nullptr); };
  const RunSpec& s = r.spec;
  const CpSpec& cp = s.cp;
  std::int64_t total_msgs = 0;
  for (auto m : r.messages) total_msgs += m;
  const MemoryEstimate mem = estimate_memory(s);
  return json{
      {"mode", to_string(cp.mode())}, {"cp", cp.P()}, {"layout", to_string(cp.layout())}, {"causal", cp.causal()},
      {"window", cp.window() > 0 ? json(cp.window()) : json(nullptr)}, {"chunk", cp.chunk() > 0 ? json(cp.chunk()) : json(nullptr)},
      {"sinks", cp.sinks()}, {"ring_hops", cp.ring_hops() >= 0 ? json(cp.ring_hops()) : json(nullptr)},
      {"seq", cp.S()}, {"heads", cp.h()}, {"kv_heads", cp.hk()}, {"head_dim", cp.d()},
      {"v_head_dim", cp.dv()}, {"dtype", s.dtype}, {"merge", to_string(cp.merge())}, {"backward", s.backward},
      {"precision", s.precision.empty() ? json(nullptr) : json(s.precision)},
      {"seed", s.seed}, {"scale", cp.scale()},
      {"errors", {{"o", opt(r.err_o)}, {"lse", opt(r.err_lse)}, {"dq", opt(r.err_dq)}, {"dk", opt(r.err_dk)}, {"dv", opt(r.err_dv)},
                  {"dsinks", opt(r.err_dsinks)}}},
      {"flops_per_rank", r.flops}, {"flops_fwd_per_rank", r.flops_fwd}, {"flops_bwd_per_rank", r.flops_bwd},
      {"dense_flops", r.dense_flops},
      {"work_ratio", std::isfinite(r.work_ratio) ? json(r.work_ratio) : json(nullptr)},
      {"bytes_sent_per_rank", r.bytes_sent}, {"bytes_recv_per_rank", r.bytes_recv},
      {"messages_per_rank", r.messages}, {"messages", total_msgs},
      {"cu_seqlens", cp.fields().cu_seqlens}, {"cu_seqlens_padded", cp.thd() ? cp.packing().cu_seqlens_padded : std::vector<index_t>{}},
      {"padding_max_abs", r.padding_max_abs}, {"non_finite", r.non_finite},
      {"memory_estimate", {{"bytes", mem.bytes}, {"phase", mem.phase}}},
      {"hcp", cp.mode() == Mode::a2a_p2p ? json{cp.icp(), cp.ocp()} : json(nullptr)},
      {"kv_replication", cp.kv_replication()},
      {"seconds", r.seconds}, {"reference_seconds", r.reference_seconds}};
}

}  // namespace cplab
