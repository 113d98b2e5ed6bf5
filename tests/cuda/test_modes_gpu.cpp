// test_modes_gpu.cpp: every context-parallel mode on GPU ranks (cp_gpu.h) on virtual ranks
// (LocalWorld, cp 2..8) against the CPU reference's dense attention in double: p2p (every layout),
// allgather (every layout), a2a (every layout), a2a+p2p (several icp x ocp), causal or not, GQA,
// packed sequences with padding (THD) for the modes that take them; kernel v2 in bf16 and v1 in
// fp32. Outputs O, LSE (reassembled with the reference's lse_in_place where the mode keeps it
// head-sharded) and dQ, dK, dV of the whole sequence, within the kernels' tolerances; sliding
// windows (causal 1, 7, n, S + 3; two-sided 7), chunks (16, 100) and attention sinks (d s_h added
// over the ranks) in every mode, the ring's bytes against its H hops (one for a contiguous window
// of at most n)
// (cuda/README.md); padding tokens must come out exactly zero. At cp 4 the benchmark's transfer-only
// and compute-only runs (CpWork) come first: every transfer matched, the inputs left intact.
// Also run with every LocalComm copy delayed (ctest cp_gpu_tests_delayed; local_comm.h).
// With NCCL: every mode on one GPU per rank (a thread each) over every visible GPU (up to 8), and
// the one-rank path on one GPU.
// What it is not: a timing (cplab-bench cp).
// Needs a GPU: the binary skips (exit 77) without one.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>

#include "cp_gpu.h"
#include "device.h"
#include "core/dense_attention.h"
#include "modes/hierarchical_cp.h"
#include "local_comm.h"
#if CPLAB_HAVE_NCCL
#include "nccl_comm.h"
#endif
#include "test_gpu_util.h"

using namespace cplab;
using namespace cplab::cuda;
using namespace cplab::cuda::test;

namespace {

// the LSE of every rank in its data layout, from where the mode keeps it
std::vector<Rows<double>> lse_by_rank(const GpuCpSpec& s, std::vector<std::unique_ptr<GpuCpRank>>& own) {
  const index_t P = s.cp.P(), S = s.cp.S(), n = s.cp.n(), h = s.cp.h();
  auto get = [&](index_t r, index_t rows, index_t cols) {
    Rows<double> l(rows, cols);
    const auto v = download_f(own[static_cast<size_t>(r)]->lse(), static_cast<size_t>(rows * cols));
    std::copy(v.begin(), v.end(), l.data());
    return l;
  };
  std::vector<Rows<double>> out;
  if (own[0]->lse_in_data_layout()) {
    for (index_t r = 0; r < P; ++r) out.push_back(get(r, h, n));
  } else if (s.cp.mode() == Mode::a2a) {
    std::vector<Rows<double>> sharded;
    for (index_t r = 0; r < P; ++r) sharded.push_back(get(r, h / P, S));
    out = lse_in_place(sequence_plan(s.cp.partition()), sharded);
  } else {  // a2a+p2p: group p's members hold the ring's (h/icp, S/ocp) LSE
    const index_t icp = s.cp.icp(), ocp = s.cp.ocp();
    out.resize(static_cast<size_t>(P));
    for (index_t p = 0; p < ocp; ++p) {
      std::vector<Rows<double>> sharded;
      for (index_t a = 0; a < icp; ++a) sharded.push_back(get(hcp_rank(icp, p, a), h / icp, S / ocp));
      const auto back = lse_in_place(hcp_inner_plan(s.cp.partition(), icp, ocp, p), sharded);
      for (index_t a = 0; a < icp; ++a) out[static_cast<size_t>(hcp_rank(icp, p, a))] = back[static_cast<size_t>(a)];
    }
  }
  return out;
}

// The ranks of one run and how they are driven: a LocalWorld (this thread drives every rank) or,
// with `nccl`, one GPU per rank, a thread each.
struct Ranks {
  std::unique_ptr<LocalWorld> world;
#if CPLAB_HAVE_NCCL
  std::vector<std::unique_ptr<NcclComm>> nccl;
#endif
  std::vector<std::unique_ptr<GpuCpRank>> own;
  std::uint64_t bytes = 0;

