// test_cp_checks.cpp: a spec the GPU modes cannot run is refused with the rule's message before any
// CUDA call (in cplab_cuda_host_tests: runs without a GPU): the CP layer's own rules when its CpSpec
// is built (reference/modes/cp_spec.h, not checked again on the GPU), then the GPU's
// (GpuCpSpec::check: the kernel, no --replicate-kv, streaming merges; windows, chunks and sinks
// pass); and the ring's spec
// (GpuCpSpec::ring) that the GPU ring takes, and its plan (ring_gpu_plan: the reference's H + 1
// steps and tiles, nothing visible beyond them).
// What it is not: a test of the modes' results (test_ring_gpu.cpp, test_modes_gpu.cpp, GPU only).
#include <doctest/doctest.h>

#include <algorithm>
#include <vector>

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

TEST_CASE("gpu ring plan: the reference's H + 1 steps, one hop for a contiguous window of at most n, no work left beyond") {
  const index_t P = 4, n = 64, S = P * n;
  struct M {
    bool causal;
    index_t window, chunk;
  };
  for (Layout layout : {Layout::contiguous, Layout::zigzag, Layout::striped})
    for (const M m : {M{true, 0, 0}, M{false, 0, 0}, M{true, 1, 0}, M{true, 7, 0}, M{true, n, 0}, M{true, n + 1, 0},
                      M{true, S + 3, 0}, M{false, 7, 0}, M{true, 0, 16}, M{true, 0, 100}})
      for (bool packed : {false, true}) {
        CAPTURE(to_string(layout));
        CAPTURE(m.causal);
        CAPTURE(m.window);
        CAPTURE(m.chunk);
        CAPTURE(packed);
        CpFields f;  // p2p
        f.layout = layout;
        f.causal = m.causal;
        f.cp = P;
        f.seq = S;
        f.heads = 4;
        f.kv_heads = 2;
        f.head_dim = 64;
        if (m.window > 0) f.window = m.window;
        if (m.chunk > 0) f.chunk = m.chunk;
        if (packed) f.cu_seqlens = {0, 100, 256}, f.pad = true, f.seq = 0;
        const CpSpec c(f);
        const index_t H = c.ring_hops();
        if (layout == Layout::contiguous && m.causal && !packed && m.chunk == 0) {
          if (m.window == 1) CHECK(H == 0);
          else if (m.window >= 2 && m.window <= n) CHECK(H == 1);  // one hop: docs/modes.md's closed form
          else if (m.window == 0) CHECK(H == P - 1);
        }
        const Packing* pk = c.packed() ? &c.packing() : nullptr;
        for (index_t pos = 0; pos < P; ++pos) {
          const RingGpuPlan plan = ring_gpu_plan(c, pos);
          REQUIRE(plan.steps == H + 1);
          REQUIRE(plan.fwd.size() == static_cast<size_t>(H + 1));
          REQUIRE(plan.bwd.size() == static_cast<size_t>(H + 1));
          std::vector<index_t> fwd_blocks, bwd_blocks;  // every block seen once per phase, the own one first / last
          for (index_t i = 0; i <= H; ++i) {
            const RingTile& t = plan.fwd[static_cast<size_t>(i)];
            const RingTile u = ring_plan_tile(c.partition(), pk, c.rule(), pos, ring_fwd_kv_block(P, pos, i));
            CHECK((t.section == u.section && t.q0 == u.q0 && t.nq == u.nq && t.k0 == u.k0 && t.nk == u.nk && t.skipped == u.skipped));
            fwd_blocks.push_back(ring_fwd_kv_block(P, pos, i));
            bwd_blocks.push_back(ring_bwd_kv_block(P, pos, i, H + 1));
          }
          std::sort(fwd_blocks.begin(), fwd_blocks.end());
          std::sort(bwd_blocks.begin(), bwd_blocks.end());
          CHECK(fwd_blocks == bwd_blocks);  // the backward visits the forward's blocks
          CHECK(ring_bwd_kv_block(P, pos, H, H + 1) == pos);  // and ends on its own, whose dK, dV it keeps
          for (index_t i = H + 1; i < P; ++i)  // the hops the ring does not make: nothing visible there
            CHECK(ring_plan_tile(c.partition(), pk, c.rule(), pos, ring_fwd_kv_block(P, pos, i)).skipped);
        }
      }
  CpFields f = a2a_fields();
  CHECK_THROWS_WITH_AS(ring_gpu_plan(CpSpec(f), 0), doctest::Contains("ring_gpu_plan takes a p2p spec"), Error);
}
