// test_infer_emu.cpp: inference CP (issue 37) on the CPU with the GPU's own kernels: rank r's plan
// (cuda/cp/infer_gpu_plan.h: the reference's ownership, token masks and ring order), each tile run
// by the emulated attention kernel (v1 in fp32, v2 in bf16: their own source, emu_kernels.h), merged
// by the emulated merge kernel (merge.cu's merge_streaming, emu_merge.h) and the sinks applied by
// the emulated sink kernel, in the data flow of cuda/cp/infer_gpu.cpp (pass-KV: every tile merged
// where it is computed; pass-Q, its ring decode and decode-ag: each tile's partial in its owner's
// slot, the slots returned to their owners and merged in rank order), against run_infer's outputs
// (reference/infer/infer_run.h, checked against the dense oracle with the offset in the same case)
// with cuda/README.md's tolerances. What this sees without a GPU: the plan's tiles and masks, the
// padding rows never read, who merges which partial, the kernels' masking of a causal-with-offset
// tile with a ranges mask; what it cannot: the streams, events and communicators of infer_gpu.cpp
// (the GPU test tests/cuda/test_infer_gpu.cpp does), or the device's memory model.
// What it is not: a GPU test.
#include <doctest/doctest.h>

#include <cstring>
#include <vector>

#include "core/dtype.h"
#include "emu_kernels.h"
#include "emu_merge.h"
#include "infer/infer_run.h"
#include "infer_test_fields.h"
#include "infer_gpu_plan.h"
#include "test_gpu_util.h"

using namespace cplab;
using namespace cplab::cuda;
using cplab::cuda::test::Tol;