  Ranks(const GpuCpSpec& s, bool use_nccl) : own(static_cast<size_t>(s.cp.P())) {
    const int P = static_cast<int>(s.cp.P());
    if (!use_nccl) {
      world = std::make_unique<LocalWorld>(P);
      for (int r = 0; r < P; ++r) own[static_cast<size_t>(r)] = std::make_unique<GpuCpRank>(s, world->rank(r));
      return;
    }
#if CPLAB_HAVE_NCCL
    nccl = NcclComm::init_all(P);
    run_per_rank(nccl, [&](NcclComm& c) { own[static_cast<size_t>(c.rank())] = std::make_unique<GpuCpRank>(s, c); });
#endif
  }
  ~Ranks() {
#if CPLAB_HAVE_NCCL
    if (!nccl.empty()) run_per_rank(nccl, [&](NcclComm& c) { own[static_cast<size_t>(c.rank())].reset(); });
#endif
  }
  // forward then backward of every rank, then every stream idle (w: the benchmark's variants, which
  // leave the outputs meaningless but must match every transfer and leave the inputs intact)
  void layer(const GpuCpSpec& s, CpWork w = CpWork::all) {
    if (world) {
      std::vector<GpuCpRank*> all;
      for (auto& x : own) all.push_back(x.get());
      gpu_cp_forward(s, all, w);
      gpu_cp_backward(s, all, w);
      world->finish();
      CPLAB_CUDA_CHECK(cudaDeviceSynchronize());
      bytes = world->total_bytes_sent();
      return;
    }
#if CPLAB_HAVE_NCCL
    run_per_rank(nccl, [&](NcclComm& c) {
      GpuCpRank& x = *own[static_cast<size_t>(c.rank())];
      gpu_cp_forward(s, {&x}, w);
      gpu_cp_backward(s, {&x}, w);
      for (cudaStream_t st : x.streams()) c.synchronize(st);
    });
    bytes = 0;
    for (auto& c : nccl) bytes += c->bytes_sent();
#endif
  }
};

void run(const GpuCpSpec& s, bool use_nccl = false) {
  s.check();
  const CpSpec& c = s.cp;
  const index_t P = c.P(), S = c.S(), n = c.n(), h = c.h(), hk = c.hk(), d = c.d(), dv = c.dv();
  const DType t = s.dtype;
  const Tol tol = tolerance(t);
  const auto q = rounded_tensor(S, h, d, 1, t), k = rounded_tensor(S, hk, d, 2, t), v = rounded_tensor(S, hk, dv, 3, t),
             dout = rounded_tensor(S, h, dv, 4, t);
  const Packing& pk = c.packing();
  const std::vector<index_t> all = iota_positions(0, S);
  // the run's mask from the reference's one rule (causal, window, chunk; per sequence when packed)
  const Mask mask = c.packed() ? token_mask(pk, all, all, c.rule()) : sequence_mask(c.rule(), S);
  const std::vector<double> sinks = c.sinks() ? sink_logits(h) : std::vector<double>{};
  const double* sk = sinks.empty() ? nullptr : sinks.data();
  const AttnOut<double> ref = dense_forward(q, k, v, mask, c.scale(), sk);
  const AttnGrads<double> g = dense_backward(q, k, v, ref, dout, mask, c.scale(), sk);
  const Partition& part = c.partition();
  const auto qs = shard(part, q), ks = shard(part, k), vs = shard(part, v), ds = shard(part, dout);
  Ranks ranks(s, use_nccl);
  std::vector<std::unique_ptr<GpuCpRank>>& own = ranks.own;
  const std::size_t e = dtype_size(t);
  for (index_t r = 0; r < P; ++r) {  // (upload_sync copies to any GPU: a rank's memory may be on another)
    GpuCpRank& x = *own[static_cast<size_t>(r)];
    const size_t R = static_cast<size_t>(r);
    for (auto [dst, src] : {std::pair{x.q(), &qs[R]}, {x.kv(), &ks[R]}, {x.kv() + static_cast<size_t>(n * hk * d) * e, &vs[R]}, {x.dout(), &ds[R]}}) {
      const std::vector<std::byte> b = to_dtype(src->data, t);
      upload_sync(dst, b.data(), b.size());
    }
    if (c.sinks()) x.set_sinks(std::vector<float>(sinks.begin(), sinks.end()));
  }
  if (!use_nccl && P == 4)  // cplab-bench's order: the transfer-only and compute-only variants, then real runs
    for (CpWork w : {CpWork::comm_only, CpWork::compute_only}) ranks.layer(s, w);
  for (int rep = 0; rep < 2; ++rep) ranks.layer(s);  // twice: the inputs must survive a run
  std::vector<Tensor3<double>> o, dq, dk, dvv;
  for (index_t r = 0; r < P; ++r) {
    GpuCpRank& x = *own[static_cast<size_t>(r)];
    o.push_back(as_tensor(download_t(x.o(), static_cast<size_t>(n * h * dv), t), n, h, dv));
    dq.push_back(as_tensor(download_f(x.dq(), static_cast<size_t>(n * h * d)), n, h, d));
    const auto dkv = download_f(x.dkv(), static_cast<size_t>(n * hk * (d + dv)));
    dk.push_back(as_tensor({dkv.begin(), dkv.begin() + n * hk * d}, n, hk, d));
    dvv.push_back(as_tensor({dkv.begin() + n * hk * d, dkv.end()}, n, hk, dv));
  }
  const Tensor3<double> O = unshard(part, o), dQ = unshard(part, dq), dK = unshard(part, dk), dV = unshard(part, dvv);
  CHECK(rel(O.data, ref.o.data) < tol.o);
  const Rows<double> L = unshard_rows(part, lse_by_rank(s, own));
  CHECK(lse_err(std::vector<double>(L.data(), L.data() + L.size()), ref.lse) < tol.lse);
  CHECK(rel(dQ.data, g.dq.data) < tol.grad);
  CHECK(rel(dK.data, g.dk.data) < tol.grad);
  CHECK(rel(dV.data, g.dv.data) < tol.grad);
  double padding = 0;  // padding tokens: exactly zero in every output and gradient
  for (index_t x = 0; x < S; ++x)
    if (!pk.real(x))
      for (const Tensor3<double>* y : {&O, &dQ, &dK, &dV})
        for (index_t j = 0; j < y->h * y->d; ++j) padding = std::max(padding, std::abs(y->token(x)[j]));
  CHECK(padding == 0);
  CHECK((ranks.bytes > 0 || P == 1 || c.ring_hops() == 0));
  if (c.sinks()) {  // d s_h: every rank's rows' part, added up (the all-reduce of a parameter's gradient)
    std::vector<double> dsinks(static_cast<size_t>(h), 0.0);
    for (index_t r = 0; r < P; ++r) {
      const std::vector<double> mine = own[static_cast<size_t>(r)]->dsinks();
      for (index_t i = 0; i < h; ++i) dsinks[static_cast<size_t>(i)] += mine[static_cast<size_t>(i)];
    }
    CHECK(rel(dsinks, g.dsinks) < tol.grad);
  }
  if (c.mode() == Mode::p2p && !use_nccl) {
    // the ring makes the reference's H hops (one when a contiguous window fits a rank): per layer and
    // rank H KV blocks forward, H KV blocks and H fp32 dK|dV blocks backward; cumulative over the
    // layers run (3 at cp 4: the transfer-only variant moves the same bytes)
    const auto kv = static_cast<std::uint64_t>(n * hk * (d + dv)), H = static_cast<std::uint64_t>(c.ring_hops());
    const std::uint64_t layers = P == 4 ? 3 : 2;
    CHECK(ranks.bytes == layers * static_cast<std::uint64_t>(P) * H * kv * (2 * e + 4));
  }
}

// a case's CP layer: 80 tokens a rank (tiles with tails), the scale given as 1/sqrt(d); fp32 runs
// kernel v1 with head dim 16
CpFields fields(Mode mode, Layout layout, bool causal, index_t P, index_t h, index_t hk, DType t = DType::bf16,
                index_t d = 64) {
  CpFields f;
  f.mode = mode;
  f.layout = layout;
  f.causal = causal;
  f.cp = P;
  f.seq = 2 * P * 40;
  f.heads = h;
  f.kv_heads = hk;
  f.head_dim = t == DType::f32 ? 16 : d;
  f.scale = 1.0 / std::sqrt(double(f.head_dim));
  return f;
}

// the GPU spec of a case (kernel: v1 for fp32, else v2, unless given)
GpuCpSpec spec(const CpFields& f, DType t = DType::bf16) {
  return GpuCpSpec{CpSpec(f), t, t == DType::f32 ? Kernel::v1 : Kernel::v2};
}
GpuCpSpec spec(const CpFields& f, DType t, Kernel kernel) { return GpuCpSpec{CpSpec(f), t, kernel}; }

// packed: three sequences of uneven real lengths, padded to the layout's factor (seq 0: their total)
CpFields packed(CpFields f) {
  f.cu_seqlens = {0, 37, 37 + 2 * f.cp * 9, 37 + 2 * f.cp * 9 + 61};
  f.pad = true;
  f.seq = 0;
  return f;
}

// a2a+p2p over icp x ocp ranks
CpFields hcp(CpFields f, index_t icp, index_t ocp) {
  f.icp = icp;
  f.ocp = ocp;
  return f;
}

}  // namespace

