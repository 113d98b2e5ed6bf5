// test_interrupt.cpp: a requested interrupt stops the reference's long calls (core/interrupt.h).
//
// What it is: another thread requests the interrupt 50 ms into a long call (a CP run, the dense
// oracle alone at 8K tokens, cplab check's hypotheses); the call must throw Interrupted within 0.5 s
// of the request, and after clear_interrupt() the next call completes. Also: Interrupted is not a
// cplab::Error, and interruption_point() is a no-op inside an OpenMP parallel region.
// What it is not: the Python binding's Ctrl-C (python/ tests that), or a benchmark (the latencies are
// printed with MESSAGE, the bound is loose for a loaded machine).
#include <doctest/doctest.h>
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <thread>
#include <type_traits>

#include "check/check.h"
#include "check_claimed.h"
#include "core/error.h"
#include "core/interrupt.h"
#include "run/experiment.h"

using namespace cplab;

namespace {

using Clock = std::chrono::steady_clock;

// f(): must run longer than the 50 ms after which another thread requests the interrupt; returns
// the seconds from the request to the Interrupted f threw (REQUIREs that it threw)
template <class F>
double stop_latency(F&& f) {
  clear_interrupt();
  Clock::time_point requested{};
  std::thread t([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    requested = Clock::now();
    request_interrupt();
  });
  bool thrown = false;
  Clock::time_point caught{};
  try {
    f();
  } catch (const Interrupted&) {
    caught = Clock::now();
    thrown = true;
  }
  t.join();
  clear_interrupt();
  REQUIRE_MESSAGE(thrown, "the call ended before the interrupt was requested, or ignored it");
  return std::chrono::duration<double>(caught - requested).count();
}

RunSpec long_run(index_t seq) {  // p2p zigzag causal, cp 8, 8 heads of 64, forward + backward, double
  CpFields f;
  f.mode = Mode::p2p;
  f.layout = Layout::zigzag;
  f.causal = true;
  f.cp = 8;
  f.seq = seq;
  f.heads = 8;
  f.kv_heads = 8;
  f.head_dim = 64;
  RunSpec s{CpSpec(f), true};
  s.seed = 3;
  return s;
}

}  // namespace

TEST_CASE("interrupt: Interrupted is no cplab::Error, and the flag is a flag") {
  static_assert(std::is_base_of_v<std::exception, Interrupted> && !std::is_base_of_v<Error, Interrupted>);
  CHECK(std::string(Interrupted().what()) == "interrupted");
  clear_interrupt();
  CHECK(!interrupt_requested());
  CHECK_NOTHROW(interruption_point());
  request_interrupt();
  CHECK(interrupt_requested());
  CHECK_THROWS_AS(interruption_point(), Interrupted);
  // inside a parallel region (even of one thread) it must not throw: the exception could not leave it
  int thrown = 0;
  for (int threads : {1, 2}) {
#pragma omp parallel num_threads(threads)
    {
      try {
        interruption_point();
      } catch (...) {
#pragma omp atomic
        ++thrown;
      }
    }
  }
  CHECK(thrown == 0);
  clear_interrupt();
  CHECK(!interrupt_requested());
}

TEST_CASE("interrupt: a long CP run stops within 0.5 s of the request, and the next run completes") {
  const RunSpec s = long_run(4096);
  const Inputs in = make_inputs(s);
  const double after = stop_latency([&] { (void)run_experiment(s, in); });
  MESSAGE("run_experiment (p2p cp 8, seq 4096, 8 x 64, causal, backward, double) stopped " << after * 1e3
                                                                                          << " ms after the request");
  CHECK(after < 0.5);
  CHECK(!interrupt_requested());
  const RunSpec small = long_run(64);
  const RunReport r = run_experiment(small, make_inputs(small));
  CHECK(r.max_error() < run_tolerance("double"));
}

TEST_CASE("interrupt: the dense oracle alone at 8K tokens x 8 heads stops within 0.5 s") {
  RunSpec s = long_run(8192);
  s.backward = false;
  const Inputs in = make_inputs(s);
  double worst = 0;
  for (int i = 0; i < 5; ++i)
    worst = std::max(worst, stop_latency([&] { (void)dense_reference(s, in.q, in.k, in.v, Tensor3<double>(), {}); }));
  MESSAGE("dense_reference (seq 8192, 8 x 64, causal, forward) stopped at most " << worst * 1e3
                                                                                 << " ms after the request (5 tries)");
  CHECK(worst < 0.5);
  s.backward = true;
  const Inputs bin = make_inputs(s);
  const double bwd = stop_latency([&] {
    const DenseReference r = dense_reference(s, bin.q, bin.k, bin.v, bin.dout, {});
    (void)r;
  });
  MESSAGE("dense_reference with the backward stopped " << bwd * 1e3 << " ms after the request");
  CHECK(bwd < 0.5);
}

TEST_CASE("interrupt: cplab check stops among its hypotheses") {
  const RunSpec small = long_run(64);
  const test::Run correct = test::correct_run(small.cp.fields());
  std::array<Tensor3<double>, 5> noise = correct.out;  // no fault explains noise: every family and the pair search run
  for (Tensor3<double>& x : noise)
    for (std::size_t i = 0; i < x.data.size(); ++i) x.data[i] += 1e-3 * static_cast<double>(i % 7);
  const CheckData data = test::claimed(correct.in, noise, NpyDtype::f8);
  const auto t0 = Clock::now();
  const CheckReport whole = run_check(correct.spec, data);
  const double seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  MESSAGE("run_check on noise: " << seconds << " s, of which the reference " << whole.reference_seconds << " s");
  REQUIRE(whole.reference_seconds < 0.05);  // the request lands among the hypotheses
  REQUIRE(seconds > 0.5);
  const double after = stop_latency([&] { (void)run_check(correct.spec, data); });
  MESSAGE("run_check stopped " << after * 1e3 << " ms after the request");
  CHECK(after < 0.5);
}
