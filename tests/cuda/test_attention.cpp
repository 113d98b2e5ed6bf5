// test_attention.cpp: the CUDA attention kernels (attention.h) against the CPU reference in double.
//
// What it is: for kernel v1 (fp32, fp16, bf16), v2 and v3 (fp16, bf16; v3 on compute capability
// 9.0 only, its backward being v2's), head dims 64 and 128, MHA and
// GQA, and every mask a CP step uses (none, causal, the striped causal(-1), bottom-right causal, the
// zigzag sections "full Q x first KV half" and "second Q half x full KV", THD per-sequence causal
// ranges with an empty row): forward O and LSE (outputs poisoned with NaN first, so an element
// left unwritten fails), and backward dQ, dK, dV from the GPU's own O, LSE and Delta, accumulated
// onto a non-zero start (the += CP steps rely on), compared with reference/core/attention_kernel.h on
// the same (rounded) inputs. Also the (O, LSE) merges: partials over key blocks and query-row
// ranges (an empty partial first, so -inf meets -inf; a row empty in every partial; row offsets),
// merged on the GPU, streaming and TE's fold, equal attention over all keys. Sequence lengths are not multiples of the 64- and
// 128-row tiles, so tails are exercised, and the long cases take 5 key tiles of 128, so v3's two
// TMA stages are each reused with the barrier phase flipped. The masks of today's models (sliding
// windows causal 1, 7, 64 and two-sided 7, 64; chunks 16, 100; packed with a window or a chunk,
// from the reference's PositionRule) with attention sinks on and off, d s_h included, and
// apply_sinks_f32 on a merge of key blocks (a sink once per row, as the CP modes apply it).
// Tolerances (max |gpu - ref| / max |ref|, per tensor), in test_gpu_util.h (tolerance()) and cuda/README.md:
//   fp32 (v1):  O 1e-5,  LSE 1e-5 (absolute, per unit of max(1, |LSE|)),  dQ dK dV 1e-4
//   fp16:       O 4e-3,  LSE 1e-4,  dQ dK dV 1e-2
//   bf16:       O 2e-2,  LSE 1e-4,  dQ dK dV 5e-2
// (inputs are rounded to the dtype before the reference sees them, so what remains is the kernels'
// rounding of P, dS and O to the input dtype and fp32 accumulation order).
// What it is not: a benchmark (bench/), or a test of the CP modes (they come with the communicator).
// Needs a GPU: test_cuda_main.cpp skips the whole binary without one.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "attention.h"
#include "core/dense_attention.h"
#include "device_buffer.h"
#include "layout/thd.h"
#include "core/dtype.h"
#include "core/error.h"
#include "test_gpu_util.h"

using namespace cplab;
using namespace cplab::cuda;
using namespace cplab::cuda::test;

