// cp_bench.cpp: `cplab-bench cp` (see cp_bench.h).
#include "cp_bench.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>

#include "device.h"
#include "error.h"
#include "experiment.h"
#include "inputs.h"
#include "layout_kernels.h"
#include "local_comm.h"
#include "ring_gpu.h"
#include "trace_plan.h"

namespace cplab::bench {

using namespace cplab::cuda;

namespace {

constexpr double kTolerance = 2e-2;  // bf16/fp16: CP vs the one-launch baseline, max|diff| / max|baseline|

Layout layout_of(const std::string& s) {
  if (s == "zigzag") return Layout::zigzag;
  if (s == "striped") return Layout::striped;
  if (s == "contiguous") return Layout::contiguous;
  throw Error("layout '" + s + "' is not one of: zigzag, striped, contiguous");
}

GpuRingSpec spec_of(const CpArgs& a) {
  return GpuRingSpec{layout_of(a.layout), !a.no_causal, a.cp, a.seq, a.heads, a.kv_heads, a.head_dim, a.head_dim,
                     parse_dtype(a.dtype), Kernel::v2, static_cast<float>(1.0 / std::sqrt(double(a.head_dim)))};
}

template <class F>
double time_ms(int iters, F&& f) {
  CPLAB_CUDA_CHECK(cudaDeviceSynchronize());
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < iters; ++i) {
    f();
    std::fprintf(stderr, "\r  [%-20s] %d/%d", std::string(static_cast<size_t>(20 * (i + 1) / iters), '#').c_str(), i + 1, iters);
  }
  CPLAB_CUDA_CHECK(cudaDeviceSynchronize());
  std::fprintf(stderr, "\r%40s\r", "");
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count() / iters;
}

// rows [g, g + 1) of a (tokens, width) device array of `bytes` per element, as doubles
std::vector<double> row(const void* base, std::int64_t g, std::int64_t width, DType t) {
  std::vector<std::byte> b(static_cast<size_t>(width) * dtype_size(t));
  CPLAB_CUDA_CHECK(cudaMemcpy(b.data(), static_cast<const std::byte*>(base) + static_cast<size_t>(g * width) * dtype_size(t), b.size(),
                              cudaMemcpyDeviceToHost));
  return from_dtype(b, t);
}

struct Diff {
  double num = 0, den = 0;
  void add(const std::vector<double>& x, const std::vector<double>& ref) {
    for (size_t i = 0; i < x.size(); ++i) {
      if (!std::isfinite(x[i]) && x[i] != ref[i]) num = INFINITY;
      else if (std::isfinite(ref[i])) num = std::max(num, std::abs(x[i] - ref[i])), den = std::max(den, std::abs(ref[i]));
    }
  }
  double rel() const { return den == 0 ? num : num / den; }
};

}  // namespace

void check_cp_args(const CpArgs& a) {
  require(a.mode == "p2p", "mode '" + a.mode + "': only p2p (the ring) runs on GPU ranks so far (allgather, a2a, a2a+p2p: not yet)");
  require(a.backend == "local", "backend '" + a.backend +
                                    "': only local (virtual ranks on one GPU) is wired into cplab-bench cp so far; "
                                    "NcclComm exists (cuda/comm, cplab-comm-check)");
  require(a.pass == "fwd" || a.pass == "both", "pass '" + a.pass + "' is not one of: fwd, both");
  require(a.warmup >= 0 && a.iters >= 1, "warmup must be >= 0 and iters >= 1");
  require(a.cp >= 1 && a.cp <= 64, "cp " + std::to_string(a.cp) + " must be in [1, 64] for virtual ranks on one GPU");
  const GpuRingSpec s = spec_of(a);
  require(s.dtype != DType::f32, "cplab-bench cp runs kernel v2: dtype bf16 or fp16");
  s.check();
}

