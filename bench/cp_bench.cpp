// cp_bench.cpp: `cplab-bench cp` (see cp_bench.h).
#include "cp_bench.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <map>
#include <nlohmann/json.hpp>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "core/error.h"
#include "core/output_file.h"
#include "core/rel_error.h"
#include "core/util.h"
#include "cp_ranks.h"
#include "cp_util.h"
#include "infer_cp_bench.h"
#include "device.h"
#include "inputs.h"
#include "plan/trace_plan.h"
#include "run/experiment.h"

namespace cplab::bench {

using namespace cplab::cuda;

namespace {

constexpr double kTolerance = 2e-2;  // bf16/fp16: CP vs the one-launch baseline, max|diff| / max|baseline|
constexpr std::int64_t kDefaultSeq = 65536;

// The run's spec: the arguments into CpFields, validated once by CpSpec (the mode table's rules,
// named), plus the GPU's dtype and kernel. --seq: the given one (with --cu-seqlens CpSpec reports a
// disagreement with the packed total), else the packed total (seq 0) or kDefaultSeq.
GpuCpSpec spec_of(const CpArgs& a) {
  const DType dtype = parse_dtype(a.dtype);
  require(a.kernel == "v2" || a.kernel == "v3", "kernel '" + a.kernel + "' is not one of: v2, v3");
  const Kernel kernel = a.kernel == "v2" ? Kernel::v2 : Kernel::v3;
  CpFields f;
  f.mode = parse_mode(a.mode);
  f.layout = parse_layout(a.layout);
  f.cp = a.cp;
  f.heads = a.heads;
  f.kv_heads = a.kv_heads;
  f.head_dim = a.head_dim;
  f.causal = !a.no_causal;
  if (!a.hcp.empty()) parse_hcp(a.hcp, f);
  if (!a.cu_seqlens.empty()) f.cu_seqlens = parse_cu_seqlens(a.cu_seqlens);
  f.pad = a.pad;
  f.seq = a.seq >= 0 ? a.seq : (f.cu_seqlens.empty() ? kDefaultSeq : 0);
  return GpuCpSpec{CpSpec(f), dtype, kernel};
}

// FlashAttention's convention per sequence (real lengths): 4 s^2 h d forward, causal half
double fwd_flops(const CpSpec& c) {
  const Packing& pk = c.packing();
  double f = 0;
  for (index_t j = 0; j < pk.num_seqs(); ++j)
    f += 4.0 * double(pk.length(j)) * double(pk.length(j)) * double(c.h()) * double(c.d());
  return c.causal() ? f / 2 : f;
}

}  // namespace

void check_cp_args(const CpArgs& a) {
  if (is_infer_run(a)) return check_infer_cp_args(a);  // an inference step (infer_cp_bench.h)
  require(a.backend == "local" || a.backend == "nccl", "backend '" + a.backend + "' is not one of: local, nccl");
  require(a.pass == "fwd" || a.pass == "both", "pass '" + a.pass + "' is not one of: fwd, both");
  require(a.warmup >= 0 && a.iters >= 1, "warmup must be >= 0 and iters >= 1");
  // cp >= 1 is the CpSpec's rule (check_cp_size); the benchmark's own bound is 64 ranks
  require(a.cp <= 64, "cp " + std::to_string(a.cp) + " is more than the 64 ranks cplab-bench cp runs");
  const GpuCpSpec s = spec_of(a);
  require(s.dtype != DType::f32, "cplab-bench cp runs kernel " + a.kernel + ": dtype bf16 or fp16");
  s.check();
  // the output files, checked now (nothing created or truncated) and written whole after the run
  if (!a.trace_path.empty()) check_writable(a.trace_path, "--trace");
  if (!a.json_path.empty()) check_writable(a.json_path, "--json");
  require(a.trace_path.empty() || a.json_path.empty() || !same_file(a.trace_path, a.json_path),
          "--json " + a.json_path + " is the same file as --trace " + a.trace_path + " (each output needs its own file)");
}

int run_cp(const CpArgs& a) {
  if (is_infer_run(a)) return run_infer_cp(a);
  const GpuCpSpec s = spec_of(a);
  const CpSpec& c = s.cp;
  const std::int64_t P = c.P(), S = c.S(), n = c.n(), h = c.h(), hk = c.hk(), d = c.d(), dv = c.dv();
  const bool bwd = a.pass == "both";
  const std::size_t e = dtype_size(s.dtype);
  CPLAB_CUDA_CHECK(cudaSetDevice(0));
  CpRanks ranks(s, a.backend);
  const auto G = static_cast<std::int64_t>(ranks.gpus());  // efficiency and TFLOP/s are per GPU, not per rank
  std::printf("cplab-bench cp: %s%s %s, cp %lld, seq %lld%s, %lld heads, %lld KV heads, head dim %lld, %s, %s, "
              "kernel %s\n",
              c.info().name, a.hcp.empty() ? "" : (" " + a.hcp).c_str(), to_string(c.layout()).c_str(), (long long)P,
              (long long)S,
              c.packed() ? (" (" + num(c.packing().num_seqs()) + " packed sequences)").c_str() : "", (long long)h,
              (long long)hk, (long long)d, c.causal() ? "causal" : "not causal", a.dtype.c_str(), a.kernel.c_str());
  const std::string on = a.backend == "local" ? "G = 1: --backend local, the " + std::to_string(P) + " virtual ranks share GPU 0"
                                             : "G = " + std::to_string(G) + ": --backend nccl, one GPU per rank";
  std::printf("ranks: %s\nGPU 0: %s\nbaseline: the same attention (all %lld tokens) as one kernel launch on GPU 0 (ring-flash-attention's\n"
              "'theoretic' single-GPU rate). G = the GPUs the CP ranks run on (%s).\n"
              "efficiency = baseline ms / (G x CP ms): 1.0 = perfect scaling over the G GPUs.\n"
              "G*CP/base = G x CP ms / baseline ms = 1 / efficiency: the CP layer's GPU time over the baseline's (the goal\n"
              "'CP within 1.15x of single-rank attention' is G*CP/base <= 1.15; with G = 1 it is CP ms / baseline ms).\n"
              "FLOPs: FlashAttention's convention (4 s^2 h d forward per sequence, causal half, backward 2.5x);\n"
              "TFLOP/s/GPU = FLOPs / G / CP time. 'hidden' = the share of transfer time overlapped with compute, from\n"
              "all / compute-only / transfer-only runs. max rel diff: the worst of O, dQ, dK, dV, each max|CP - baseline| /\n"
              "max|baseline| on 64 sampled rows (PASS <= %.0e; a baseline all zero or not finite there is a FAIL).\n",
              ranks.describe().c_str(), device_summary().c_str(), (long long)S, on.c_str(), kTolerance);
  const auto f0 = std::chrono::steady_clock::now();
  std::uint64_t filled = 0;
  const Partition& part = c.partition();
  for (std::int64_t r = 0; r < P; ++r) {  // the index-hashed inputs (inputs.h) in each rank's local order
    GpuCpRank& x = ranks.rank(r);
    const std::vector<index_t> mine = part.indices(r);
    filled += fill(x.q(), Input::q, mine, h * d, s.dtype);
    filled += fill(x.kv(), Input::k, mine, hk * d, s.dtype);
    filled += fill(x.kv() + sz(n * hk * d) * e, Input::v, mine, hk * dv, s.dtype);
    if (bwd) filled += fill(x.dout(), Input::dout, mine, h * dv, s.dtype);
  }
  // the baseline on GPU 0: global tensors in sequence order
  CPLAB_CUDA_CHECK(cudaSetDevice(0));
  const std::vector<index_t> seq_order = iota_positions(0, S);
  DeviceBuffer<std::byte> gq(sz(S * h * d) * e), gk(sz(S * hk * d) * e), gv(sz(S * hk * dv) * e), gdo(sz(S * h * dv) * e), go(gdo.size());
  filled += fill(gq.data(), Input::q, seq_order, h * d, s.dtype);
  filled += fill(gk.data(), Input::k, seq_order, hk * d, s.dtype);
  filled += fill(gv.data(), Input::v, seq_order, hk * dv, s.dtype);
  if (bwd) filled += fill(gdo.data(), Input::dout, seq_order, h * dv, s.dtype);
  const double fill_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - f0).count();
  std::printf("inputs: %.3g elements (every rank's and the baseline's) filled in %.2f s\n\n", double(filled), fill_s);
  DeviceBuffer<float> glse(sz(h * S)), gdelta(glse.size()), gdq(sz(S * h * d)), gdk(sz(S * hk * d)), gdv(sz(S * hk * dv));
  const AttnDims dims{S, S, h, hk, d, dv};
  const Mask mask = c.packed() ? token_mask(c.packing(), seq_order, seq_order, c.causal())
                               : (c.causal() ? Mask::causal(0) : Mask::none());
  const DeviceMask dmask(mask, S);
  const float scale = s.kernel_scale();
  auto base_fwd = [&] {
    attention_forward(s.kernel, s.dtype, dims, gq.data(), gk.data(), gv.data(), dmask.rule(), scale, go.data(),
                      glse.data(), nullptr);
  };
  auto base_bwd = [&] {
    for (DeviceBuffer<float>* b : {&gdq, &gdk, &gdv}) CPLAB_CUDA_CHECK(cudaMemsetAsync(b->data(), 0, b->size() * sizeof(float)));
    softmax_delta(s.dtype, S, h, dv, go.data(), gdo.data(), gdelta.data(), nullptr);
    attention_backward(s.kernel, s.dtype, dims, gq.data(), gk.data(), gv.data(), gdo.data(), glse.data(), gdelta.data(),
                       dmask.rule(), scale, gdq.data(), gdk.data(), gdv.data(), nullptr);
  };
  std::vector<std::unique_ptr<TileTimes>> tf(ranks.groups()), tb(ranks.groups());
  for (std::size_t g = 0; g < ranks.groups(); ++g) tf[g] = std::make_unique<TileTimes>(), tb[g] = std::make_unique<TileTimes>();
  auto layer = [&](bool both, CpWork w, bool timed_tiles = false) {
    ranks.run([&](std::size_t g) {
      gpu_cp_forward(s, ranks.group(g), w, timed_tiles ? tf[g].get() : nullptr);
      if (both) gpu_cp_backward(s, ranks.group(g), w, timed_tiles ? tb[g].get() : nullptr);
    });
  };
  for (int i = 0; i < a.warmup; ++i) {
    layer(bwd, CpWork::all);
    base_fwd();
    if (bwd) base_bwd();
  }
  nlohmann::json out{{"gpu", device_summary()}, {"ranks", ranks.describe()}, {"mode", c.info().name}, {"hcp", a.hcp},
                     {"layout", to_string(c.layout())}, {"cp", P}, {"seq", S}, {"cu_seqlens", c.fields().cu_seqlens}, {"heads", h},
                     {"kv_heads", hk}, {"head_dim", d}, {"causal", c.causal()}, {"dtype", a.dtype},
                     {"kernel", a.kernel}, {"backend", a.backend},
                     {"baseline", "one launch of cplab " + a.kernel + " on GPU 0"},
                     {"gpus", G}, {"fill_s", fill_s},
                     {"definitions",
                      {{"gpus", "G, the GPUs the CP ranks run on: 1 for --backend local (virtual ranks share GPU 0), cp for nccl"},
                       {"efficiency", "baseline_ms / (gpus * cp_ms); 1.0 = perfect scaling"},
                       {"gpu_time_over_baseline", "gpus * cp_ms / baseline_ms = 1 / efficiency (goal: <= 1.15)"},
                       {"tflops_per_gpu", "FlashAttention-convention FLOPs / gpus / cp_ms"},
                       {"baseline_tflops", "the same FLOPs / baseline_ms (one GPU)"},
                       {"rel_diff", "per tensor, max|CP - baseline| / max|baseline| on 64 sampled rows; null: no valid check"}}}};
  std::printf("%-7s %9s %13s %10s %10s %12s %13s %8s %12s\n", "pass", "CP ms", "baseline ms", "efficiency", "G*CP/base", "TFLOP/s/GPU",
              "bytes/layer", "hidden", "max rel diff");
  bool ok = true;
  for (const std::string& pass : {std::string("fwd"), std::string("fwd+bwd")}) {
    if (pass == "fwd+bwd" && !bwd) continue;
    const bool both = pass == "fwd+bwd";
    const std::uint64_t b0 = ranks.bytes_sent();
    const double t_all = time_ms(a.iters, [&] { layer(both, CpWork::all); });
    const double bytes = double(ranks.bytes_sent() - b0) / a.iters;
    const double t_comp = time_ms(a.iters, [&] { layer(both, CpWork::compute_only); });
    const double t_comm = time_ms(a.iters, [&] { layer(both, CpWork::comm_only); });
    const double t_base = time_ms(a.iters, [&] { base_fwd(); if (both) base_bwd(); });
    layer(both, CpWork::all);  // the results checked below
    base_fwd();
    if (both) base_bwd();
    CPLAB_CUDA_CHECK(cudaDeviceSynchronize());
    // O, then dQ, dK, dV (the rank's dkv holds dK (n, hk, d) then dV (n, hk, dv)), each on its own scale
    std::vector<std::pair<std::string, Diff>> diffs{{"o", {}}};
    if (both) diffs.insert(diffs.end(), {{"dq", {}}, {"dk", {}}, {"dv", {}}});
    for (int k = 0; k < 64; ++k) {  // sampled global rows
      const std::int64_t g = (S - 1) * k / 63;
      const RankLocal rl = part.owner(g);
      GpuCpRank& x = ranks.rank(rl.rank);
      diffs[0].second.add(row(x.o(), rl.local, h * dv, s.dtype), row(go.data(), g, h * dv, s.dtype));
      if (both) {
        diffs[1].second.add(row(x.dq(), rl.local, h * d, DType::f32), row(gdq.data(), g, h * d, DType::f32));
        diffs[2].second.add(row(x.dkv(), rl.local, hk * d, DType::f32), row(gdk.data(), g, hk * d, DType::f32));
        diffs[3].second.add(row(x.dkv() + sz(n * hk * d), rl.local, hk * dv, DType::f32), row(gdv.data(), g, hk * dv, DType::f32));
      }
    }
    double worst = 0;
    nlohmann::json rel = nlohmann::json::object(), problems = nlohmann::json::object();
    for (const auto& [name, df] : diffs) {
      worst = std::max(worst, df.rel());
      rel[name] = std::isfinite(df.rel()) ? nlohmann::json(df.rel()) : nlohmann::json(nullptr);
      if (!df.why().empty()) problems[name] = df.why();
    }
    const double flops = fwd_flops(c) * (both ? 3.5 : 1.0);
    const double hidden = t_comm > 0 ? std::clamp((t_comp + t_comm - t_all) / t_comm, 0.0, 1.0) : 1.0;
    const double efficiency = t_base / (double(G) * t_all), tflops_gpu = flops / double(G) / (t_all * 1e-3) / 1e12;
    const bool pass_ok = worst <= kTolerance;
    ok = ok && pass_ok;
    std::printf("%-7s %9.3f %13.3f %10.3f %10.3f %12.1f %13.3g %7.0f%% %12.2e %s\n", pass.c_str(), t_all, t_base, efficiency,
                1 / efficiency, tflops_gpu, bytes, 100 * hidden, worst, pass_ok ? "PASS" : "FAIL");
    if (!pass_ok)
      for (const auto& [name, df] : diffs)
        std::printf("        %-2s max rel diff %.2e%s%s\n", name.c_str(), df.rel(), df.why().empty() ? "" : ": ", df.why().c_str());
    out[pass] = {{"cp_ms", t_all}, {"baseline_ms", t_base}, {"efficiency", efficiency}, {"gpu_time_over_baseline", 1 / efficiency},
                 {"compute_only_ms", t_comp}, {"comm_only_ms", t_comm}, {"hidden", hidden}, {"bytes_per_layer", bytes},
                 {"tflops_per_gpu", tflops_gpu}, {"baseline_tflops", flops / (t_base * 1e-3) / 1e12}, {"rel_diff", rel},
                 {"max_rel_diff", std::isfinite(worst) ? nlohmann::json(worst) : nlohmann::json(nullptr)}, {"pass", pass_ok}};
    if (!problems.empty()) out[pass]["check_problems"] = problems;
  }
  OutputSet files;  // --trace and --json, committed together at the end (core/output_file.h)
  if (!a.trace_path.empty()) {  // the planned trace of this run with the measured compute times
    // dtype: the reference's arithmetic (it sizes the planned messages); the GPU's is s.dtype
    const RunSpec rs{.cp = s.cp, .backward = bwd, .dtype = "float"};
    const Trace t = plan_trace(rs);
    layer(bwd, CpWork::all, true);
    // a step with several tiles (all-gather's two zigzag chunks) shares its measured time by FLOPs
    std::map<std::tuple<int, int, int>, double> step_flops;
    for (const cplab::Event& ev : t.events())
      if (ev.kind == EventKind::tile) step_flops[{static_cast<int>(ev.phase), ev.step, ev.rank}] += double(ev.flops);
    Trace measured(static_cast<int>(P));
    measured.meta() = t.meta();
    measured.meta()["measured_on"] = device_summary();
    measured.meta()["measured_backend"] = ranks.describe();
    for (cplab::Event ev : t.events()) {
      if (ev.kind == EventKind::tile) {
        const auto [g, i] = ranks.where(ev.rank);
        const double ms = (ev.phase == Phase::fwd ? tf : tb)[g]->ms(ev.step, i);
        const double total = step_flops[{static_cast<int>(ev.phase), ev.step, ev.rank}];
        ev.dur_us = 1e3 * ms * (total > 0 ? double(ev.flops) / total : 1.0);
      }
      measured.add(ev);
    }
    files.stage(a.trace_path, "--trace", [&](std::ostream& f) { measured.write(f, false); });
  }
  if (!a.json_path.empty()) files.stage(a.json_path, "--json", [&](std::ostream& f) { f << out.dump(2) << "\n"; });
  files.commit();
  if (!a.trace_path.empty())
    std::printf("\ntrace with the measured compute times: %s (cplab-viz --view timeline --trace %s)\n", a.trace_path.c_str(),
                a.trace_path.c_str());
  std::printf("\n%s\n", ok ? "all PASS"
                           : "FAIL: the CP result differs from the one-launch baseline beyond the tolerance, or there was nothing valid to compare");
  return ok ? 0 : 1;
}

}  // namespace cplab::bench
