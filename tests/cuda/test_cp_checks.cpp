// test_cp_checks.cpp: a spec the GPU modes cannot run is refused with the rule's message before any
// CUDA call (in cplab_cuda_host_tests: runs without a GPU): the CP layer's own rules when its CpSpec
// is built (reference/modes/cp_spec.h, not checked again on the GPU), then the GPU's
// (GpuCpSpec::check: the kernel, no --replicate-kv, streaming merges; windows, chunks and sinks
// pass); and the ring's spec
// (GpuCpSpec::ring) that the GPU ring takes.
// What it is not: a test of the modes' results (test_ring_gpu.cpp, test_modes_gpu.cpp, GPU only).
#include <doctest/doctest.h>

#include "core/error.h"
#include "cp_spec.h"
#include "ring_gpu.h"

using namespace cplab;
using namespace cplab::cuda;

namespace {

CpFields a2a_fields() {
  CpFields f;
  f.mode = Mode::a2a;
  f.cp = 4;
  f.seq = 256;
  f.heads = 8;
  f.kv_heads = 4;
  f.head_dim = 64;
  return f;
}

}  // namespace

TEST_CASE("gpu ring: a spec the layout or the kernel cannot run is refused before any launch") {
  CpFields f;  // p2p, zigzag, cp 4
  f.causal = true;
  f.seq = 100;
  f.heads = 4;
  f.kv_heads = 2;
  f.head_dim = 64;
  CHECK_THROWS_WITH_AS(CpSpec{f},  // the layout's rule, by the CpSpec
                       "seq 100 is not a multiple of 2*cp = 8 (zigzag splits the sequence into 2*cp equal chunks)",
                       Error);
  f.seq = 128;
  f.head_dim = 96;
  const GpuCpSpec bad{CpSpec(f), DType::bf16, Kernel::v2};
  CHECK_THROWS_WITH_AS(bad.check(), "kernel v2 needs head dim 64 or 128 (got d = 96)", Error);
  CHECK_THROWS_WITH_AS(gpu_ring_forward(bad, {}), "kernel v2 needs head dim 64 or 128 (got d = 96)", Error);
  f.head_dim = 64;
  const GpuCpSpec s{CpSpec(f), DType::bf16, Kernel::v2};
  CHECK_NOTHROW(s.check());
  CHECK(s.ring().cp.P() == 4);  // --mode p2p: the ring is the spec itself
  CHECK(s.ring().cp.S() == 128);
}

TEST_CASE("GpuCpSpec: the CP layer's rules when it is built, then the GPU's, before any launch") {
  CpFields f = a2a_fields();
  f.kv_heads = 2;
  CHECK_THROWS_WITH_AS(CpSpec{f}, doctest::Contains("kv-heads 2 is not divisible by cp = 4"), Error);  // CpSpec's rule
  f.kv_heads = 4;
  GpuCpSpec s{CpSpec(f), DType::bf16, Kernel::v2};
  CHECK_NOTHROW(s.check());
  CHECK_THROWS_WITH_AS(s.ring(), doctest::Contains("has no ring"), Error);
  CHECK_THROWS_WITH_AS(gpu_ring_forward(s, {}), doctest::Contains("a GPU ring runs a p2p spec"), Error);
  f.mode = Mode::a2a_p2p;
  f.icp = 2;
  f.ocp = 3;
  CHECK_THROWS_WITH_AS(CpSpec{f}, doctest::Contains("ICP x OCP must equal cp"), Error);
  f.ocp = 2;
  s.cp = CpSpec(f);
  CHECK_NOTHROW(s.check());
  const GpuCpSpec ring = s.ring();  // the outer rings: p2p over ocp ranks, heads / icp
  CHECK(ring.cp.mode() == Mode::p2p);
  CHECK(ring.cp.P() == 2);
  CHECK(ring.cp.S() == 256);
  CHECK(ring.cp.h() == 4);
  CHECK(ring.cp.hk() == 2);
  CHECK(ring.kernel_scale() == s.kernel_scale());
  CHECK_NOTHROW(ring.check());
  f.merge = MergeKind::fold;
  s.cp = CpSpec(f);
  CHECK_THROWS_WITH_AS(s.check(), doctest::Contains("merge partial results streaming"), Error);
  f = a2a_fields();
  f.kv_heads = 2;
  f.replicate_kv = true;
  s.cp = CpSpec(f);
  CHECK_THROWS_WITH_AS(s.check(), doctest::Contains("--replicate-kv is not supported on GPU ranks"), Error);
  s.cp = CpSpec(a2a_fields());
  s.dtype = DType::f32;  // kernel v2 is bf16 / fp16
  CHECK_THROWS_AS(s.check(), Error);
  s.kernel = Kernel::v1;
  CHECK_NOTHROW(s.check());
  f = a2a_fields();
  f.mode = Mode::allgather;
  f.cu_seqlens = {0, 24, 61};
  f.pad = true;
  f.seq = 0;  // the packed total: 24 + 37 padded to 40 (multiples of 2*cp = 8)
  s.cp = CpSpec(f);
  CHECK(s.cp.S() == 64);
  CHECK(s.cp.packed());
  CHECK_NOTHROW(s.check());
  f.seq = 61;
  CHECK_THROWS_WITH_AS(CpSpec{f}, doctest::Contains("disagrees with the packed total 64"), Error);
  CHECK_THROWS_WITH_AS(parse_mode("ring"), doctest::Contains("is not one of: p2p, allgather, a2a, a2a+p2p"), Error);
}

TEST_CASE("gpu modes: --window, --chunk and --sinks pass the GPU's rules in every mode and kernel, and describe names them") {
  for (Mode mode : {Mode::p2p, Mode::allgather, Mode::a2a, Mode::a2a_p2p})
    for (Kernel kernel : {Kernel::v1, Kernel::v2}) {
      CAPTURE(to_string(mode));
      CAPTURE(to_string(kernel));
      CpFields f = a2a_fields();
      f.mode = mode;
      f.causal = true;
      if (mode == Mode::a2a_p2p) f.icp = 2, f.ocp = 2;
      f.window = 7;
      f.sinks = true;
      GpuCpSpec s{CpSpec(f), DType::bf16, kernel};
      CHECK_NOTHROW(s.check());
      CHECK(describe(s).find("window=7 chunk=0 sinks=1") != std::string::npos);
      f.window.reset();
      f.chunk = 16;
      s.cp = CpSpec(f);
      CHECK_NOTHROW(s.check());
      CHECK(describe(s).find("window=0 chunk=16 sinks=1") != std::string::npos);
    }
  // the rules themselves are the CpSpec's (reference/modes/cp_spec.cpp), checked before the GPU's
  CpFields f = a2a_fields();
  f.causal = true;
  f.window = 4;
  f.chunk = 4;
  CHECK_THROWS_WITH_AS(CpSpec{f}, doctest::Contains("--window and --chunk cannot both be given"), Error);
}
