// test_infer_gpu.cpp: inference CP on GPU ranks (cuda/cp/infer_gpu.h; issue 37) on virtual ranks
// (LocalWorld, cp 1..8) against the CPU reference's run_infer (reference/infer/infer_run.h, itself
// checked against the dense oracle with the offset in the same case): pass-KV (p2p), pass-Q,
// pass-Q ring decode and all-gather-Q decode; both cache layouts; P = 0, 1, 7, 100 cached tokens
// and T = 1, cp - 1, 2 cp, 33 new tokens; GQA; causal, a window, a chunk and sinks; one request
// and packed requests; kernel v2 in bf16 and v1 in fp32, within cuda/README.md's tolerances
// (test_gpu_util.h tolerance). Also the bytes the ranks sent: N - 1 padded blocks per rank on the
// rings (or the gather), N - 1 all-to-all slots for the variants that return partials, none at cp 1;
// and the benchmark's transfer-only and compute-only runs (CpWork) before each case's real one.
// What it is not: a timing (cplab-bench cp --infer), or the plan's own check (the kernel emulation
// runs the same plan on the CPU: emu/test_infer_emu.cpp).
// Needs a GPU: the binary skips (exit 77) without one.
#include <doctest/doctest.h>

#include <memory>

#include "device.h"
#include "infer/infer_run.h"
#include "infer_test_fields.h"
#include "infer_gpu.h"
#include "local_comm.h"
#include "test_gpu_util.h"

using namespace cplab;
using namespace cplab::cuda;
using namespace cplab::cuda::test;

namespace {

// rows `rows` of x (n, h, w) as doubles, in that order
std::vector<double> take_rows(const Tensor3<double>& x, const std::vector<index_t>& rows) {
  std::vector<double> out;
  for (index_t g : rows) out.insert(out.end(), x.token(g), x.token(g) + x.h * x.d);
  return out;
}

// one case: every rank of a LocalWorld through gpu_infer_forward, compared with run_infer on the
// same inputs rounded to the dtype
void run_case(const InferFields& f, DType t, Kernel k) {
  const InferSpec spec(f);
  const GpuInferSpec s{spec, t, k};
  const index_t N = spec.N(), T = spec.T(), h = spec.h(), hk = spec.hk(), d = spec.d(), dv = spec.dv();
  const index_t Mkv = spec.Mkv();
  CAPTURE(describe(s));
  InferRunSpec rs{spec};
  InferInputs in = make_infer_inputs(rs);
  for (Tensor3<double>* x : {&in.q, &in.k, &in.v})
    for (double& e : x->data) e = round_to(e, t);
  if (spec.sinks()) in.sinks = sink_logits(h);  // exact in fp32
  const InferReport ref = run_infer(rs, in);
  REQUIRE(ref.max_error() <= 1e-10);  // the reference itself, against dense attention with the offset

  LocalWorld world(static_cast<int>(N));
  std::vector<std::unique_ptr<GpuInferRank>> own;
  std::vector<GpuInferRank*> all;
  const std::size_t e = dtype_size(t);
  for (index_t r = 0; r < N; ++r) {
    own.push_back(std::make_unique<GpuInferRank>(s, world.rank(static_cast<int>(r))));
    GpuInferRank& x = *own.back();
    upload(x.q, 0, take_rows(in.q, spec.q_rows(r)), t);
    upload(x.kv, 0, take_rows(in.k, spec.kv_rows(r)), t);
    upload(x.kv, static_cast<std::size_t>(Mkv * hk * d) * e, take_rows(in.v, spec.kv_rows(r)), t);
    if (spec.sinks()) x.set_sinks(std::vector<float>(in.sinks.begin(), in.sinks.end()));
    all.push_back(&x);
  }
  // the benchmark's transfer-only and compute-only runs first: every transfer matched (finish), the
  // inputs left intact (the full run after them must still be right)
  gpu_infer_forward(s, all, CpWork::comm_only);
  world.finish();
  gpu_infer_forward(s, all, CpWork::compute_only);
  world.finish();
  const std::uint64_t bytes0 = world.total_bytes_sent();
  gpu_infer_forward(s, all);
  world.finish();
  CPLAB_CUDA_CHECK(cudaDeviceSynchronize());

  std::vector<double> o(static_cast<size_t>(T * h * dv)), lse(static_cast<size_t>(h * T));
  for (index_t r = 0; r < N; ++r) {
    const GpuInferRank& x = *own[static_cast<size_t>(r)];
    const std::vector<index_t>& rows = spec.q_rows(r);
    const index_t n = static_cast<index_t>(rows.size());
    if (n == 0) continue;
    const std::vector<double> ro = download_t(x.o.data(), static_cast<size_t>(n * h * dv), t);
    const std::vector<double> rl = download_f(x.lse.data(), static_cast<size_t>(h * n));
    for (index_t a = 0; a < n; ++a) {
      const index_t g = rows[static_cast<size_t>(a)];
      std::copy(ro.begin() + a * h * dv, ro.begin() + (a + 1) * h * dv, o.begin() + g * h * dv);
      for (index_t i = 0; i < h; ++i) lse[static_cast<size_t>(i * T + g)] = rl[static_cast<size_t>(i * n + a)];
    }
  }
  const Tol tol = tolerance(t);
  CHECK(rel(o, ref.o.data) <= tol.o);
  CHECK(lse_err(lse, ref.lse) <= tol.lse);
  // the bytes the ranks sent to others: every rank N - 1 padded ring blocks (pass-KV: Mkv rows of K|V;
  // pass-Q: Mq rows of Q) or gather blocks (decode-ag: Mq rows of Q), and N - 1 all-to-all slots
  const std::uint64_t pairs = static_cast<std::uint64_t>(N * (N - 1));
  const std::uint64_t gather = spec.mode() == InferMode::decode_ag ? static_cast<std::uint64_t>(spec.Mq() * h * d) * e : 0;
  CHECK(world.total_bytes_sent() - bytes0 == pairs * (own[0]->ring_block_bytes() + gather + own[0]->slot_bytes));
}

using cplab::cuda::test::infer_fields;
constexpr auto& kModes = cplab::cuda::test::kInferModes;

}  // namespace