namespace {

DeviceBuffer<float> filled(size_t n, float value) {
  DeviceBuffer<float> d(n);
  d.copy_from_host(std::vector<float>(n, value));
  return d;
}
DeviceBuffer<float> zeros(size_t n) { return filled(n, 0.0f); }

// every byte 0xFF: NaN in fp32, fp16 and bf16, so an output element a kernel forgets to write fails
template <class T>
void poison(DeviceBuffer<T>& b) {
  CPLAB_CUDA_CHECK(cudaMemset(b.data(), 0xFF, b.size() * sizeof(T)));
}

// x - c, elementwise (the backward outputs accumulate onto c)
std::vector<double> minus(std::vector<double> x, double c) {
  for (double& e : x) e -= c;
  return x;
}

struct Case {
  std::string name;
  index_t sq, sk;
  Mask mask;
};

std::vector<Case> cases() {
  std::vector<Case> c = {{"none", 200, 200, Mask::none()},
                         {"causal", 200, 200, Mask::causal(0)},
                         {"striped causal(-1)", 136, 136, Mask::causal(-1)},
                         {"bottom-right causal", 72, 200, Mask::causal(200 - 72)},
                         {"zigzag lower: full Q x first KV half", 256, 128, Mask::none()},
                         {"zigzag upper: second Q half x full KV", 128, 256, Mask::none()},
                         {"long, none", 300, 600, Mask::none()},
                         {"long, bottom-right causal", 300, 600, Mask::causal(300)}};
  // THD: three packed sequences [0, 70), [70, 150), [150, 200), causal inside each; row 160 sees nothing
  std::vector<std::int64_t> lo(200), hi(200);
  for (std::int64_t a = 0; a < 200; ++a) {
    const std::int64_t s0 = a < 70 ? 0 : (a < 150 ? 70 : 150);
    lo[static_cast<size_t>(a)] = s0, hi[static_cast<size_t>(a)] = a == 160 ? s0 : a + 1;
  }
  c.push_back({"THD per-sequence causal (ranges, one empty row)", 200, 200, Mask::ranges(lo, hi)});
  return c;
}

// sliding windows, chunks and packed sequences as the reference builds them (mask_rule.h
// PositionRule through sequence_mask / thd.h token_mask), over 200 tokens
std::vector<Case> rule_cases() {
  const index_t n = 200;
  auto rule = [&](const std::string& name, const PositionRule& r) { return Case{name, n, n, sequence_mask(r, n)}; };
  std::vector<Case> c = {rule("causal window 1", PositionRule{true, 1, 0}),  rule("causal window 7", PositionRule{true, 7, 0}),
                         rule("causal window 64", PositionRule{true, 64, 0}), rule("two-sided window 7", PositionRule{false, 7, 0}),
                         rule("two-sided window 64", PositionRule{false, 64, 0}), rule("chunk 16", PositionRule{true, 0, 16}),
                         rule("chunk 100", PositionRule{true, 0, 100})};
  const Packing p = Packing::padded({0, 70, 150, 197}, 8);  // padding rows see nothing
  std::vector<index_t> all(static_cast<size_t>(p.total()));
  for (index_t x = 0; x < p.total(); ++x) all[static_cast<size_t>(x)] = x;
  c.push_back({"packed, causal window 7", p.total(), p.total(), token_mask(p, all, all, PositionRule{true, 7, 0})});
  c.push_back({"packed, chunk 16", p.total(), p.total(), token_mask(p, all, all, PositionRule{true, 0, 16})});
  return c;
}

// sinks: none, or one fp32-exact logit per query head (the forward kernel takes them; d s_h from
// sink_grad_f32, checked against the reference's with the gradient tolerance)
void run_case(Kernel kernel, DType t, index_t d, index_t h, index_t hk, const Case& c, const std::vector<double>& sinks = {}) {
  const Tol tol = tolerance(t);
  const AttnDims dims{c.sq, c.sk, h, hk, d, d};
  const double scale = 1.0 / std::sqrt(static_cast<double>(d));
  const RefCase rc = ref_case(c.sq, c.sk, h, hk, d, d, c.mask, scale, t, sinks);
  DeviceBuffer<float> S(sinks.size());
  if (!sinks.empty()) S.copy_from_host(std::vector<float>(sinks.begin(), sinks.end()));
  const auto &q = rc.q, &k = rc.k, &v = rc.v, &dout = rc.dout;
  const AttnOut<double>& ref = rc.ref;
  const AttnGrads<double>& g = rc.g;

  auto Q = upload(q.data, t), K = upload(k.data, t), V = upload(v.data, t), dO = upload(dout.data, t);
  DeviceBuffer<std::byte> O(static_cast<size_t>(c.sq * h * d) * dtype_size(t));
  DeviceBuffer<float> L(static_cast<size_t>(h * c.sq)), Delta(static_cast<size_t>(h * c.sq));
  const DeviceMask mask(c.mask, c.sq);
  poison(O);
  poison(L);
  attention_forward(kernel, t, dims, Q.data(), K.data(), V.data(), mask.rule(), static_cast<float>(scale), O.data(), L.data(), nullptr,
                    sinks.empty() ? nullptr : S.data());
  CPLAB_CUDA_CHECK(cudaDeviceSynchronize());
  CHECK(rel(download_t(O.data(), O.size() / dtype_size(t), t), ref.o.data) < tol.o);
  CHECK(lse_err(download_f(L.data(), L.size()), ref.lse) < tol.lse);

  // the backward ACCUMULATES (+=) into its fp32 outputs, as CP steps need: start them at c, not 0
  const float c0 = 0.375f;
  auto dQ = filled(static_cast<size_t>(c.sq * h * d), c0), dK = filled(static_cast<size_t>(c.sk * hk * d), c0),
       dV = filled(static_cast<size_t>(c.sk * hk * d), c0);
  poison(Delta);
  softmax_delta(t, c.sq, h, d, O.data(), dO.data(), Delta.data(), nullptr);
  attention_backward(kernel, t, dims, Q.data(), K.data(), V.data(), dO.data(), L.data(), Delta.data(), mask.rule(),
                     static_cast<float>(scale), dQ.data(), dK.data(), dV.data(), nullptr);
  CPLAB_CUDA_CHECK(cudaDeviceSynchronize());
  CHECK(grad_err(minus(download_f(dQ.data(), dQ.size()), c0), g.dq.data, g.dv.data) < tol.grad);
  CHECK(grad_err(minus(download_f(dK.data(), dK.size()), c0), g.dk.data, g.dv.data) < tol.grad);
  CHECK(rel(minus(download_f(dV.data(), dV.size()), c0), g.dv.data) < tol.grad);
  if (sinks.empty()) return;
  auto ds = filled(sinks.size(), c0);  // sink_grad_f32 accumulates (-=)
  sink_grad_f32(c.sq, h, L.data(), Delta.data(), S.data(), ds.data(), nullptr);
  CPLAB_CUDA_CHECK(cudaDeviceSynchronize());
  CHECK(rel(minus(download_f(ds.data(), ds.size()), c0), g.dsinks) < tol.grad);
}

// kernel v3 runs on compute capability 9.0 only: elsewhere it must refuse, and the test says so
bool v3_here() {
  const std::string why = v3_unavailable();
  if (why.empty()) return true;
  MESSAGE("kernel v3 skipped: " << why);
  if (kernel_v3_built()) CHECK_THROWS_AS(run_case(Kernel::v3, DType::bf16, 64, 2, 2, cases()[0]), Error);
  return false;
}

struct KD {
  Kernel k;
  DType t;
};

// every case of cases() for each kernel x dtype, head dims 64 and 128, MHA (hk 4) and GQA (hk 2)
void run_cases(const std::vector<KD>& kds) {
  for (const KD kd : kds)
    for (index_t d : {64, 128})
      for (index_t hk : {4, 2})
        for (const Case& c : cases()) {
          CAPTURE(to_string(kd.k));
          CAPTURE(to_string(kd.t));
          CAPTURE(d);
          CAPTURE(hk);
          CAPTURE(c.name);
          run_case(kd.k, kd.t, d, 4, hk, c);
        }
}

// every case of rule_cases() for each kernel x dtype, head dims 64 and 128, sinks off and on
void run_rule_cases(const std::vector<KD>& kds) {
  for (const KD kd : kds)
    for (index_t d : {64, 128})
      for (const Case& c : rule_cases())
        for (bool with_sinks : {false, true}) {
          CAPTURE(to_string(kd.k));
          CAPTURE(to_string(kd.t));
          CAPTURE(d);
          CAPTURE(c.name);
          CAPTURE(with_sinks);
          run_case(kd.k, kd.t, d, 4, 2, c, with_sinks ? sink_logits(4) : std::vector<double>{});
        }
}

}  // namespace