TEST_CASE("gpu modes: p2p, allgather and a2a, every layout, causal or not, cp 2..8, packed (THD), equal the reference") {
  for (Mode mode : {Mode::p2p, Mode::allgather, Mode::a2a})
    for (Layout layout : {Layout::zigzag, Layout::striped, Layout::contiguous})
      for (bool causal : {true, false})
        for (index_t P : {2, 3, 4, 8}) {
          CAPTURE(to_string(mode));
          CAPTURE(to_string(layout));
          CAPTURE(causal);
          CAPTURE(P);
          const bool a2a = mode == Mode::a2a;
          const index_t h = a2a ? 2 * P : 4, hk = a2a ? P : 2;  // GQA 2:1
          run(spec(fields(mode, layout, causal, P, h, hk)));
          if (P == 4) run(spec(fields(mode, layout, causal, P, h, hk, DType::f32), DType::f32));
          if (P != 3) run(spec(packed(fields(mode, layout, causal, P, h, hk))));
        }
}

TEST_CASE("gpu modes: a2a+p2p, several icp x ocp, causal or not, equals the reference") {
  for (auto [icp, ocp] : {std::pair<index_t, index_t>{2, 2}, {2, 4}, {4, 2}, {1, 3}, {3, 1}})
    for (bool causal : {true, false}) {
      CAPTURE(icp);
      CAPTURE(ocp);
      CAPTURE(causal);
      run(spec(hcp(fields(Mode::a2a_p2p, Layout::zigzag, causal, icp * ocp, 2 * icp, icp), icp, ocp)));
    }
}

