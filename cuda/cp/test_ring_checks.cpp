// test_ring_checks.cpp: the GPU ring refuses a spec the layout or the kernel cannot run, with the
// rule's message, before any CUDA call (in cplab_cuda_host_tests: runs without a GPU).
// What it is not: a test of the ring's results (test_ring_gpu.cpp, GPU only).
#include <doctest/doctest.h>

#include "error.h"
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
