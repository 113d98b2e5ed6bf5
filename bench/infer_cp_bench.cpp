// infer_cp_bench.cpp: `cplab-bench cp --kv-cache P` (see infer_cp_bench.h).
#include "infer_cp_bench.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>
#include <ostream>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/output_file.h"
#include "core/util.h"
#include "cp_util.h"
#include "device.h"
#include "modes/cp_common.h"  // iota_positions
#include "infer/infer_run.h"  // infer_request_pairs
#include "infer/infer_table.h"
#include "infer_gpu.h"
#include "local_comm.h"
#if CPLAB_HAVE_NCCL
#include "nccl_comm.h"
#endif

namespace cplab::bench {

using namespace cplab::cuda;

namespace {

constexpr double kTolerance = 2e-2;  // as cp_bench.cpp: bf16/fp16, CP vs the one-launch baseline

bool decode(InferMode m) { return m == InferMode::decode_pass_q || m == InferMode::decode_ag; }

GpuInferSpec spec_of(const CpArgs& a) {
  const DType dtype = parse_dtype(a.dtype);
  require(a.kernel == "v2" || a.kernel == "v3", "kernel '" + a.kernel + "' is not one of: v2, v3");
  InferFields f;
  f.mode = parse_infer_mode(a.mode);
  require(a.kv_cache_given, "--mode " + a.mode + " is an inference step: it needs --kv-cache P (the cached tokens, >= 0)");
  f.layout = parse_layout(a.layout);
  f.cache_layout = parse_cache_layout(a.cache_layout);
  f.cp = a.cp;
  f.cached = {a.kv_cache};
  f.fresh = {a.seq >= 0 ? a.seq : (decode(f.mode) ? 1 : 1024)};
  f.heads = a.heads;
  f.kv_heads = a.kv_heads;
  f.head_dim = a.head_dim;
  f.causal = !a.no_causal;
  return GpuInferSpec{InferSpec(f), dtype, a.kernel == "v2" ? Kernel::v2 : Kernel::v3};
}

// the N ranks and how they are driven (as cp_ranks.h: one LocalWorld, or one NcclComm per GPU and thread)
struct InferRanks {
  std::unique_ptr<LocalWorld> world;
#if CPLAB_HAVE_NCCL
  std::vector<std::unique_ptr<NcclComm>> nccl;
#endif
  std::vector<std::unique_ptr<GpuInferRank>> own;

  InferRanks(const GpuInferSpec& s, const std::string& backend) : own(sz(s.spec.N())) {
    const int N = static_cast<int>(s.spec.N());
    if (backend == "local") {
      world = std::make_unique<LocalWorld>(N);
      for (int r = 0; r < N; ++r) own[sz(r)] = std::make_unique<GpuInferRank>(s, world->rank(r));
      return;
    }
#if CPLAB_HAVE_NCCL
    require(device_count() >= N, "--backend nccl --cp " + std::to_string(N) + " needs " + std::to_string(N) +
                                     " GPUs, one per rank (this machine has " + std::to_string(device_count()) +
                                     "); --backend local runs the ranks as virtual ranks on one GPU");
    nccl = NcclComm::init_all(N);
    run_per_rank(nccl, [&](NcclComm& c) {
      c.check_same_config(describe(s));
      own[sz(c.rank())] = std::make_unique<GpuInferRank>(s, c);
    });
#else
    throw Error("--backend nccl: this build has no NCCL (cuda/comm was built without it); use --backend local");
#endif
  }
  ~InferRanks() {
#if CPLAB_HAVE_NCCL
    if (!nccl.empty()) try {
        run_per_rank(nccl, [&](NcclComm& c) { own[sz(c.rank())].reset(); });
      } catch (...) {
      }
#endif
  }
  InferRanks(const InferRanks&) = delete;
  InferRanks& operator=(const InferRanks&) = delete;