TEST_CASE("gpu modes with kernel v3 (wgmma + TMA forward): every mode, d = 64 and 128, packed, equal the reference") {
  const std::string why = v3_unavailable();
  if (!why.empty()) {
    MESSAGE("skipped: " << why);
    return;
  }
  for (Mode mode : {Mode::p2p, Mode::allgather, Mode::a2a, Mode::a2a_p2p})
    for (index_t d : {64, 128}) {
      CAPTURE(to_string(mode));
      CAPTURE(d);
      CpFields f = fields(mode, Layout::zigzag, true, 4, 8, 4, DType::bf16, d);
      f.seq = 2 * 4 * 200;  // 200 tokens a rank: key tiles of 128 with tails, both TMA stages reused
      if (mode == Mode::a2a_p2p) f = hcp(f, 2, 2);
      run(spec(f, DType::bf16, Kernel::v3));
      if (mode_info(mode).packed) run(spec(packed(f), DType::bf16, Kernel::v3));
    }
}

// a case with a sliding window (two-sided when not causal), a chunk and / or sinks
CpFields masked(CpFields f, index_t window, index_t chunk, bool sinks) {
  if (window > 0) f.window = window;
  if (chunk > 0) f.chunk = chunk;
  f.sinks = sinks;
  return f;
}