TEST_CASE("gpu inference: every variant and cache layout, P = 0, 1, 7, 100, T = 1, cp-1, 2cp, 33, equals run_infer") {
  for (InferMode m : kModes)
    for (CacheLayout cl : {CacheLayout::zigzag, CacheLayout::interleaved})
      for (index_t N : {1, 4})
        for (index_t P : {0, 1, 7, 100})
          for (index_t T : {index_t{1}, N - 1, 2 * N, index_t{33}}) {
            if (T < 1 || (N == 1 && (P == 1 || P == 7))) continue;  // cp 1: P = 0 and 100 suffice
            InferFields f = infer_fields(m, N, {P}, {T});
            f.cache_layout = cl;
            run_case(f, DType::bf16, Kernel::v2);
          }
}

TEST_CASE("gpu inference: kernel v1 in fp32, cp 3 and 8, packed requests, GQA 8 / 1") {
  for (InferMode m : kModes)
    for (index_t N : {3, 8}) {
      InferFields f = infer_fields(m, N, {5, 0, 40}, {3, 9, 1});
      f.heads = 8, f.kv_heads = 1;
      run_case(f, DType::f32, Kernel::v1);
    }
}

TEST_CASE("gpu inference: a window, a chunk and sinks in every variant, packed or not") {
  for (InferMode m : kModes)
    for (int rule = 0; rule < 3; ++rule)
      for (bool packed : {false, true}) {
        InferFields f = packed ? infer_fields(m, 4, {30, 7}, {11, 5}) : infer_fields(m, 4, {57}, {13});
        if (rule == 0) f.window = 9;
        if (rule == 1) f.chunk = 16;
        if (rule == 2) f.sinks = true;
        run_case(f, DType::bf16, Kernel::v2);
      }
}