  static void sync(GpuInferRank& x) {
    x.comm->synchronize(x.compute.get());
    x.comm->synchronize(x.transfer.get());
  }
  // one forward of every rank; every stream idle on return
  void forward(const GpuInferSpec& s, CpWork w) {
    if (world) {
      std::vector<GpuInferRank*> all;
      for (auto& x : own) all.push_back(x.get());
      gpu_infer_forward(s, all, w);
      world->finish();
      for (auto& x : own) sync(*x);
      return;
    }
#if CPLAB_HAVE_NCCL
    run_per_rank(nccl, [&](NcclComm& c) {
      GpuInferRank& x = *own[sz(c.rank())];
      gpu_infer_forward(s, {&x}, w);
      sync(x);
    });
#endif
  }
  std::uint64_t bytes_sent() const {
    std::uint64_t b = 0;
    for (const auto& x : own) b += x->comm->bytes_sent();
    return b;
  }
  std::int64_t gpus() const { return world ? 1 : static_cast<std::int64_t>(own.size()); }
  std::string describe_ranks() const {
    return world ? std::to_string(own.size()) + " virtual ranks on one GPU (LocalComm)"
                 : std::to_string(own.size()) + " ranks, one GPU each (NcclComm, a thread per rank)";
  }
};

}  // namespace

bool is_infer_run(const CpArgs& a) {
  return a.kv_cache_given || (is_infer_mode(a.mode) && a.mode != "p2p");
}

void check_infer_cp_args(const CpArgs& a) {
  require(a.backend == "local" || a.backend == "nccl", "backend '" + a.backend + "' is not one of: local, nccl");
  require(a.pass == "fwd" || a.pass == "both", "pass '" + a.pass + "' is not one of: fwd, both");
  require(!(a.pass_given && a.pass == "both"), "--pass both: an inference step (--kv-cache) has no backward; --pass fwd");
  require(a.warmup >= 0 && a.iters >= 1, "warmup must be >= 0 and iters >= 1");
  require(a.cp <= 64, "cp " + std::to_string(a.cp) + " is more than the 64 ranks cplab-bench cp runs");
  require(a.hcp.empty(), "--hcp is a2a+p2p's: an inference step (--kv-cache) takes none");
  require(a.cu_seqlens.empty() && !a.pad,
          "--cu-seqlens / --pad: cplab-bench cp runs one inference request (packed requests: cplab run --kv-cache)");
  require(a.trace_path.empty(), "--trace: cplab-bench cp writes no trace for an inference step (cplab run --kv-cache --trace does)");
  const GpuInferSpec s = spec_of(a);
  require(s.dtype != DType::f32, "cplab-bench cp runs kernel " + a.kernel + ": dtype bf16 or fp16");
  s.check();
  if (!a.json_path.empty()) check_writable(a.json_path, "--json");
}

int run_infer_cp(const CpArgs& a) {
  const GpuInferSpec s = spec_of(a);
  const InferSpec& c = s.spec;
  const std::int64_t N = c.N(), T = c.T(), P = c.P_total(), h = c.h(), hk = c.hk(), d = c.d(), dv = c.dv();
  const std::size_t e = dtype_size(s.dtype);
  CPLAB_CUDA_CHECK(cudaSetDevice(0));
  InferRanks ranks(s, a.backend);
  const std::int64_t G = ranks.gpus();
  std::printf("cplab-bench cp: inference step, %s (%s), cp %lld, T = %lld new tokens over a KV cache of P = %lld, new tokens "
              "%s, cache %s, %lld heads, %lld KV heads, head dim %lld, %s, %s, kernel %s\n",
              c.info().name, c.info().title, (long long)N, (long long)T, (long long)P,
              c.info().decode_layout ? "round-robin" : to_string(c.fields().layout).c_str(),
              to_string(c.fields().cache_layout).c_str(), (long long)h, (long long)hk, (long long)d,
              c.fields().causal ? "causal with the offset P" : "not causal", a.dtype.c_str(), a.kernel.c_str());
  std::printf("ranks: %s\nGPU 0: %s\nbaseline: the same attention (%lld queries x %lld keys, bottom-right causal) as one kernel\n"
              "launch on GPU 0. G = %lld GPU(s). efficiency = baseline ms / (G x CP ms). FLOPs: 4 h d per visible (query, key)\n"
              "pair (FlashAttention's convention, the pairs counted exactly); forward only. max rel diff: O, max|CP - baseline|\n"
              "/ max|baseline| on 64 sampled rows (PASS <= %.0e).\n",
              ranks.describe_ranks().c_str(), device_summary().c_str(), (long long)T, (long long)(P + T), (long long)G,
              kTolerance);
  // the index-hashed inputs (inputs.h): q by query row, k and v by KV row, in each rank's order
  const auto f0 = std::chrono::steady_clock::now();
  std::uint64_t filled = 0;
  std::vector<std::pair<std::int64_t, std::int64_t>> where(sz(T));  // query row -> (rank, local row)
  for (std::int64_t r = 0; r < N; ++r) {
    GpuInferRank& x = *ranks.own[sz(r)];
    const std::vector<index_t>& qr = c.q_rows(r);
    const std::vector<index_t>& kr = c.kv_rows(r);
    if (!qr.empty()) filled += fill(x.q.data(), Input::q, qr, h * d, s.dtype);
    filled += fill(x.kv.data(), Input::k, kr, hk * d, s.dtype);
    filled += fill(x.kv.data() + sz(c.Mkv() * hk * d) * e, Input::v, kr, hk * dv, s.dtype);
    for (std::size_t i = 0; i < qr.size(); ++i) where[sz(qr[i])] = {r, static_cast<std::int64_t>(i)};
  }
  CPLAB_CUDA_CHECK(cudaSetDevice(0));
  const std::vector<index_t> qo = iota_positions(0, T), ko = iota_positions(0, P + T);
  DeviceBuffer<std::byte> gq(sz(T * h * d) * e), gk(sz((P + T) * hk * d) * e), gv(sz((P + T) * hk * dv) * e),
      go(sz(T * h * dv) * e);
  DeviceBuffer<float> glse(sz(h * T));
  filled += fill(gq.data(), Input::q, qo, h * d, s.dtype);
  filled += fill(gk.data(), Input::k, ko, hk * d, s.dtype);
  filled += fill(gv.data(), Input::v, ko, hk * dv, s.dtype);
  const double fill_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - f0).count();
  std::printf("inputs: %.3g elements (every rank's and the baseline's) filled in %.2f s\n\n", double(filled), fill_s);
  const DeviceMask dmask(c.fields().causal ? Mask::causal(P) : Mask::none(), T);
  auto base = [&] {
    attention_forward(s.kernel, s.dtype, AttnDims{T, P + T, h, hk, d, dv}, gq.data(), gk.data(), gv.data(), dmask.rule(),
                      s.kernel_scale(), go.data(), glse.data(), nullptr);
  };
  for (int i = 0; i < a.warmup; ++i) {
    ranks.forward(s, CpWork::all);
    base();
  }
  const std::uint64_t b0 = ranks.bytes_sent();
  const double t_all = time_ms(a.iters, [&] { ranks.forward(s, CpWork::all); });
  const double bytes = double(ranks.bytes_sent() - b0) / a.iters;
  const double t_comp = time_ms(a.iters, [&] { ranks.forward(s, CpWork::compute_only); });
  const double t_comm = time_ms(a.iters, [&] { ranks.forward(s, CpWork::comm_only); });
  const double t_base = time_ms(a.iters, base);
  ranks.forward(s, CpWork::all);  // the results checked below
  base();
  CPLAB_CUDA_CHECK(cudaDeviceSynchronize());
  Diff diff;
  for (int k = 0; k < 64; ++k) {  // sampled query rows
    const std::int64_t g = (T - 1) * k / 63;
    const auto [r, l] = where[sz(g)];
    diff.add(row(ranks.own[sz(r)]->o.data(), l, h * dv, s.dtype), row(go.data(), g, h * dv, s.dtype));
  }
  const double pairs = double(infer_request_pairs(c, 0)), flops = 4.0 * pairs * double(h) * double(d);
  const double hidden = t_comm > 0 ? std::clamp((t_comp + t_comm - t_all) / t_comm, 0.0, 1.0) : 1.0;
  const double efficiency = t_base / (double(G) * t_all), tflops_gpu = flops / double(G) / (t_all * 1e-3) / 1e12;
  const bool ok = diff.rel() <= kTolerance;
  std::printf("%-7s %9s %13s %10s %10s %12s %13s %8s %12s\n", "pass", "CP ms", "baseline ms", "efficiency", "G*CP/base",
              "TFLOP/s/GPU", "bytes/step", "hidden", "max rel diff");
  std::printf("%-7s %9.3f %13.3f %10.3f %10.3f %12.1f %13.3g %7.0f%% %12.2e %s\n", "fwd", t_all, t_base, efficiency,
              1 / efficiency, tflops_gpu, bytes, 100 * hidden, diff.rel(), ok ? "PASS" : "FAIL");
  if (!diff.why().empty()) std::printf("        o: %s\n", diff.why().c_str());
  nlohmann::json out{{"gpu", device_summary()}, {"ranks", ranks.describe_ranks()}, {"inference", true},
                     {"mode", c.info().name}, {"title", c.info().title}, {"layout", to_string(c.fields().layout)},
                     {"cache_layout", to_string(c.fields().cache_layout)}, {"cp", N}, {"kv_cache", P}, {"seq", T},
                     {"heads", h}, {"kv_heads", hk}, {"head_dim", d}, {"causal", c.fields().causal}, {"dtype", a.dtype},
                     {"kernel", a.kernel}, {"backend", a.backend}, {"gpus", G}, {"fill_s", fill_s},
                     {"fwd", {{"cp_ms", t_all}, {"baseline_ms", t_base}, {"efficiency", efficiency},
                              {"gpu_time_over_baseline", 1 / efficiency}, {"compute_only_ms", t_comp},
                              {"comm_only_ms", t_comm}, {"hidden", hidden}, {"bytes_per_step", bytes},
                              {"tflops_per_gpu", tflops_gpu}, {"baseline_tflops", flops / (t_base * 1e-3) / 1e12},
                              {"max_rel_diff", std::isfinite(diff.rel()) ? nlohmann::json(diff.rel()) : nlohmann::json(nullptr)},
                              {"pass", ok}}}};
  OutputSet files;
  if (!a.json_path.empty()) files.stage(a.json_path, "--json", [&](std::ostream& f) { f << out.dump(2) << "\n"; });
  files.commit();
  std::printf("\n%s\n", ok ? "all PASS" : "FAIL: the CP result differs from the one-launch baseline beyond the tolerance");
  return ok ? 0 : 1;
}

}  // namespace cplab::bench
