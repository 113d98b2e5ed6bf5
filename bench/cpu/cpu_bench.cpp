// cpu_bench.cpp: gemm_peak, time_mode, check_mode (see cpu_bench.h).
#include "cpu_bench.h"

#include <omp.h>

#include <algorithm>
#include <chrono>
#include <limits>
#include <random>
#include <vector>

#include "core/flops.h"
#include "core/gemm.h"
#include "core/kernel_route.h"
#include "layout/layout.h"
#include "modes/cp_attention.h"
#include "run/experiment.h"

namespace cplab::cpubench {

namespace {

using Clock = std::chrono::steady_clock;
double since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

template <class T>
std::vector<T> uniform(size_t n, unsigned seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  std::vector<T> x(n);
  for (T& e : x) e = static_cast<T>(u(rng));
  return x;
}

}  // namespace

template <class T>
double gemm_peak(index_t size, int threads, int reps) {
  const size_t n2 = static_cast<size_t>(size) * static_cast<size_t>(size);
  const std::vector<T> a = uniform<T>(n2, 1), b = uniform<T>(n2, 2);
  std::vector<T> c(n2);
  const int saved = omp_get_max_threads();
  omp_set_num_threads(threads);
  double best = std::numeric_limits<double>::infinity();
  for (int r = 0; r <= reps; ++r) {  // r = 0: warm-up (threads started, pages touched)
    const auto t0 = Clock::now();
    gemm<T>(Route::fast, Trans::no, Trans::no, size, size, size, T(1), a.data(), size, b.data(), size, T(0), c.data(), size);
    if (r > 0) best = std::min(best, since(t0));
  }
  omp_set_num_threads(saved);
  return 2.0 * static_cast<double>(size) * static_cast<double>(size) * static_cast<double>(size) / best / 1e9;
}

template <class T>
ModeTime time_mode(const CpSpec& spec, int reps) {
  RunSpec rs;
  rs.cp = spec;
  rs.backward = true;
  rs.allow_long = true;
  const Inputs in = make_inputs(rs);
  const Partition& part = spec.partition();
  const index_t f = spec.kv_replication();  // KV heads repeated for the all-to-all, as run_experiment does
  const PerRank<T> q = shard(part, cast<T>(in.q));
  const PerRank<T> k = shard(part, f > 1 ? repeat_heads(cast<T>(in.k), f) : cast<T>(in.k));
  const PerRank<T> v = shard(part, f > 1 ? repeat_heads(cast<T>(in.v), f) : cast<T>(in.v));
  const PerRank<T> dout = shard(part, cast<T>(in.dout));
  ModeTime t;
  t.fwd_s = t.bwd_s = std::numeric_limits<double>::infinity();
  for (int r = 0; r < reps; ++r) {
    SimComm comm(static_cast<int>(spec.P()), nullptr);
    CpState<T> state;
    auto t0 = Clock::now();
    [[maybe_unused]] const CpOutput<T> out = cp_attention_forward(spec, q, k, v, comm, state);
    t.fwd_s = std::min(t.fwd_s, since(t0));
    t0 = Clock::now();
    [[maybe_unused]] const CpGrads<T> g = cp_attention_backward(spec, state, dout, comm);
    t.bwd_s = std::min(t.bwd_s, since(t0));
  }
  const double pairs = static_cast<double>(spec.rule().pairs(spec.S()));
  const double h = static_cast<double>(spec.h()), d = static_cast<double>(spec.d()), dv = static_cast<double>(spec.dv());
  t.fwd_flops = fwd_flops(pairs, h, d, dv);
  t.bwd_flops = bwd_flops(pairs, h, d, dv);
  return t;
}

double check_mode(const CpSpec& spec, const std::string& dtype) {
  RunSpec rs;
  rs.cp = spec;
  rs.backward = true;
  rs.dtype = dtype;
  validate(rs);
  // the route the timings run (at the check's small size the automatic rule would pick the
  // portable one): the fast route, forced for this run only
  const RouteScope fast(RouteChoice::fast);
  return run_experiment(rs, make_inputs(rs)).max_error();
}

template double gemm_peak<float>(index_t, int, int);
template double gemm_peak<double>(index_t, int, int);
template ModeTime time_mode<float>(const CpSpec&, int);
template ModeTime time_mode<double>(const CpSpec&, int);

}  // namespace cplab::cpubench