namespace {

template <class T>
std::vector<T> as(const std::vector<double>& x, DType t) {  // rounded to t, as the device holds it
  const std::vector<std::byte> b = to_dtype(x, t);
  std::vector<T> out(x.size());
  std::memcpy(out.data(), b.data(), b.size());
  return out;
}
template <class T>
std::vector<double> back(const std::vector<T>& x, DType t) {
  std::vector<std::byte> b(x.size() * sizeof(T));
  std::memcpy(b.data(), x.data(), b.size());
  return from_dtype(b, t);
}
std::vector<double> take_rows(const Tensor3<double>& x, const std::vector<index_t>& rows) {
  std::vector<double> out;
  for (index_t g : rows) out.insert(out.end(), x.token(g), x.token(g) + x.h * x.d);
  return out;
}

struct Partial {  // one tile's (O, LSE) of nq rows: o (nq, h, dv) fp32, lse (h, nq)
  std::vector<float> o, lse;
};

template <class T>
Partial run_tile(const InferSpec& s, const InferGpuTile& t, const std::vector<T>& q, const std::vector<T>& k,
                 const std::vector<T>& v, DType dt, int kernel) {
  const index_t h = s.h(), dv = s.dv();
  Partial p{std::vector<float>(static_cast<size_t>(t.nq * h * dv), 0.0f),
            std::vector<float>(static_cast<size_t>(h * t.nq), -INFINITY)};
  if (t.empty || t.nq == 0) return p;  // what infer_gpu.cpp writes without a kernel call
  std::vector<T> o(static_cast<size_t>(t.nq * h * dv));
  const AttnDims dims{t.nq, t.nk, h, s.hk(), s.d(), dv};
  const float scale = static_cast<float>(s.scale());
  if (kernel == 1) cplab_emu::v1_forward<T>(dims, q.data(), k.data(), v.data(), t.mask.rule(), scale, o.data(), p.lse.data(), nullptr);
  else cplab_emu::v2_forward<T>(cplab_emu::CpAsync::deferred, dims, q.data(), k.data(), v.data(), t.mask.rule(), scale,
                                o.data(), p.lse.data(), nullptr);
  const std::vector<double> od = back(o, dt);
  p.o.assign(od.begin(), od.end());  // merge.cu reads the dtype's O as fp32; the rounding is the same
  return p;
}

template <class T>
void run_case(const InferFields& f, DType dt, int kernel) {
  const InferSpec s(f);
  const index_t N = s.N(), T_ = s.T(), h = s.h(), dv = s.dv();
  InferRunSpec rs{s};
  InferInputs in = make_infer_inputs(rs);
  for (Tensor3<double>* x : {&in.q, &in.k, &in.v})
    for (double& e : x->data) e = round_to(e, dt);
  if (s.sinks()) in.sinks = cplab::cuda::test::sink_logits(h);
  const InferReport ref = run_infer(rs, in);
  REQUIRE(ref.max_error() <= 1e-10);
  std::vector<std::vector<T>> q, k, v;
  for (index_t r = 0; r < N; ++r) {
    q.push_back(as<T>(take_rows(in.q, s.q_rows(r)), dt));
    k.push_back(as<T>(take_rows(in.k, s.kv_rows(r)), dt));
    v.push_back(as<T>(take_rows(in.v, s.kv_rows(r)), dt));
  }
  // slots[j][o]: rank j's partial of owner o's queries (pass-Q, decode); pass-KV merges at once
  std::vector<std::vector<Partial>> slots(static_cast<size_t>(N), std::vector<Partial>(static_cast<size_t>(N)));
  std::vector<std::vector<float>> acc_o(static_cast<size_t>(N)), acc_l(static_cast<size_t>(N));
  for (index_t r = 0; r < N; ++r) {
    const index_t n = static_cast<index_t>(s.q_rows(r).size());
    acc_o[static_cast<size_t>(r)].assign(static_cast<size_t>(n * h * dv), 0.0f);
    acc_l[static_cast<size_t>(r)].assign(static_cast<size_t>(h * n), -INFINITY);
  }
  for (index_t r = 0; r < N; ++r) {
    const InferGpuPlan plan = infer_gpu_plan(s, r);
    for (const InferGpuTile& t : plan.tiles) {
      const Partial p = run_tile<T>(s, t, q[static_cast<size_t>(t.q_owner)], k[static_cast<size_t>(t.kv_owner)],
                                    v[static_cast<size_t>(t.kv_owner)], dt, kernel);
      if (s.mode() == InferMode::pass_kv) {
        REQUIRE(t.q_owner == r);  // the rank's own queries
        if (!t.empty && t.nq > 0)
          cplab_emu::merge_streaming_f32(t.nq, h, dv, acc_o[static_cast<size_t>(r)].data(), acc_l[static_cast<size_t>(r)].data(),
                                         0, t.nq, p.o.data(), p.lse.data());
      } else {
        REQUIRE(t.kv_owner == r);  // the rank's own KV
        slots[static_cast<size_t>(r)][static_cast<size_t>(t.q_owner)] = p;
      }
    }
  }
  if (s.mode() != InferMode::pass_kv)  // the all-to-all: owner o merges rank j's slot, j = 0 .. N-1
    for (index_t o = 0; o < N; ++o) {
      const index_t n = static_cast<index_t>(s.q_rows(o).size());
      for (index_t j = 0; j < N && n > 0; ++j) {
        const Partial& p = slots[static_cast<size_t>(j)][static_cast<size_t>(o)];
        REQUIRE(static_cast<index_t>(p.lse.size()) == h * n);  // every rank computed a partial for every owner
        cplab_emu::merge_streaming_f32(n, h, dv, acc_o[static_cast<size_t>(o)].data(), acc_l[static_cast<size_t>(o)].data(), 0,
                                       n, p.o.data(), p.lse.data());
      }
    }
  std::vector<double> out_o(static_cast<size_t>(T_ * h * dv)), out_l(static_cast<size_t>(h * T_));
  const std::vector<float> sinks(in.sinks.begin(), in.sinks.end());
  for (index_t r = 0; r < N; ++r) {
    const std::vector<index_t>& rows = s.q_rows(r);
    const index_t n = static_cast<index_t>(rows.size());
    std::vector<float>& ao = acc_o[static_cast<size_t>(r)];
    std::vector<float>& al = acc_l[static_cast<size_t>(r)];
    if (n > 0 && s.sinks()) cplab_emu::apply_sinks(n, h, dv, ao.data(), al.data(), sinks.data());
    const std::vector<double> cast = back(as<T>(std::vector<double>(ao.begin(), ao.end()), dt), dt);
    for (index_t a = 0; a < n; ++a) {
      const index_t g = rows[static_cast<size_t>(a)];
      std::copy(cast.begin() + a * h * dv, cast.begin() + (a + 1) * h * dv, out_o.begin() + g * h * dv);
      for (index_t i = 0; i < h; ++i) out_l[static_cast<size_t>(i * T_ + g)] = al[static_cast<size_t>(i * n + a)];
    }
  }
  const Tol tol = cplab::cuda::test::tolerance(dt);
  CAPTURE(to_string(s.mode()));
  CAPTURE(N);
  CHECK(cplab::cuda::test::rel(out_o, ref.o.data) <= tol.o);
  CHECK(cplab::cuda::test::lse_err(out_l, ref.lse) <= tol.lse);
}

using cplab::cuda::test::infer_fields;
constexpr auto& kModes = cplab::cuda::test::kInferModes;

}  // namespace

TEST_CASE("emulated inference CP: every variant and cache layout, P = 0, 7, 100, T = 1, cp-1, 2cp, kernel v1 fp32") {
  for (InferMode m : kModes)
    for (CacheLayout cl : {CacheLayout::zigzag, CacheLayout::interleaved})
      for (index_t P : {0, 7, 100})
        for (index_t T : {1, 3, 8}) {
          InferFields f = infer_fields(m, 4, {P}, {T});
          f.cache_layout = cl;
          f.head_dim = 24, f.v_head_dim = 16;
          run_case<float>(f, DType::f32, 1);
        }
}

TEST_CASE("emulated inference CP: packed requests, a window, a chunk and sinks, GQA 8 / 1, kernel v1 fp32") {
  for (InferMode m : kModes)
    for (int rule = 0; rule < 3; ++rule) {
      InferFields f = infer_fields(m, 3, {30, 0, 7}, {11, 2, 5});
      f.heads = 8, f.kv_heads = 1, f.head_dim = 16;
      if (rule == 0) f.window = 9;
      if (rule == 1) f.chunk = 16;
      if (rule == 2) f.sinks = true;
      run_case<float>(f, DType::f32, 1);
    }
}

TEST_CASE("emulated inference CP: pass-Q and decode-ag with kernel v2 in bf16 (P = 100, T = 33, cp 4)") {
  for (InferMode m : {InferMode::pass_q, InferMode::decode_ag})
    run_case<__nv_bfloat16>(infer_fields(m, 4, {100}, {33}), DType::bf16, 2);
}
