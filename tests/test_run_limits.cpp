// test_run_limits.cpp: doctest cases for what a run refuses instead of computing wrongly (issue 19).
//
// What it is: the error metric's convention for infinities (core/rel_error.h), a dense reference
// that overflows refused by name (run/overflow.h), float inputs beyond float's range, the scale
// limit, the memory estimate's rules (run/memory_estimate.h: monotone in what a run holds, and the
// 16 GiB limit checked before anything is allocated), and a failed allocation named with its size
// (core/alloc.h).
// What it is not: the estimate against measured memory (tests/memory_check.py runs `cplab run`
// and reads the peak RSS), or the command line's messages (tests/bad_input_check.py).
#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <string>

#include "core/rel_error.h"
#include "core/tensor.h"
#include "run/experiment.h"
#include "run/memory_estimate.h"

#if defined(__has_feature)  // clang; g++ defines __SANITIZE_ADDRESS__
#if __has_feature(address_sanitizer)
#define CPLAB_TEST_ASAN 1
#endif
#endif

namespace {

using namespace cplab;
constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

RunSpec spec(CpFields f, bool backward = false, const char* dtype = "double") {
  RunSpec s;
  s.cp = CpSpec(std::move(f));
  s.backward = backward;
  s.dtype = dtype;
  return s;
}

CpFields small() {
  CpFields f;
  f.cp = 2, f.seq = 16, f.heads = 2, f.kv_heads = 1, f.head_dim = 4;
  return f;
}

std::string error_of(const RunSpec& s, const Inputs& in) {
  try {
    run_experiment(s, in);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("rel_error: -inf matching -inf is equal, +inf and NaN anywhere fail") {
  const double ninf[] = {-kInf, 1.0}, ninf_ref[] = {-kInf, 2.0};
  CHECK(rel_error(ninf, ninf_ref, 2) == doctest::Approx(0.5));  // the -inf pair counts in neither maximum
  const double pinf[] = {kInf, 1.0};
  CHECK(rel_error(pinf, pinf, 2) == kInf);  // an overflow on both sides is no match
  const double nan[] = {kNaN}, one[] = {1.0};
  CHECK(rel_error(nan, one, 1) == kInf);
  CHECK(rel_error(one, nan, 1) == kInf);
  const double zero[] = {0.0}, half[] = {0.5};
  CHECK(rel_error(half, zero, 1) == 0.5);  // zero reference: the absolute difference
  CHECK(rel_error(ninf, pinf, 1) == kInf);
}

TEST_CASE("overflow: a dense reference that overflows is refused by name, never error 0") {
  for (const bool backward : {false, true}) {
    CAPTURE(backward);
    const RunSpec s = spec(small(), backward);
    Inputs in = make_inputs(s);
    for (double& x : in.q.data) x = 1e308;  // q.k = 4e308 overflows: the kernel's row then looks
    for (double& x : in.k.data) x = 1.0;    // fully masked (O = 0, LSE = -inf) on both sides
    const std::string e = error_of(s, in);
    CAPTURE(e);
    CHECK(e.find("its LSE is -inf at head 0, token 0") != std::string::npos);
    CHECK(e.rfind("the dense reference overflows: its LSE is ", 0) == 0);
    CHECK(e.find("largest |Q| 1e+308") != std::string::npos);
    CHECK(e.find("scale them down") != std::string::npos);
  }
  // O overflows through V alone (the scores are fine)
  const RunSpec s = spec(small());
  Inputs in = make_inputs(s);
  for (double& x : in.v.data) x = 1.7e308;
  CHECK(error_of(s, in).rfind("the dense reference overflows: its O is +inf at token 0", 0) == 0);
}

TEST_CASE("overflow: padding tokens' -inf LSE is no overflow, the run's own non-finite results are reported") {
  CpFields f = small();
  f.seq = 0, f.cu_seqlens = {0, 5, 11}, f.pad = true, f.causal = true;
  const RunSpec s = spec(f, true);
  const RunReport r = run_experiment(s, make_inputs(s));
  CHECK(r.max_error() < 1e-12);
  CHECK(r.non_finite.empty());
}

TEST_CASE("overflow: a float run's inputs beyond float's range are refused before the run") {
  const RunSpec s = spec(small(), false, "float");
  Inputs in = make_inputs(s);
  in.k.data[7] = -1e39;
  CHECK(error_of(s, in) == "K element 7 is -1e+39, outside float's range (|x| <= 3.40282e+38): use --dtype double "
                           "or scale the inputs down");
}

TEST_CASE("scale: above kMaxScale is refused with the rule, by dtype") {
  CpFields f = small();
  f.scale = 1e300;
  CHECK_THROWS_WITH_AS(validate(spec(f)), doctest::Contains("scale 1e+300 is above 1e+30, the largest softmax scale"), Error);
  CHECK_THROWS_WITH_AS(validate(spec(f, false, "float")), doctest::Contains("scale 1e+300 overflows float arithmetic"), Error);
  f.scale = kMaxScale;
  CHECK_NOTHROW(validate(spec(f)));
  f.scale = kInf;
  CHECK_THROWS_WITH_AS(spec(f), doctest::Contains("scale must be a finite number"), Error);
  f.scale = -1;
  CHECK_THROWS_WITH_AS(spec(f), doctest::Contains("scale must be a finite number"), Error);
}

TEST_CASE("memory estimate: counts the inputs, grows with what a run holds, refuses past 16 GiB") {
  CpFields f;
  f.cp = 4, f.seq = 4096, f.heads = 8, f.kv_heads = 8, f.head_dim = 64;
  const double tensor = 4096.0 * 8 * 64 * 8;  // one (S, h, d) double tensor
  const MemoryEstimate fwd = estimate_memory(spec(f));
  CHECK(fwd.inputs == 3 * tensor);
  // the oracle alone holds the inputs, their copies, one sequence's rows and O / LSE three times
  CHECK(fwd.bytes >= 12 * tensor);
  const MemoryEstimate bwd = estimate_memory(spec(f, true));
  CHECK(bwd.inputs == 4 * tensor);
  CHECK(bwd.bytes > 1.3 * fwd.bytes);
  CHECK(estimate_memory(spec(f, true, "float")).bytes < bwd.bytes);
  for (const Mode m : {Mode::allgather, Mode::a2a}) {
    CpFields g = f;
    g.mode = m;
    CHECK(estimate_memory(spec(g)).bytes > fwd.bytes);  // gathered KV / head-sharded copies
  }
  // the limit, with the rule and the sizes in the message, and nothing allocated to find out
  f.seq = 1 << 22, f.heads = 32, f.kv_heads = 32;
  CHECK(estimate_memory(spec(f)).bytes > kMaxRunMemory);
  CHECK_THROWS_WITH_AS(validate(spec(f)), doctest::Contains("GiB in the CPU reference at its peak"), Error);
  CHECK_THROWS_WITH_AS(validate(spec(f)), doctest::Contains("the limit is 16 GiB"), Error);
  // the largest sizes the spec's rules let through (seq 2^40, 65536 heads) come out as a finite,
  // huge double, not a wrapped integer
  f.seq = std::int64_t{1} << 40, f.cp = 1, f.heads = f.kv_heads = 65536;
  const double most = estimate_memory(spec(f)).bytes;
  CHECK(std::isfinite(most));
  CHECK(most > 1e18);
}

TEST_CASE("alloc: a tensor's failed allocation names its size and shape") {
  // the element count overflows: refused before asking for memory
  CHECK_THROWS_WITH_AS(Tensor3<double>(std::int64_t{1} << 40, std::int64_t{1} << 30, 1024), doctest::Contains("too many elements"),
                       Error);
#if !defined(__SANITIZE_ADDRESS__) && !defined(CPLAB_TEST_ASAN)  // ASan reports so large an allocation instead of failing it
  CHECK_THROWS_WITH_AS(Tensor3<double>(std::int64_t{1} << 40, 1024, 1),
                       "out of memory allocating 8.0 PiB for an (1099511627776, 1024, 1) tensor", Error);
#endif
}