int run_cp(const CpArgs& a) {
  const GpuRingSpec s = spec_of(a);
  const std::int64_t P = s.P, S = s.seq, n = s.n(), h = s.h, hk = s.hk, d = s.d;
  const bool bwd = a.pass == "both";
  const double flops_fwd = 4.0 * double(S) * double(S) * double(h) * double(d) / (s.causal ? 2 : 1);
  std::printf("cplab-bench cp: %s %s, cp %lld (virtual ranks, LocalComm), seq %lld, %lld heads, %lld KV heads, head dim %lld, %s, %s\n",
              a.mode.c_str(), a.layout.c_str(), (long long)P, (long long)S, (long long)h, (long long)hk, (long long)d,
              s.causal ? "causal" : "not causal", a.dtype.c_str());
  std::printf("GPU: %s\nbaseline: the same attention (all %lld tokens) as one kernel launch on this GPU (ring-flash-attention's\n"
              "'theoretic' single-GPU rate); efficiency = baseline time / CP time. FLOPs: FlashAttention's convention\n"
              "(4 s^2 h d forward, causal half, backward 2.5x), TFLOP/s per rank = FLOPs / cp / time. The ranks share one GPU,\n"
              "their transfers are device copies: 'hidden' is the share of transfer time overlapped with compute.\n\n",
              device_summary().c_str(), (long long)S);
  // ranks, filled from the index-hashed inputs (inputs.h) in each rank's local order
  LocalWorld world(static_cast<int>(P));
  std::vector<std::unique_ptr<GpuRingRank>> own;
  std::vector<GpuRingRank*> ranks;
  auto fill = [&](DeviceBuffer<std::byte>& dst, std::size_t off_elems, Input which, std::int64_t r, std::int64_t heads) {
    std::vector<double> x(static_cast<size_t>(n * heads * d));
    for (std::int64_t l = 0; l < n; ++l) {
      const std::int64_t g = layout_global(s.layout, S, P, r, l);
      for (std::int64_t e = 0; e < heads * d; ++e) x[static_cast<size_t>(l * heads * d + e)] = input_value(which, static_cast<std::uint64_t>(g * heads * d + e), s.dtype);
    }
    const std::vector<std::byte> b = to_dtype(x, s.dtype);
    CPLAB_CUDA_CHECK(cudaMemcpy(dst.data() + off_elems * dtype_size(s.dtype), b.data(), b.size(), cudaMemcpyHostToDevice));
  };
  for (std::int64_t r = 0; r < P; ++r) {
    own.push_back(std::make_unique<GpuRingRank>(s, world.rank(static_cast<int>(r))));
    GpuRingRank& x = *own.back();
    fill(x.q, 0, Input::q, r, h);
    fill(x.kv_cur, 0, Input::k, r, hk);
    fill(x.kv_cur, static_cast<size_t>(n * hk * d), Input::v, r, hk);
    fill(x.dout, 0, Input::dout, r, h);
    ranks.push_back(&x);
  }
  // the baseline's global tensors: the ranks' buffers concatenated, then unsharded on the GPU
  const std::size_t e = dtype_size(s.dtype);
  DeviceBuffer<std::byte> cat(static_cast<size_t>(S * h * d) * e), gq(cat.size()), gk(static_cast<size_t>(S * hk * d) * e),
      gv(gk.size()), gdo(cat.size()), go(cat.size());
  auto gather = [&](DeviceBuffer<std::byte>& dst, std::int64_t width, auto member) {
    for (std::int64_t r = 0; r < P; ++r)
      CPLAB_CUDA_CHECK(cudaMemcpy(cat.data() + static_cast<size_t>(r * n * width) * e, member(*own[static_cast<size_t>(r)]),
                                  static_cast<size_t>(n * width) * e, cudaMemcpyDeviceToDevice));
    unshard_tokens(cat.data(), dst.data(), S, P, width, e, s.layout, nullptr);
  };
  gather(gq, h * d, [](GpuRingRank& x) { return x.q.data(); });
  gather(gk, hk * d, [](GpuRingRank& x) { return x.kv_cur.data(); });
  gather(gv, hk * d, [&](GpuRingRank& x) { return x.kv_cur.data() + static_cast<size_t>(n * hk * d) * e; });
  gather(gdo, h * d, [](GpuRingRank& x) { return x.dout.data(); });
  DeviceBuffer<float> glse(static_cast<size_t>(h * S)), gdelta(glse.size()), gdq(static_cast<size_t>(S * h * d)),
      gdk(static_cast<size_t>(S * hk * d)), gdv(gdk.size());
  const AttnDims dims{S, S, h, hk, d, d};
  const MaskRule mask = s.causal ? MaskRule{MaskKind::causal, 0, nullptr, nullptr} : MaskRule{};
  auto base_fwd = [&] { attention_forward(Kernel::v2, s.dtype, dims, gq.data(), gk.data(), gv.data(), mask, s.scale, go.data(), glse.data(), nullptr); };
  auto base_bwd = [&] {
    softmax_delta(s.dtype, S, h, d, go.data(), gdo.data(), gdelta.data(), nullptr);
    attention_backward(Kernel::v2, s.dtype, dims, gq.data(), gk.data(), gv.data(), gdo.data(), glse.data(), gdelta.data(), mask,
                       s.scale, gdq.data(), gdk.data(), gdv.data(), nullptr);
  };
  // the ring needs kv_cur to be the rank's own block again before each forward: keep a copy
  std::vector<DeviceBuffer<std::byte>> kv0;
  for (auto& x : own) {
    kv0.emplace_back(x->kv_cur.size());
    CPLAB_CUDA_CHECK(cudaMemcpy(kv0.back().data(), x->kv_cur.data(), x->kv_cur.size(), cudaMemcpyDeviceToDevice));
  }
  auto reset = [&] {
    for (size_t r = 0; r < own.size(); ++r)
      CPLAB_CUDA_CHECK(cudaMemcpyAsync(own[r]->kv_cur.data(), kv0[r].data(), kv0[r].size(), cudaMemcpyDeviceToDevice, own[r]->compute.get()));
  };
  auto cp_fwd = [&](RingWork w) { reset(); gpu_ring_forward(s, ranks, w); world.finish(); };
  auto cp_both = [&](RingWork w) { reset(); gpu_ring_forward(s, ranks, w); gpu_ring_backward(s, ranks, w); world.finish(); };
  for (int i = 0; i < a.warmup; ++i) {
    if (bwd) cp_both(RingWork::all);
    else cp_fwd(RingWork::all);
    base_fwd();
    if (bwd) base_bwd();
  }
  nlohmann::json out{{"gpu", device_summary()}, {"mode", a.mode}, {"layout", a.layout}, {"cp", P}, {"seq", S}, {"heads", h},
                     {"kv_heads", hk}, {"head_dim", d}, {"causal", s.causal}, {"dtype", a.dtype}, {"backend", a.backend}};
  std::printf("%-5s %11s %13s %10s %14s %13s %8s %12s\n", "pass", "CP ms", "baseline ms", "efficiency", "TFLOP/s/rank", "bytes/layer", "hidden", "max rel diff");
  bool ok = true;
  for (const std::string& pass : {std::string("fwd"), std::string("fwd+bwd")}) {
    if (pass == "fwd+bwd" && !bwd) continue;
    const bool both = pass == "fwd+bwd";
    auto run = [&](RingWork w) { both ? cp_both(w) : cp_fwd(w); };
    const std::uint64_t b0 = world.total_bytes_sent();
    const double t_all = time_ms(a.iters, [&] { run(RingWork::all); });
    const double bytes = double(world.total_bytes_sent() - b0) / a.iters;
    const double t_comp = time_ms(a.iters, [&] { run(RingWork::compute_only); });
    const double t_comm = time_ms(a.iters, [&] { run(RingWork::comm_only); });
    const double t_base = time_ms(a.iters, [&] { base_fwd(); if (both) base_bwd(); });
    run(RingWork::all);  // the results checked below
    CPLAB_CUDA_CHECK(cudaMemsetAsync(gdq.data(), 0, gdq.size() * sizeof(float)));
    for (DeviceBuffer<float>* b : {&gdk, &gdv}) CPLAB_CUDA_CHECK(cudaMemsetAsync(b->data(), 0, b->size() * sizeof(float)));
    base_fwd();
    if (both) base_bwd();
    CPLAB_CUDA_CHECK(cudaDeviceSynchronize());
    Diff diff;
    for (int k = 0; k < 64; ++k) {  // sampled global rows
      const std::int64_t g = (S - 1) * k / 63;
      const RankLocal rl = layout_owner(s.layout, S, P, g);
      GpuRingRank& x = *own[static_cast<size_t>(rl.rank)];
      diff.add(row(x.o.data(), rl.local, h * d, s.dtype), row(go.data(), g, h * d, s.dtype));
      if (both) {
        diff.add(row(x.dq.data(), rl.local, h * d, DType::f32), row(gdq.data(), g, h * d, DType::f32));
        diff.add(row(x.dkv_acc.data(), rl.local, hk * d, DType::f32), row(gdk.data(), g, hk * d, DType::f32));
      }
    }
    const double flops = flops_fwd * (both ? 3.5 : 1.0), hidden = t_comm > 0 ? std::clamp((t_comp + t_comm - t_all) / t_comm, 0.0, 1.0) : 1.0;
    const bool pass_ok = diff.rel() <= kTolerance;
    ok = ok && pass_ok;
    std::printf("%-7s %9.3f %13.3f %10.3f %14.1f %13.3g %7.0f%% %12.2e %s\n", pass.c_str(), t_all, t_base, t_base / t_all,
                flops / P / (t_all * 1e-3) / 1e12, bytes, 100 * hidden, diff.rel(), pass_ok ? "PASS" : "FAIL");
    out[pass] = {{"cp_ms", t_all}, {"baseline_ms", t_base}, {"efficiency", t_base / t_all}, {"compute_only_ms", t_comp},
                 {"comm_only_ms", t_comm}, {"hidden", hidden}, {"bytes_per_layer", bytes},
                 {"tflops_per_rank", flops / P / (t_all * 1e-3) / 1e12}, {"max_rel_diff", diff.rel()}, {"pass", pass_ok}};
  }
  if (!a.trace_path.empty()) {  // the planned trace of this run with the measured tile times
    RunSpec rs;
    rs.mode = "p2p";
    rs.layout = s.layout;
    rs.cp = P;
    rs.seq = S;
    rs.heads = h;
    rs.kv_heads = hk;
    rs.head_dim = d;
    rs.causal = s.causal;
    rs.backward = bwd;
    rs.dtype = "float";
    Trace t = plan_trace(rs);
    RingTileTimes tf, tb;
    reset();
    gpu_ring_forward(s, ranks, RingWork::all, &tf);
    if (bwd) gpu_ring_backward(s, ranks, RingWork::all, &tb);
    world.finish();
    CPLAB_CUDA_CHECK(cudaDeviceSynchronize());
    Trace measured(static_cast<int>(P));
    measured.meta() = t.meta();
    measured.meta()["measured_on"] = device_summary();
    for (cplab::Event ev : t.events()) {
      if (ev.kind == EventKind::tile) ev.dur_us = 1e3 * (ev.phase == Phase::fwd ? tf : tb).ms(ev.step, static_cast<size_t>(ev.rank));
      measured.add(ev);
    }
    measured.write(a.trace_path, false);
    std::printf("\ntrace with the measured tile times: %s (cplab-viz --view timeline --trace %s)\n", a.trace_path.c_str(), a.trace_path.c_str());
  }
  if (!a.json_path.empty()) {
    std::ofstream f(a.json_path);
    f << out.dump(2) << "\n";
    require(f.good(), "cannot write " + a.json_path);
  }
  std::printf("\n%s\n", ok ? "all PASS" : "FAIL: the CP result differs from the one-launch baseline beyond the tolerance");
  return ok ? 0 : 1;
}

}  // namespace cplab::bench