TEST_CASE("gpu modes: windows, chunks and sinks in every mode and layout, packed or not, equal the reference") {
  for (Mode mode : {Mode::p2p, Mode::allgather, Mode::a2a})
    for (Layout layout : {Layout::zigzag, Layout::striped, Layout::contiguous})
      for (index_t P : {2, 4}) {
        const bool a2a = mode == Mode::a2a;
        const index_t h = a2a ? 2 * P : 4, hk = a2a ? P : 2, n = 80, S = n * P;
        // causal windows 1, 7, n (one hop under contiguous), S + 3; two-sided 7; chunks 16, 100
        struct M {
          bool causal;
          index_t window, chunk;
        };
        for (const M m : {M{true, 1, 0}, M{true, 7, 0}, M{true, n, 0}, M{true, S + 3, 0}, M{false, 7, 0}, M{true, 0, 16},
                          M{true, 0, 100}})
          for (bool sinks : {false, true}) {
            CAPTURE(to_string(mode));
            CAPTURE(to_string(layout));
            CAPTURE(P);
            CAPTURE(m.causal);
            CAPTURE(m.window);
            CAPTURE(m.chunk);
            CAPTURE(sinks);
            const CpFields f = masked(fields(mode, layout, m.causal, P, h, hk), m.window, m.chunk, sinks);
            run(spec(f));
            if (m.window == 7 && P == 4) run(spec(f, DType::f32));
            if (m.window == 7 || m.chunk == 16) run(spec(packed(f)));
          }
      }
}

TEST_CASE("gpu modes: a2a+p2p with a window, a chunk and sinks equals the reference") {
  for (auto [icp, ocp] : {std::pair<index_t, index_t>{2, 2}, {2, 4}})
    for (auto [window, chunk] : {std::pair<index_t, index_t>{7, 0}, {100, 0}, {0, 16}})
      for (bool sinks : {false, true}) {
        CAPTURE(icp);
        CAPTURE(ocp);
        CAPTURE(window);
        CAPTURE(chunk);
        CAPTURE(sinks);
        run(spec(masked(hcp(fields(Mode::a2a_p2p, Layout::zigzag, true, icp * ocp, 2 * icp, icp), icp, ocp), window, chunk, sinks)));
      }
}

#if CPLAB_HAVE_NCCL
TEST_CASE("gpu modes over NCCL: every mode on one GPU per rank (every visible GPU, up to 8), and the one-rank path") {
  const index_t gpus = std::min(device_count(), 8);
  REQUIRE(gpus >= 1);
  std::vector<index_t> sizes{1};  // the one-rank path, then every GPU
  if (gpus > 1) sizes.push_back(gpus);
  for (index_t P : sizes) {
    for (Mode mode : {Mode::p2p, Mode::allgather, Mode::a2a}) {
      CAPTURE(to_string(mode));
      CAPTURE(P);
      run(spec(fields(mode, Layout::zigzag, true, P, 2 * P, P)), true);
      run(spec(packed(fields(mode, Layout::zigzag, true, P, 2 * P, P))), true);
    }
    if (P % 2 == 0) run(spec(hcp(fields(Mode::a2a_p2p, Layout::zigzag, true, P, 4, 2), 2, P / 2)), true);
  }
}
#endif