// Kernel v3's cases have TEST_CASEs of their own, named "attention kernel v3: ...", so that ctest
// runs them in a process of their own (tests/cuda/CMakeLists.txt, cuda_tests_v3): an mbarrier stall
// traps the process, and must not take the other kernels' cases with it.
TEST_CASE("attention: every kernel x dtype x head dim x mask x MHA/GQA equals the double reference") {
  run_cases({{Kernel::v1, DType::f32}, {Kernel::v1, DType::bf16}, {Kernel::v2, DType::f16}, {Kernel::v2, DType::bf16}});
}

TEST_CASE("attention kernel v3: every dtype x head dim x mask x MHA/GQA equals the double reference") {
  if (v3_here()) run_cases({{Kernel::v3, DType::f16}, {Kernel::v3, DType::bf16}});
}

TEST_CASE("attention: windows, chunks, packed, sinks on and off: every kernel equals the double reference") {
  run_rule_cases({{Kernel::v1, DType::f32}, {Kernel::v2, DType::f16}, {Kernel::v2, DType::bf16}});
}

TEST_CASE("attention kernel v3: windows, chunks, packed, sinks on and off equal the double reference") {
  if (v3_here()) run_rule_cases({{Kernel::v3, DType::bf16}});
}

TEST_CASE("attention: apply_sinks_f32 after a merge of key blocks equals attention with the sink, once per row") {
  const DType t = DType::bf16;
  const index_t n = 200, h = 4, d = 64, split = 90;
  const double scale = 0.125;
  const Mask mask = sequence_mask(PositionRule{true, 64, 0}, n);
  const std::vector<double> sinks = sink_logits(h);
  const RefCase rc = ref_case(n, n, h, h, d, d, mask, scale, t, sinks);
  auto Q = upload(rc.q.data, t), K = upload(rc.k.data, t), V = upload(rc.v.data, t);
  auto acc = zeros(static_cast<size_t>(n * h * d));
  DeviceBuffer<float> lse(static_cast<size_t>(h * n)), S(static_cast<size_t>(h)), lp(static_cast<size_t>(h * n));
  lse.copy_from_host(std::vector<float>(static_cast<size_t>(h * n), -INFINITY));
  S.copy_from_host(std::vector<float>(sinks.begin(), sinks.end()));
  DeviceBuffer<std::byte> op(static_cast<size_t>(n * h * d) * dtype_size(t));
  for (auto [b0, nb] : {std::pair<index_t, index_t>{0, split}, {split, n - split}}) {  // two key blocks, no sink
    std::vector<std::int64_t> lo(static_cast<size_t>(n)), hi(static_cast<size_t>(n));
    for (index_t a = 0; a < n; ++a) {
      const KeyRange r = mask.keys(a, n);
      lo[static_cast<size_t>(a)] = std::clamp<std::int64_t>(r.lo - b0, 0, nb), hi[static_cast<size_t>(a)] = std::clamp<std::int64_t>(r.hi - b0, 0, nb);
    }
    const DeviceMask m(Mask::ranges(lo, hi), n);
    const std::size_t off = static_cast<std::size_t>(b0 * h * d) * dtype_size(t);
    attention_forward(Kernel::v2, t, AttnDims{n, nb, h, h, d, d}, Q.data(), K.data() + off, V.data() + off, m.rule(),
                      static_cast<float>(scale), op.data(), lp.data(), nullptr);
    merge_streaming(t, n, h, d, acc.data(), lse.data(), 0, n, op.data(), lp.data(), nullptr);
  }
  apply_sinks_f32(n, h, d, acc.data(), lse.data(), S.data(), nullptr);
  CPLAB_CUDA_CHECK(cudaDeviceSynchronize());
  CHECK(rel(download_f(acc.data(), acc.size()), rc.ref.o.data) < tolerance(t).o);
  CHECK(lse_err(download_f(lse.data(), lse.size()), rc.ref.lse) < tolerance(t).lse);
}

