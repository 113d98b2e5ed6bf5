// test_ring_gpu.cpp: the GPU ring (ring_gpu.h) on virtual ranks (LocalWorld) against the CPU
// reference in double: every layout, causal or not, P = 1..8, GQA, kernel v2 in bf16 and v1 in
// fp32; outputs O, LSE and gradients dQ, dK, dV of the whole sequence, unsharded by the
// reference's Partition, within the kernels' tolerances (cuda/README.md).
// What it is not: a timing (cplab-bench cp), or NCCL (test_nccl_comm.cpp, test_modes_gpu.cpp).
// Needs a GPU: the binary skips (exit 77) without one.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <random>

#include "core/dense_attention.h"
#include "core/dtype.h"
#include "layout/layout.h"
#include "local_comm.h"
#include "ring_gpu.h"
#include "test_gpu_util.h"

using namespace cplab;
using namespace cplab::cuda;
using namespace cplab::cuda::test;

namespace {

// the ring of --mode p2p: a p2p spec of 80 tokens a rank (tiles with tails)
GpuCpSpec ring_spec(Layout layout, bool causal, index_t P, Kernel kernel, DType t, index_t d, index_t h, index_t hk) {
  CpFields f;
  f.mode = Mode::p2p;
  f.layout = layout;
  f.causal = causal;
  f.cp = P;
  f.seq = 2 * P * 40;
  f.heads = h;
  f.kv_heads = hk;
  f.head_dim = d;
  f.scale = 1.0 / std::sqrt(double(d));
  return GpuCpSpec{CpSpec(f), t, kernel};
}

void run(Layout layout, bool causal, index_t P, Kernel kernel, DType t, index_t d, index_t h, index_t hk) {
  const GpuCpSpec s = ring_spec(layout, causal, P, kernel, t, d, h, hk);
  const index_t seq = s.cp.S();
  const Tol tol = tolerance(t);
  const auto q = rounded_tensor(seq, h, d, 1, t), k = rounded_tensor(seq, hk, d, 2, t), v = rounded_tensor(seq, hk, d, 3, t), dout = rounded_tensor(seq, h, d, 4, t);
  const Mask mask = causal ? Mask::causal(0) : Mask::none();
  const AttnOut<double> ref = dense_forward(q, k, v, mask, double(s.kernel_scale()));
  const AttnGrads<double> g = dense_backward(q, k, v, ref, dout, mask, double(s.kernel_scale()));
  const Partition& part = s.cp.partition();
  const auto qs = shard(part, q), ks = shard(part, k), vs = shard(part, v), ds = shard(part, dout);
  LocalWorld world(static_cast<int>(P));
  std::vector<std::unique_ptr<GpuRingRank>> own;
  std::vector<GpuRingRank*> ranks;
  const index_t n = s.cp.n();
  for (index_t r = 0; r < P; ++r) {
    own.push_back(std::make_unique<GpuRingRank>(s, world.rank(static_cast<int>(r))));
    GpuRingRank& x = *own.back();
    upload(x.q, 0, qs[static_cast<size_t>(r)].data, t);
    upload(x.kv_cur, 0, ks[static_cast<size_t>(r)].data, t);
    upload(x.kv_cur, static_cast<size_t>(n * hk * d) * dtype_size(t), vs[static_cast<size_t>(r)].data, t);
    upload(x.dout, 0, ds[static_cast<size_t>(r)].data, t);
    ranks.push_back(&x);
  }
  gpu_ring_forward(s, ranks);
  gpu_ring_backward(s, ranks);
  world.finish();
  CPLAB_CUDA_CHECK(cudaDeviceSynchronize());
  std::vector<Tensor3<double>> o, dq, dk, dv;
  std::vector<Rows<double>> lse;
  for (index_t r = 0; r < P; ++r) {
    GpuRingRank& x = *own[static_cast<size_t>(r)];
    o.push_back(as_tensor(download_t(x.o.data(), static_cast<size_t>(n * h * d), t), n, h, d));
    Rows<double> l(h, n);
    const auto lv = download_f(x.lse.data(), static_cast<size_t>(h * n));
    std::copy(lv.begin(), lv.end(), l.data());
    lse.push_back(l);
    dq.push_back(as_tensor(download_f(x.dq.data(), static_cast<size_t>(n * h * d)), n, h, d));
    const auto dkv = download_f(x.dkv_acc.data(), static_cast<size_t>(n * hk * 2 * d));
    dk.push_back(as_tensor({dkv.begin(), dkv.begin() + n * hk * d}, n, hk, d));
    dv.push_back(as_tensor({dkv.begin() + n * hk * d, dkv.end()}, n, hk, d));
  }
  CHECK(rel(unshard(part, o).data, ref.o.data) < tol.o);
  const Rows<double> L = unshard_rows(part, lse);
  CHECK(lse_err(std::vector<double>(L.data(), L.data() + L.size()), ref.lse) < tol.lse);
  CHECK(rel(unshard(part, dq).data, g.dq.data) < tol.grad);
  CHECK(rel(unshard(part, dk).data, g.dk.data) < tol.grad);
  CHECK(rel(unshard(part, dv).data, g.dv.data) < tol.grad);
  CHECK((world.total_bytes_sent() > 0 || P == 1));
}

}  // namespace

TEST_CASE("gpu ring: every layout, causal or not, P = 1..8, v2 bf16 with GQA and v1 fp32, equals the reference") {
  for (Layout layout : {Layout::zigzag, Layout::striped, Layout::contiguous})
    for (bool causal : {true, false})
      for (index_t P : {1, 2, 3, 4, 8}) {
        CAPTURE(to_string(layout));
        CAPTURE(causal);
        CAPTURE(P);
        run(layout, causal, P, Kernel::v2, DType::bf16, 64, 4, 2);
        run(layout, causal, P, Kernel::v1, DType::f32, 16, 2, 2);  // fp32: a lost contribution cannot hide in bf16's tolerance
      }
}
