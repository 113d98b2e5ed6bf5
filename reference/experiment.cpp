// experiment.cpp: validation, inputs, and run_experiment (see experiment.h).
#include "experiment.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <limits>
#include <nlohmann/json.hpp>
#include <random>

#include "error.h"
#include "flops.h"
#include "ring_p2p.h"

namespace cplab {

namespace {

using Clock = std::chrono::steady_clock;
double secs(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

std::string num(index_t x) { return std::to_string(x); }

// max |x - ref| / max |ref|; -inf matching -inf is equal, any other inf or NaN is an infinite error
double rel_err(const double* x, const double* ref, size_t n) {
  double e = 0, m = 0;
  for (size_t i = 0; i < n; ++i) {
    if (std::isinf(x[i]) || std::isinf(ref[i]) || std::isnan(x[i]) || std::isnan(ref[i])) {
      if (x[i] == ref[i]) continue;
      return std::numeric_limits<double>::infinity();
    }
    e = std::max(e, std::abs(x[i] - ref[i]));
    m = std::max(m, std::abs(ref[i]));
  }
  return m > 0 ? e / m : e;
}

template <class T>
Tensor3<T> rounded(const Tensor3<double>& x) {
  return cast<T>(x);
}

template <class T>
void run_typed(const RunSpec& s, const Inputs& in, RunReport& rep) {
  const Partition part(s.layout, s.seq, s.cp);
  const RingConfig<T> cfg{part, s.causal, static_cast<T>(s.softmax_scale()), s.merge};
  const PerRank<T> q = shard(part, rounded<T>(in.q)), k = shard(part, rounded<T>(in.k)),
                   v = shard(part, rounded<T>(in.v));
  SimComm comm(static_cast<int>(s.cp), &rep.trace);
  const auto t0 = Clock::now();
  const RingForward<T> f = ring_forward(cfg, q, k, v, comm);
  RingGrads<T> g;
  if (s.backward) g = ring_backward(cfg, q, k, v, f, shard(part, rounded<T>(in.dout)), comm);
  rep.seconds = secs(t0);
  rep.o = cast<double>(unshard(part, f.o));
  rep.lse = cast<double>(unshard_rows(part, f.lse));
  if (s.backward) {
    rep.dq = cast<double>(unshard(part, g.dq));
    rep.dk = cast<double>(unshard(part, g.dk));
    rep.dv = cast<double>(unshard(part, g.dv));
  }
}

}  // namespace

const std::vector<std::string>& known_modes() {
  static const std::vector<std::string> m = {"p2p", "allgather", "a2a", "a2a+p2p"};
  return m;
}
bool mode_implemented(const std::string& mode) { return mode == "p2p"; }

void validate(const RunSpec& s) {
  const auto& km = known_modes();
  require(std::find(km.begin(), km.end(), s.mode) != km.end(),
          "mode '" + s.mode + "' is not one of: p2p, allgather, a2a, a2a+p2p");
  require(mode_implemented(s.mode), "mode '" + s.mode + "' is not implemented yet (implemented: p2p)");
  require(s.cp >= 1, "cp " + num(s.cp) + " must be >= 1");
  require(s.cp <= kMaxRanks, "cp " + num(s.cp) + " is more than the " + num(kMaxRanks) +
                                 " ranks the CPU reference simulates (a ring computes cp*cp tiles)");
  require(s.seq >= 1, "seq " + num(s.seq) + " must be >= 1");
  require(s.heads >= 1, "heads " + num(s.heads) + " must be >= 1");
  require(s.kv_heads >= 1, "kv-heads " + num(s.kv_heads) + " must be >= 1");
  require(s.heads % s.kv_heads == 0, "kv-heads " + num(s.kv_heads) + " does not divide heads " + num(s.heads) +
                                         " (GQA/MQA needs heads = kv-heads * group size)");
  require(s.head_dim >= 1, "head-dim " + num(s.head_dim) + " must be >= 1");
  require(s.v_head_dim >= 0, "v-head-dim " + num(s.v_head_dim) + " must be >= 1 (or 0 for = head-dim)");
  require(s.dtype == "float" || s.dtype == "double", "dtype '" + s.dtype + "' is not one of: float, double");
  require(s.scale >= 0 && std::isfinite(s.scale), "scale must be a finite number > 0 (or 0 for 1/sqrt(head-dim))");
  (void)Partition(s.layout, s.seq, s.cp);  // the layout's divisibility rule
  // the reference keeps about 16 (s, h, d)-sized double tensors alive (inputs, outputs, shards,
  // oracle, gradients) plus one row block of scores per thread
  const double elems = static_cast<double>(s.seq) * static_cast<double>(s.heads) *
                       static_cast<double>(std::max(s.head_dim, s.dv()));
  const double gib = 16.0 * 8.0 * elems / (1024.0 * 1024.0 * 1024.0);
  require(gib <= 16.0, "seq * heads * head-dim = " + std::to_string(static_cast<long long>(elems)) +
                           " elements needs about " + std::to_string(static_cast<int>(gib)) +
                           " GiB in the CPU reference; the limit is 16 GiB");
  const double work = cpu_flops_estimate(s);
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.1f TFLOP", work * 1e-12);
  require(s.allow_long || work <= kMaxCpuFlops,
          std::string("this run needs about ") + buf + " of CPU work (CP mode + dense oracle), more than the " +
              "4 TFLOP limit (a few minutes on 2 cores); pass --allow-long to run it anyway");
}

double cpu_flops_estimate(const RunSpec& s) {
  const double S = static_cast<double>(s.seq);
  const double pairs = s.causal ? S * (S + 1) / 2 : S * S;
  const double per_pair = 2.0 * static_cast<double>(s.heads) *
                          static_cast<double>(s.head_dim + s.dv() + (s.backward ? 3 * s.head_dim + 2 * s.dv() : 0));
  return 2.0 * pairs * per_pair;  // the CP run and the dense oracle each do the useful work once
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
  in.q = fill(s.seq, s.heads, s.head_dim);
  in.k = fill(s.seq, s.kv_heads, s.head_dim);
  in.v = fill(s.seq, s.kv_heads, s.dv());
  if (s.backward) in.dout = fill(s.seq, s.heads, s.dv());
  return in;
}

double RunReport::max_error() const {
  double m = 0;
  for (const auto& e : {err_o, err_lse, err_dq, err_dk, err_dv})
    if (e) m = std::max(m, *e);
  return m;
}

RunReport run_experiment(const RunSpec& s, const Inputs& in) {
  validate(s);
  RunReport rep;
  rep.spec = s;
  rep.trace = Trace(static_cast<int>(s.cp));
  rep.trace.meta() = {{"mode", s.mode}, {"layout", to_string(s.layout)}, {"causal", s.causal ? "true" : "false"},
                      {"cp", num(s.cp)}, {"seq", num(s.seq)}, {"heads", num(s.heads)},
                      {"kv_heads", num(s.kv_heads)}, {"head_dim", num(s.head_dim)}, {"v_head_dim", num(s.dv())},
                      {"dtype", s.dtype}, {"merge", to_string(s.merge)}};
  if (s.dtype == "float") run_typed<float>(s, in, rep);
  else run_typed<double>(s, in, rep);

  // the oracle, in double, on the inputs rounded to the run's dtype
  const auto t0 = Clock::now();
  const bool f32 = s.dtype == "float";
  const Tensor3<double> q = f32 ? cast<double>(cast<float>(in.q)) : in.q;
  const Tensor3<double> k = f32 ? cast<double>(cast<float>(in.k)) : in.k;
  const Tensor3<double> v = f32 ? cast<double>(cast<float>(in.v)) : in.v;
  const Mask mask = s.causal ? Mask::causal() : Mask::none();
  const AttnOut<double> ref = dense_forward(q, k, v, mask, s.softmax_scale());
  rep.err_o = rel_err(rep.o.data.data(), ref.o.data.data(), ref.o.data.size());
  rep.err_lse = rel_err(rep.lse.data(), ref.lse.data(), static_cast<size_t>(ref.lse.size()));
  if (s.backward) {
    const Tensor3<double> dout = f32 ? cast<double>(cast<float>(in.dout)) : in.dout;
    const AttnGrads<double> g = dense_backward(q, k, v, ref, dout, mask, s.softmax_scale());
    rep.err_dq = rel_err(rep.dq.data.data(), g.dq.data.data(), g.dq.data.size());
    rep.err_dk = rel_err(rep.dk.data.data(), g.dk.data.data(), g.dk.data.size());
    rep.err_dv = rel_err(rep.dv.data.data(), g.dv.data.data(), g.dv.data.size());
  }
  rep.reference_seconds = secs(t0);

  const Phase fwd = Phase::fwd, bwd = Phase::bwd;
  rep.flops_fwd = rep.trace.flops_per_rank(&fwd);
  rep.flops_bwd = rep.trace.flops_per_rank(&bwd);
  rep.flops = rep.trace.flops_per_rank();
  rep.bytes_sent = rep.trace.bytes_sent_per_rank();
  rep.messages = rep.trace.messages_sent_per_rank();
  const std::int64_t pairs = visible_pairs(mask, s.seq, s.seq);
  rep.dense_flops = fwd_flops(pairs, s.heads, s.head_dim, s.dv()) +
                    (s.backward ? bwd_flops(pairs, s.heads, s.head_dim, s.dv()) : 0);
  const auto [mn, mx] = std::minmax_element(rep.flops.begin(), rep.flops.end());
  rep.work_ratio = *mn > 0 ? static_cast<double>(*mx) / static_cast<double>(*mn)
                           : std::numeric_limits<double>::infinity();
  return rep;
}

nlohmann::json report_json(const RunReport& r) {
  using nlohmann::json;
  auto opt = [](const std::optional<double>& e) { return e ? json(*e) : json(nullptr); };
  const RunSpec& s = r.spec;
  std::int64_t total_msgs = 0;
  for (auto m : r.messages) total_msgs += m;
  return json{
      {"mode", s.mode}, {"cp", s.cp}, {"layout", to_string(s.layout)}, {"causal", s.causal},
      {"seq", s.seq}, {"heads", s.heads}, {"kv_heads", s.kv_heads}, {"head_dim", s.head_dim},
      {"v_head_dim", s.dv()}, {"dtype", s.dtype}, {"merge", to_string(s.merge)}, {"backward", s.backward},
      {"seed", s.seed}, {"scale", s.softmax_scale()},
      {"errors", {{"o", opt(r.err_o)}, {"lse", opt(r.err_lse)}, {"dq", opt(r.err_dq)}, {"dk", opt(r.err_dk)}, {"dv", opt(r.err_dv)}}},
      {"flops_per_rank", r.flops}, {"flops_fwd_per_rank", r.flops_fwd}, {"flops_bwd_per_rank", r.flops_bwd},
      {"dense_flops", r.dense_flops},
      {"work_ratio", std::isfinite(r.work_ratio) ? json(r.work_ratio) : json(nullptr)},
      {"bytes_sent_per_rank", r.bytes_sent}, {"messages_per_rank", r.messages}, {"messages", total_msgs},
      {"seconds", r.seconds}, {"reference_seconds", r.reference_seconds}};
}

}  // namespace cplab