TEST_CASE("attention: v1 also takes fp16") { run_case(Kernel::v1, DType::f16, 64, 2, 1, cases()[1]); }

TEST_CASE("attention: partials over key blocks merged on the GPU (streaming and fold) equal the whole") {
  const DType t = DType::bf16;
  const index_t sq = 130, sk = 190, h = 2, d = 64, empty_row = 7;
  const double scale = 0.125;
  const auto q = rounded_tensor(sq, h, d, 5, t), k = rounded_tensor(sk, h, d, 6, t), v = rounded_tensor(sk, h, d, 7, t);
  // every row sees every key, except row 7, which sees none (O = 0, LSE = -inf in every partial)
  std::vector<std::int64_t> lo(static_cast<size_t>(sq), 0), hi(static_cast<size_t>(sq), sk);
  hi[static_cast<size_t>(empty_row)] = 0;
  const AttnOut<double> ref = dense_forward(q, k, v, Mask::ranges(lo, hi), scale);
  REQUIRE(std::isinf(ref.lse(0, empty_row)));
  auto acc_s = zeros(static_cast<size_t>(sq * h * d)), acc_f = zeros(static_cast<size_t>(sq * h * d));
  DeviceBuffer<float> lse_s(static_cast<size_t>(h * sq)), lse_f(static_cast<size_t>(h * sq));
  const std::vector<float> ninf(static_cast<size_t>(h * sq), -INFINITY);
  lse_s.copy_from_host(ninf);
  lse_f.copy_from_host(ninf);
  // Partials, each over query rows [r0, r0 + m) and key block [b0, b0 + nb), merged at row offset r0:
  // first an empty one (all -inf: both sides of the first merges are -inf), then [0, 64) for all
  // rows, then [64, 190) in two row ranges, [0, 50) and [50, 130), so the offset path is taken.
  struct Part {
    index_t r0, m, b0, nb;
    bool empty;
  };
  const std::vector<Part> parts = {{0, sq, 64, 126, true}, {0, sq, 0, 64, false}, {0, 50, 64, 126, false}, {50, 80, 64, 126, false}};
  std::vector<DeviceBuffer<std::byte>> po;
  std::vector<DeviceBuffer<float>> pl;
  for (const Part& p : parts) {
    Tensor3<double> qb(p.m, h, d), kb(p.nb, h, d), vb(p.nb, h, d);
    for (index_t i = 0; i < h; ++i) {
      for (index_t r = 0; r < p.m; ++r)
        for (index_t e = 0; e < d; ++e) qb.at(r, i, e) = q.at(p.r0 + r, i, e);
      for (index_t r = 0; r < p.nb; ++r)
        for (index_t e = 0; e < d; ++e) kb.at(r, i, e) = k.at(p.b0 + r, i, e), vb.at(r, i, e) = v.at(p.b0 + r, i, e);
    }
    std::vector<std::int64_t> plo(static_cast<size_t>(p.m)), phi(static_cast<size_t>(p.m));
    for (index_t r = 0; r < p.m; ++r) {  // the whole mask, restricted to this block, in block coordinates
      const size_t g = static_cast<size_t>(p.r0 + r);
      plo[static_cast<size_t>(r)] = std::clamp<std::int64_t>(lo[g] - p.b0, 0, p.nb);
      phi[static_cast<size_t>(r)] = p.empty ? plo[static_cast<size_t>(r)] : std::clamp<std::int64_t>(hi[g] - p.b0, 0, p.nb);
    }
    auto Q = upload(qb.data, t), K = upload(kb.data, t), V = upload(vb.data, t);
    po.emplace_back(static_cast<size_t>(p.m * h * d) * dtype_size(t));
    pl.emplace_back(static_cast<size_t>(h * p.m));
    poison(po.back());
    poison(pl.back());
    const DeviceMask m(Mask::ranges(plo, phi), p.m);
    attention_forward(Kernel::v2, t, AttnDims{p.m, p.nb, h, h, d, d}, Q.data(), K.data(), V.data(), m.rule(),
                      static_cast<float>(scale), po.back().data(), pl.back().data(), nullptr);
    merge_streaming(t, sq, h, d, acc_s.data(), lse_s.data(), p.r0, p.m, po.back().data(), pl.back().data(), nullptr);
    merge_lse(sq, h, lse_f.data(), p.r0, p.m, pl.back().data(), nullptr);
    CPLAB_CUDA_CHECK(cudaDeviceSynchronize());
  }
  for (size_t j = 0; j < parts.size(); ++j)
    fold_correction(t, sq, h, d, acc_f.data(), lse_f.data(), parts[j].r0, parts[j].m, po[j].data(), pl[j].data(), nullptr);
  CPLAB_CUDA_CHECK(cudaDeviceSynchronize());
  CHECK(rel(download_f(acc_s.data(), acc_s.size()), ref.o.data) < tolerance(t).o);
  CHECK(rel(download_f(acc_f.data(), acc_f.size()), ref.o.data) < tolerance(t).o);
  CHECK(lse_err(download_f(lse_s.data(), lse_s.size()), ref.lse) < tolerance(t).lse);
  CHECK(lse_err(download_f(lse_f.data(), lse_f.size()), ref.lse) < tolerance(t).lse);
  DeviceBuffer<std::byte> cast(static_cast<size_t>(sq * h * d) * dtype_size(t));
  poison(cast);
  cast_from_f32(t, acc_s.data(), cast.data(), sq * h * d, nullptr);
  CHECK(rel(download_t(cast.data(), cast.size() / dtype_size(t), t), ref.o.data) < tolerance(t).o);
}
