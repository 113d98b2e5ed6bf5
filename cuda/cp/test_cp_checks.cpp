// test_cp_checks.cpp: the GPU ring and GpuCpSpec refuse a spec the mode, the layout or the kernel
// cannot run, with the rule's message, before any CUDA call (in cplab_cuda_host_tests: runs
// without a GPU).
// What it is not: a test of the modes' results (test_ring_gpu.cpp, test_modes_gpu.cpp, GPU only).
#include <doctest/doctest.h>

#include "error.h"
#include "cp_spec.h"
#include "ring_gpu.h"

using namespace cplab;
using namespace cplab::cuda;

TEST_CASE("gpu ring: a spec the layout or the kernel cannot run is refused before any launch") {
  GpuRingSpec s{Layout::zigzag, true, 4, 100, 4, 2, 64, 64, DType::bf16, Kernel::v2, 0.125f};
  CHECK_THROWS_WITH_AS(s.check(), "seq 100 is not a multiple of 2*cp = 8 (zigzag splits the sequence into 2*cp equal chunks)",
                       Error);
  s.seq = 128;
  s.d = s.dv = 96;
  CHECK_THROWS_WITH_AS(s.check(), "kernel v2 needs head dim 64 or 128 (got d = 96)", Error);
  s.d = s.dv = 64;
  CHECK_NOTHROW(s.check());
}

TEST_CASE("GpuCpSpec: the reference's mode rules, then the GPU's, before any launch") {
  GpuCpSpec s;
  s.run.mode = "a2a";
  s.run.cp = 4;
  s.run.seq = 256;
  s.run.heads = 8;
  s.run.kv_heads = 2;
  s.run.head_dim = 64;
  CHECK_THROWS_WITH_AS(s.check(), doctest::Contains("kv-heads 2 is not divisible by cp = 4"), Error);  // the reference's rule
  s.run.kv_heads = 4;
  CHECK_NOTHROW(s.check());
  s.run.mode = "a2a+p2p";
  s.run.icp = 2;
  s.run.ocp = 3;
  CHECK_THROWS_WITH_AS(s.check(), doctest::Contains("ICP x OCP must equal cp"), Error);
  s.run.ocp = 2;
  CHECK_NOTHROW(s.check());
  s.run.merge = MergeKind::fold;
  CHECK_THROWS_WITH_AS(s.check(), doctest::Contains("merge partial results streaming"), Error);
  s.run.merge = MergeKind::streaming;
  s.run.mode = "a2a";
  s.run.icp = s.run.ocp = 0;
  s.run.replicate_kv = true;
  CHECK_THROWS_WITH_AS(s.check(), doctest::Contains("--replicate-kv is not supported on GPU ranks"), Error);
  s.run.replicate_kv = false;
  s.dtype = DType::f32;  // kernel v2 is bf16 / fp16
  CHECK_THROWS_AS(s.check(), Error);
  s.kernel = Kernel::v1;
  CHECK_NOTHROW(s.check());
  s.run.mode = "allgather";
  s.run.cu_seqlens = {0, 24, 61};
  s.run.pad = true;
  s.run.seq = 64;  // 24 + 37 padded to 40 (multiples of 2*cp = 8)
  CHECK_NOTHROW(s.check());
  s.run.seq = 61;
  CHECK_THROWS_WITH_AS(s.check(), doctest::Contains("disagrees with the packed total 64"), Error);
  s.run.mode = "ring";
  CHECK_THROWS_WITH_AS(s.check(), doctest::Contains("is not one of: p2p, allgather, a2a, a2a+p2p"), Error);
}
