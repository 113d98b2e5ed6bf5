// test_interrupt.cpp: a requested interrupt stops the reference's long calls (core/interrupt.h).
//
// What it is: with an interrupt requested, a CP run (forward and backward), the dense oracle and
// cplab check each throw Interrupted, and after clear_interrupt() the next call completes. Also:
// Interrupted is not a cplab::Error, and interruption_point() is a no-op inside an OpenMP parallel
// region. No clock: how soon a call stops after a request from another thread is printed, not
// asserted, by python/tests/test_interrupt.py.
// What it is not: the Python binding's Ctrl-C (python/tests/ tests that).
#include <doctest/doctest.h>
#include <omp.h>

#include <algorithm>
#include <type_traits>

#include "check/check.h"
#include "check_claimed.h"
#include "core/error.h"
#include "core/interrupt.h"
#include "run/experiment.h"

using namespace cplab;

namespace {

// f() with an interrupt requested before it starts: it must end by throwing Interrupted (REQUIREd),
// and the flag stays set until cleared. Deterministic (no clock): how soon a long call stops after a
// request from another thread is measured by python/tests/test_interrupt.py, which prints it.
template <class F>
void throws_interrupted(F&& f) {
  clear_interrupt();
  request_interrupt();
  bool thrown = false;
  try {
    f();
  } catch (const Interrupted&) {
    thrown = true;
  }
  CHECK(interrupt_requested());
  clear_interrupt();
  REQUIRE_MESSAGE(thrown, "the call ignored the requested interrupt");
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

TEST_CASE("interrupt: a CP run, forward and backward, stops at its interruption points, and the next run completes") {
  const RunSpec s = long_run(256);
  const Inputs in = make_inputs(s);
  throws_interrupted([&] { (void)run_experiment(s, in); });
  CHECK(!interrupt_requested());
  const RunReport r = run_experiment(s, in);
  CHECK(r.max_error() < run_tolerance("double"));
}

TEST_CASE("interrupt: the dense oracle stops, forward and backward") {
  RunSpec s = long_run(256);
  const Inputs in = make_inputs(s);
  throws_interrupted([&] { (void)dense_reference(s, in.q, in.k, in.v, in.dout, {}); });
  s.backward = false;
  throws_interrupted([&] { (void)dense_reference(s, in.q, in.k, in.v, Tensor3<double>(), {}); });
}

TEST_CASE("interrupt: cplab check stops") {
  const RunSpec small = long_run(64);
  const test::Run correct = test::correct_run(small.cp.fields());
  std::array<Tensor3<double>, 5> noise = correct.out;  // no fault explains noise: every family and the pair search run
  for (Tensor3<double>& x : noise)
    for (std::size_t i = 0; i < x.data.size(); ++i) x.data[i] += 1e-3 * static_cast<double>(i % 7);
  const CheckData data = test::claimed(correct.in, noise, NpyDtype::f8);
  throws_interrupted([&] { (void)run_check(correct.spec, data); });
  const CheckReport r = run_check(correct.spec, data);  // the flag cleared: it completes
  CHECK(!r.equivalent);
}
