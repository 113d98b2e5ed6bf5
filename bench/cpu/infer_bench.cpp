// infer_bench.cpp: time_infer, check_infer (see infer_bench.h).
#include "infer_bench.h"

#include <algorithm>
#include <chrono>
#include <limits>
#include <vector>

#include "core/flops.h"
#include "core/kernel_route.h"
#include "infer/infer_attention.h"
#include "infer/infer_run.h"
#include "sim/comm.h"

namespace cplab::cpubench {

namespace {
using Clock = std::chrono::steady_clock;
double since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }
}  // namespace

template <class T>
InferTime time_infer(const InferSpec& spec, int reps) {
  InferRunSpec rs{spec};
  rs.allow_long = true;
  const InferInputs in = make_infer_inputs(rs);
  const InferLocal<T> local = infer_shard<T>(spec, in.q, in.k, in.v);
  const std::vector<T> sinks(in.sinks.begin(), in.sinks.end());
  InferTime t;
  t.fwd_s = std::numeric_limits<double>::infinity();
  for (int r = 0; r < reps; ++r) {
    SimComm comm(static_cast<int>(spec.N()), nullptr);
    const auto t0 = Clock::now();
    [[maybe_unused]] const InferOutput<T> out = infer_forward<T>(spec, local, comm, sinks);
    t.fwd_s = std::min(t.fwd_s, since(t0));
  }
  double pairs = 0;
  for (index_t b = 0; b < spec.B(); ++b) pairs += static_cast<double>(infer_request_pairs(spec, b));
  t.fwd_flops = fwd_flops(pairs, static_cast<double>(spec.h()), static_cast<double>(spec.d()),
                          static_cast<double>(spec.dv()));
  return t;
}

double check_infer(const InferSpec& spec, const std::string& dtype) {
  InferRunSpec rs{spec};
  rs.dtype = dtype;
  validate(rs);
  // the route the timings run (the automatic rule would pick the portable one at the check's size)
  const RouteScope fast(RouteChoice::fast);
  return run_infer(rs, make_infer_inputs(rs)).max_error();
}

template InferTime time_infer<float>(const InferSpec&, int);
template InferTime time_infer<double>(const InferSpec&, int);

}  // namespace cplab::cpubench
