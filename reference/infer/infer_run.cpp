// infer_run.cpp: inputs, shards, the dense oracle and run_infer (see infer_run.h).
#include "infer/infer_run.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <limits>
#include <new>
#include <random>

#include "core/attention_kernel.h"
#include "core/error.h"
#include "core/flops.h"
#include "core/interrupt.h"
#include "core/rel_error.h"
#include "core/util.h"
#include "run/experiment.h"
#include "run/memory_estimate.h"
#include "run/seeded_sinks.h"

namespace cplab {

namespace {

using Clock = std::chrono::steady_clock;
double secs(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

Tensor3<double> rows_of(const Tensor3<double>& x, index_t begin, index_t n) {
  Tensor3<double> y(n, x.h, x.d);
  std::copy(x.token(begin), x.token(begin) + n * x.h * x.d, y.data.begin());
  return y;
}

template <class T>
Tensor3<T> gather(const Tensor3<double>& x, const std::vector<index_t>& rows) {
  Tensor3<T> y(static_cast<index_t>(rows.size()), x.h, x.d);
  const index_t w = x.h * x.d;
  for (size_t i = 0; i < rows.size(); ++i)
    for (index_t e = 0; e < w; ++e) y.data[i * static_cast<size_t>(w) + static_cast<size_t>(e)] = static_cast<T>(x.token(rows[i])[e]);
  return y;
}

void check_input_shapes(const InferSpec& s, const InferInputs& in) {
  const bool ok = in.q.n == s.T() && in.q.h == s.h() && in.q.d == s.d() && in.k.n == s.KV() && in.k.h == s.hk() &&
                  in.k.d == s.d() && in.v.n == s.KV() && in.v.h == s.hk() && in.v.d == s.dv();
  require(ok, "the inputs' shapes disagree with the step: " + infer_input_shapes(s));
  require(in.sinks.size() == (s.sinks() ? static_cast<size_t>(s.h()) : 0), "one sink logit per query head with --sinks");
}

template <class T>
void check_float_range(const Tensor3<double>& x, const char* name) {
  for (double e : x.data)
    require(!std::isfinite(e) || std::fabs(e) <= static_cast<double>(std::numeric_limits<T>::max()),
            std::string(name) + " holds " + approx(e) + ", beyond the float range (run it with --dtype double)");
}

template <class T>
void run_typed(const InferRunSpec& rs, const InferInputs& in, InferReport& rep) {
  const InferSpec& s = rs.spec;
  const InferLocal<T> local = infer_shard<T>(s, in.q, in.k, in.v);
  SimComm comm(static_cast<int>(s.N()), &rep.trace);
  const std::vector<T> sinks(in.sinks.begin(), in.sinks.end());
  const auto t0 = Clock::now();
  const InferOutput<T> out = infer_forward<T>(s, local, comm, sinks);
  rep.seconds = secs(t0);
  infer_unshard<T>(s, out, rep.o, rep.lse);
}

}  // namespace

std::string infer_input_shapes(const InferSpec& s) {
  return "q.npy must be (T, heads, head-dim) = (" + num(s.T()) + ", " + num(s.h()) + ", " + num(s.d()) +
         "), k.npy (P+T, kv-heads, head-dim) = (" + num(s.KV()) + ", " + num(s.hk()) + ", " + num(s.d()) +
         ") and v.npy (P+T, kv-heads, v-head-dim) = (" + num(s.KV()) + ", " + num(s.hk()) + ", " + num(s.dv()) +
         "), each request's cached tokens first, then its new ones";
}

InferInputs make_infer_inputs(const InferRunSpec& rs) {
  const InferSpec& s = rs.spec;
  std::mt19937_64 rng(rs.seed);
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  auto fill = [&](index_t n, index_t h, index_t d) {
    Tensor3<double> x(n, h, d);
    for (double& e : x.data) e = u(rng);
    return x;
  };
  InferInputs in;
  in.q = fill(s.T(), s.h(), s.d());
  in.k = fill(s.KV(), s.hk(), s.d());
  in.v = fill(s.KV(), s.hk(), s.dv());
  if (s.sinks())
    in.sinks = s.fields().sink_logits.empty() ? seeded_sink_logits(rs.seed, s.h()) : s.fields().sink_logits;
  return in;
}

template <class T>
InferLocal<T> infer_shard(const InferSpec& s, const Tensor3<double>& q, const Tensor3<double>& k, const Tensor3<double>& v) {
  InferLocal<T> l;
  for (index_t r = 0; r < s.N(); ++r) {
    l.q.push_back(gather<T>(q, s.q_rows(r)));
    l.k.push_back(gather<T>(k, s.kv_rows(r)));
    l.v.push_back(gather<T>(v, s.kv_rows(r)));
  }
  return l;
}

template <class T>
void infer_unshard(const InferSpec& s, const InferOutput<T>& out, Tensor3<double>& o, Rows<double>& lse) {
  o = Tensor3<double>(s.T(), s.h(), s.dv());
  lse = Rows<double>::Constant(s.h(), s.T(), std::numeric_limits<double>::quiet_NaN());
  const index_t w = s.h() * s.dv();
  for (index_t r = 0; r < s.N(); ++r) {
    const std::vector<index_t>& rows = s.q_rows(r);
    for (size_t i = 0; i < rows.size(); ++i) {
      for (index_t e = 0; e < w; ++e) o.token(rows[i])[e] = static_cast<double>(out.o[static_cast<size_t>(r)].token(static_cast<index_t>(i))[e]);
      for (index_t hh = 0; hh < s.h(); ++hh)
        lse(hh, rows[i]) = static_cast<double>(out.lse[static_cast<size_t>(r)](hh, static_cast<index_t>(i)));
    }
  }
}

// The oracle: one request at a time, its T_b queries at positions P_b + t against its P_b + T_b
// keys under the run's PositionRule (mask_rule.h keys(position, length)), sinks inside the softmax
InferDense infer_dense_reference(const InferSpec& s, const Tensor3<double>& q, const Tensor3<double>& k,
                                 const Tensor3<double>& v, const std::vector<double>& sinks) {
  InferDense r{Tensor3<double>(s.T(), s.h(), s.dv()), Rows<double>(s.h(), s.T())};
  const PositionRule rule = s.rule();
  for (index_t b = 0; b < s.B(); ++b) {
    interruption_point();  // core/interrupt.h; the kernel also polls within a request
    const index_t P = s.fields().cached[static_cast<size_t>(b)], T = s.fields().fresh[static_cast<size_t>(b)];
    std::vector<std::int64_t> lo(static_cast<size_t>(T)), hi(static_cast<size_t>(T));
    for (index_t t = 0; t < T; ++t) {
      const KeyRange kr = rule.keys(P + t, P + T);
      lo[static_cast<size_t>(t)] = kr.lo, hi[static_cast<size_t>(t)] = kr.hi;
    }
    const Tensor3<double> qb = rows_of(q, s.qoff()[static_cast<size_t>(b)], T);
    const Tensor3<double> kb = rows_of(k, s.koff()[static_cast<size_t>(b)], P + T);
    const Tensor3<double> vb = rows_of(v, s.koff()[static_cast<size_t>(b)], P + T);
    Tensor3<double> ob(T, s.h(), s.dv());
    Rows<double> lb(s.h(), T);
    attention_forward<double>(qb.view(), kb.view(), vb.view(), Mask::ranges(std::move(lo), std::move(hi)), s.scale(),
                              ob.view(), rows_view(lb), sinks.empty() ? nullptr : sinks.data());
    std::copy(ob.data.begin(), ob.data.end(), r.o.token(s.qoff()[static_cast<size_t>(b)]));
    r.lse.block(0, s.qoff()[static_cast<size_t>(b)], s.h(), T) = lb;
  }
  return r;
}

std::int64_t infer_request_pairs(const InferSpec& s, index_t b) {
  const index_t P = s.fields().cached[static_cast<size_t>(b)], T = s.fields().fresh[static_cast<size_t>(b)];
  const PositionRule rule = s.rule();
  std::int64_t pairs = 0;
  for (index_t t = 0; t < T; ++t) {
    const KeyRange kr = rule.keys(P + t, P + T);
    pairs += std::max<std::int64_t>(0, kr.hi - kr.lo);
  }
  return pairs;
}

std::int64_t infer_dense_flops(const InferSpec& s) {
  std::int64_t pairs = 0;
  for (index_t b = 0; b < s.B(); ++b) pairs += infer_request_pairs(s, b);
  return fwd_flops(pairs, s.h(), s.d(), s.dv());
}

double InferReport::max_error() const {
  double m = 0;
  for (const auto& e : {err_o, err_lse})
    if (e) m = std::max(m, *e);
  return m;
}

InferReport run_infer(const InferRunSpec& rs, const InferInputs& in) {
  validate(rs);
  const InferSpec& s = rs.spec;
  check_input_shapes(s, in);
  if (rs.dtype == "float")
    for (const auto& [x, name] : {std::pair{&in.q, "q"}, {&in.k, "k"}, {&in.v, "v"}}) check_float_range<float>(*x, name);
  InferReport rep;
  rep.spec = rs;
  rep.trace = Trace(static_cast<int>(s.N()));
  rep.trace.meta() = infer_trace_meta(rs);
  try {
    if (rs.dtype == "float") run_typed<float>(rs, in, rep);
    else run_typed<double>(rs, in, rep);
    const auto t0 = Clock::now();
    const InferDense ref = infer_dense_reference(s, in.q, in.k, in.v, in.sinks);
    rep.reference_seconds = secs(t0);
    for (double e : ref.lse.reshaped())
      require(std::isfinite(e), "the dense reference overflows on these inputs (an LSE is not finite): nothing to "
                                "compare with");
    RelError eo, el;
    eo.add(rep.o.data.data(), ref.o.data.data(), ref.o.data.size());
    el.add(rep.lse.data(), ref.lse.data(), static_cast<size_t>(ref.lse.size()));
    rep.err_o = eo.value();
    rep.err_lse = el.value();
    if (eo.failed) rep.non_finite.push_back("o");
    if (el.failed) rep.non_finite.push_back("lse");
  } catch (const std::bad_alloc&) {
    throw Error("out of memory in the CPU reference run (its estimated peak is " +
                approx(static_cast<double>(infer_memory_estimate(rs)) / (1 << 20)) + " MiB; the machine has less available)");
  }
  rep.flops = rep.trace.flops_per_rank();
  rep.bytes_sent = rep.trace.bytes_sent_per_rank();
  rep.bytes_recv = rep.trace.bytes_recv_per_rank();
  rep.messages = rep.trace.messages_sent_per_rank();
  rep.dense_flops = infer_dense_flops(s);
  const auto [mn, mx] = std::minmax_element(rep.flops.begin(), rep.flops.end());
  rep.work_ratio = *mn > 0 ? static_cast<double>(*mx) / static_cast<double>(*mn) : std::numeric_limits<double>::infinity();
  return rep;
}

template InferLocal<float> infer_shard<float>(const InferSpec&, const Tensor3<double>&, const Tensor3<double>&,
                                              const Tensor3<double>&);
template InferLocal<double> infer_shard<double>(const InferSpec&, const Tensor3<double>&, const Tensor3<double>&,
                                                const Tensor3<double>&);
template void infer_unshard<float>(const InferSpec&, const InferOutput<float>&, Tensor3<double>&, Rows<double>&);
template void infer_unshard<double>(const InferSpec&, const InferOutput<double>&, Tensor3<double>&, Rows<double>&);

}  // namespace cplab
