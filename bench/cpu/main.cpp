// main.cpp: `cplab-cpu-bench`, the CPU reference's speed against this machine's GEMM speed, measured
// in the same run (a table and JSON; issue 25).
//
// What it is: for each dtype and CP mode (the sizes of `cplab run --mode p2p --cp 8 --seq 8192
// --heads 8 --kv-heads 2 --head-dim 64 --causal --layout zigzag --backward` by default), the CP part
// timed forward and backward (cpu_bench.h time_mode), each row between two measurements of the GEMM
// peak (the same gemm.h product, square, all threads). A busy machine lowers any one measurement, so
// every ratio is against the best peak of its dtype measured anywhere in the run (the 1- and
// all-thread peaks come first; the table is printed once every row is measured). Then
// every mode is run once more at --check-seq against dense attention (max error over O, LSE, dQ, dK,
// dV; tolerance 1e-10 double, 1e-4 float). Then the inference rows (issue 37; infer_bench.h): each
// --infer-modes variant (default pass-KV `p2p` and `pass-q`) for T = --infer-seq new tokens over a
// cache of P = --kv-cache tokens (default 1024 over 32768, as `cplab run --kv-cache 32768 --seq 1024`),
// forward only, on the same ranks, heads and dims, each between two GEMM peaks and beside the best
// peak of the run, and checked against dense attention with the offset at --check-kv-cache /
// --check-infer-seq (max error over O and LSE, the same tolerances). Exit: 0 every check within tolerance, 1 one is not, 2 bad
// input (the rule named, as cplab's: "cplab-cpu-bench: error: ...").
// What it is not: a test (ctest runs it only tiny, for its exit status and output), or a GPU benchmark
// (cplab-bench).
#include <omp.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <algorithm>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "cli_common.h"  // app/: strict numbers, error messages, exit 2
#include "core/error.h"
#include "core/runtime_env.h"
#include "cpu_bench.h"
#include "cpu_machine.h"
#include "infer/infer_table.h"
#include "infer_bench.h"
#include "modes/mode_table.h"
#include "run/experiment.h"

namespace {

using namespace cplab;
using namespace cplab::cpubench;

struct Args {
  std::string modes = "p2p,allgather,a2a,a2a+p2p", dtypes = "double,float", layout = "zigzag", hcp = "2,4";
  index_t cp = 8, seq = 8192, heads = 8, kv_heads = 2, head_dim = 64;
  bool no_causal = false;
  int reps = 2, peak_reps = 3;
  index_t peak_size = 2048, check_seq = 512;
  std::string infer_modes = "p2p,pass-q";  // empty: no inference rows
  index_t kv_cache = 32768, infer_seq = 1024, check_kv_cache = 1000, check_infer_seq = 333;
  std::string json;
};

std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream in(s);
  for (std::string w; std::getline(in, w, ',');) out.push_back(w);
  return out;
}

// the CpSpec of one mode at seq tokens; a2a modes repeat KV heads when they do not divide the group
CpSpec mode_spec(const Args& a, const std::string& mode, index_t seq) {
  CpFields f;
  f.mode = parse_mode(mode);
  f.layout = parse_layout(a.layout);
  f.cp = a.cp, f.seq = seq, f.heads = a.heads, f.kv_heads = a.kv_heads, f.head_dim = a.head_dim;
  f.causal = !a.no_causal;
  if (f.mode == Mode::a2a_p2p) parse_hcp(a.hcp, f);
  const index_t group = f.mode == Mode::a2a ? f.cp : f.mode == Mode::a2a_p2p ? f.icp : 1;
  f.replicate_kv = group > 1 && f.kv_heads % group != 0;
  return CpSpec(f);
}

std::string label(const CpSpec& s) {
  std::string m = to_string(s.mode());
  if (s.mode() == Mode::a2a_p2p) m += " " + std::to_string(s.icp()) + "x" + std::to_string(s.ocp());
  if (s.replicate_kv()) m += " (kv x" + std::to_string(s.kv_replication()) + ")";
  return m;
}

// the InferSpec of one inference variant: T new tokens over a cache of P (one request), the cache
// and the new tokens split by --layout's zigzag rule (the decode variants place them round-robin)
InferSpec infer_spec(const Args& a, const std::string& mode, index_t P, index_t T) {
  InferFields f;
  f.mode = parse_infer_mode(mode);
  f.layout = parse_layout(a.layout);
  f.cp = a.cp, f.heads = a.heads, f.kv_heads = a.kv_heads, f.head_dim = a.head_dim;
  f.cached = {P};
  f.fresh = {T};
  f.causal = !a.no_causal;
  return InferSpec(f);
}

std::string infer_label(const InferSpec& s) {
  return s.mode() == InferMode::pass_kv ? "pass-KV (p2p)" : s.mode() == InferMode::pass_q ? "pass-Q" : to_string(s.mode());
}

template <class T>
double peak(const Args& a, int threads) {
  return gemm_peak<T>(a.peak_size, threads, a.peak_reps);
}

int run(const Args& a) {
  for (const std::string& d : split(a.dtypes))
    require(d == "double" || d == "float", "--dtype '" + d + "' must be double or float (comma-separated)");
  require(a.reps >= 1 && a.peak_reps >= 1, "--reps and --peak-reps must be >= 1");
  require(a.peak_size >= 64 && a.peak_size <= 8192, "--peak-size must be in [64, 8192]");
  std::vector<std::string> modes = split(a.modes);
  for (const std::string& m : modes) mode_spec(a, m, a.seq), mode_spec(a, m, a.check_seq);  // every rule first
  const std::vector<std::string> imodes = split(a.infer_modes);
  for (const std::string& m : imodes)
    infer_spec(a, m, a.kv_cache, a.infer_seq), infer_spec(a, m, a.check_kv_cache, a.check_infer_seq);

  const Machine mc = this_machine();
  const int threads = mc.omp_threads;
  std::printf("cplab-cpu-bench: the CPU reference's CP part against this machine's GEMM peak, same run\n");
  std::printf("machine: %s, %d logical CPUs (%s); this build's own code: %s; %d OpenMP threads\n", mc.cpu.c_str(),
              mc.logical_cpus, mc.cpu_simd.c_str(), mc.build_simd.c_str(), threads);
  std::printf("products: %s\n", mc.gemm.c_str());
  std::printf("FLOPs (core/flops.h): useful FLOPs of the whole attention, forward 2*pairs*h*(d+dv), backward\n"
              "2*pairs*h*(3d+2dv), pairs = visible (query, key) pairs (causal: S(S+1)/2); exponentials not counted.\n"
              "time: the CP part as `cplab run` times it (all ranks, one after another), best of %d; peak: a %lld^3 GEMM,\n"
              "best of %d, measured first and before and after each row; every ratio is against the best peak of\n"
              "its dtype in the run (a busy machine lowers a measurement, never raises it).\n\n",
              a.reps, static_cast<long long>(a.peak_size), a.peak_reps);

  nlohmann::json j = {{"machine", {{"cpu", mc.cpu}, {"logical_cpus", mc.logical_cpus}, {"cpu_simd", mc.cpu_simd},
                                   {"build_simd", mc.build_simd}, {"gemm", mc.gemm}, {"omp_threads", threads}}},
                      {"flops", "core/flops.h: fwd 2*pairs*h*(d+dv), bwd 2*pairs*h*(3d+2dv)"},
                      {"peak_size", a.peak_size}, {"reps", a.reps}, {"rows", nlohmann::json::array()}};
  for (const std::string& dt : split(a.dtypes)) {
    const bool dbl = dt == "double";
    const double p1 = dbl ? peak<double>(a, 1) : peak<float>(a, 1);
    const double pn = dbl ? peak<double>(a, threads) : peak<float>(a, threads);
    std::printf("%s GEMM peak: 1 thread %.1f GFLOP/s, %d threads %.1f GFLOP/s\n", dt.c_str(), p1, threads, pn);
    j["peak"][dt] = {{"threads_1", p1}, {"threads_all", pn}};
  }
  struct Row {
    std::string label, dtype;
    ModeTime t;
    double before, after;
  };
  std::vector<Row> rows;
  std::map<std::string, double> best;  // the best all-thread peak of each dtype in the run
  for (const std::string& dt : split(a.dtypes)) best[dt] = j["peak"][dt]["threads_all"].get<double>();
  for (const std::string& dt : split(a.dtypes))
    for (const std::string& m : modes) {
      const CpSpec spec = mode_spec(a, m, a.seq);
      const bool dbl = dt == "double";
      std::fprintf(stderr, "measuring %s %s ...\n", label(spec).c_str(), dt.c_str());
      const double before = dbl ? peak<double>(a, threads) : peak<float>(a, threads);
      const ModeTime t = dbl ? time_mode<double>(spec, a.reps) : time_mode<float>(spec, a.reps);
      const double after = dbl ? peak<double>(a, threads) : peak<float>(a, threads);
      best[dt] = std::max({best[dt], before, after});
      rows.push_back({label(spec), dt, t, before, after});
    }
  std::printf("\n%-22s %-6s %8s %8s %8s %8s %8s %8s %6s %6s %6s\n", "mode", "dtype", "fwd s", "fwd GF/s", "bwd s",
              "bwd GF/s", "all GF/s", "peak", "fwd/pk", "bwd/pk", "all/pk");
  for (const Row& r : rows) {
    const ModeTime& t = r.t;
    const double pk = best[r.dtype], gf = (t.fwd_flops / t.fwd_s) / 1e9, gb = (t.bwd_flops / t.bwd_s) / 1e9;
    const double ga = (t.fwd_flops + t.bwd_flops) / (t.fwd_s + t.bwd_s) / 1e9;
    std::printf("%-22s %-6s %8.3f %8.1f %8.3f %8.1f %8.1f %8.1f %5.0f%% %5.0f%% %5.0f%%\n", r.label.c_str(),
                r.dtype.c_str(), t.fwd_s, gf, t.bwd_s, gb, ga, pk, 100 * gf / pk, 100 * gb / pk, 100 * ga / pk);
    j["rows"].push_back({{"mode", r.label}, {"layout", a.layout}, {"dtype", r.dtype}, {"cp", a.cp}, {"seq", a.seq},
                         {"heads", a.heads}, {"kv_heads", a.kv_heads}, {"head_dim", a.head_dim},
                         {"causal", !a.no_causal}, {"fwd_s", t.fwd_s}, {"bwd_s", t.bwd_s},
                         {"fwd_flops", t.fwd_flops}, {"bwd_flops", t.bwd_flops}, {"fwd_gflops", gf},
                         {"bwd_gflops", gb}, {"all_gflops", ga}, {"peak_before", r.before}, {"peak_after", r.after},
                         {"peak_best", pk}, {"ratio_fwd", gf / pk}, {"ratio_bwd", gb / pk}, {"ratio_all", ga / pk}});
  }
  for (const auto& [dt, pk] : best) j["peak"][dt]["best_all_threads"] = pk;
  std::printf("peak: the best %s-thread GEMM peak of the dtype in this run (", std::to_string(threads).c_str());
  for (const auto& [dt, pk] : best) std::printf("%s %.1f%s", dt.c_str(), pk, dt == best.rbegin()->first ? "" : ", ");
  std::printf(" GFLOP/s)\n");
  std::fflush(stdout);

  struct IRow {
    std::string label, dtype;
    InferTime t;
    double before, after;
  };
  std::vector<IRow> irows;
  for (const std::string& dt : split(a.dtypes))
    for (const std::string& m : imodes) {
      const InferSpec spec = infer_spec(a, m, a.kv_cache, a.infer_seq);
      const bool dbl = dt == "double";
      std::fprintf(stderr, "measuring inference %s %s ...\n", infer_label(spec).c_str(), dt.c_str());
      const double before = dbl ? peak<double>(a, threads) : peak<float>(a, threads);
      const InferTime t = dbl ? time_infer<double>(spec, a.reps) : time_infer<float>(spec, a.reps);
      const double after = dbl ? peak<double>(a, threads) : peak<float>(a, threads);
      best[dt] = std::max({best[dt], before, after});
      irows.push_back({infer_label(spec), dt, t, before, after});
    }
  if (!irows.empty()) {
    std::printf("\ninference (issue 37): T = %lld new tokens over a KV cache of P = %lld, forward only, cp %lld; the\n"
                "same FLOP count over the visible pairs of the causal-with-offset T x (P+T) rectangle\n",
                static_cast<long long>(a.infer_seq), static_cast<long long>(a.kv_cache), static_cast<long long>(a.cp));
    std::printf("%-22s %-6s %8s %8s %8s %6s\n", "variant", "dtype", "fwd s", "fwd GF/s", "peak", "fwd/pk");
  }
  for (const IRow& r : irows) {
    const double pk = best[r.dtype], gf = (r.t.fwd_flops / r.t.fwd_s) / 1e9;
    std::printf("%-22s %-6s %8.3f %8.1f %8.1f %5.0f%%\n", r.label.c_str(), r.dtype.c_str(), r.t.fwd_s, gf, pk,
                100 * gf / pk);
    j["infer_rows"].push_back({{"variant", r.label}, {"layout", a.layout}, {"dtype", r.dtype}, {"cp", a.cp},
                               {"kv_cache", a.kv_cache}, {"seq", a.infer_seq}, {"heads", a.heads},
                               {"kv_heads", a.kv_heads}, {"head_dim", a.head_dim}, {"causal", !a.no_causal},
                               {"fwd_s", r.t.fwd_s}, {"fwd_flops", r.t.fwd_flops}, {"fwd_gflops", gf},
                               {"peak_before", r.before}, {"peak_after", r.after}, {"peak_best", pk},
                               {"ratio_fwd", gf / pk}});
  }
  if (!irows.empty()) {
    for (const auto& [dt, pk] : best) j["peak"][dt]["best_all_threads"] = pk;
    std::fflush(stdout);
  }

  std::printf("\ncheck against dense attention at seq %lld, on the fast kernel route the timings run (max error over O, LSE,\n"
              "dQ, dK, dV):\n",
              static_cast<long long>(a.check_seq));
  bool ok = true;
  for (const std::string& dt : split(a.dtypes))
    for (const std::string& m : modes) {
      const CpSpec spec = mode_spec(a, m, a.check_seq);
      const double err = check_mode(spec, dt), tol = run_tolerance(dt);
      const bool pass = err <= tol;
      ok = ok && pass;
      std::printf("  %-22s %-6s %.2e  (tolerance %.0e)  %s\n", label(spec).c_str(), dt.c_str(), err, tol,
                  pass ? "ok" : "FAIL");
      j["checks"].push_back({{"mode", label(spec)}, {"dtype", dt}, {"seq", a.check_seq}, {"max_error", err},
                             {"tolerance", tol}, {"pass", pass}});
    }
  if (!imodes.empty())
    std::printf("inference, against dense attention with the offset at P = %lld, T = %lld (max error over O, LSE):\n",
                static_cast<long long>(a.check_kv_cache), static_cast<long long>(a.check_infer_seq));
  for (const std::string& dt : split(a.dtypes))
    for (const std::string& m : imodes) {
      const InferSpec spec = infer_spec(a, m, a.check_kv_cache, a.check_infer_seq);
      const double err = check_infer(spec, dt), tol = run_tolerance(dt);
      const bool pass = err <= tol;
      ok = ok && pass;
      std::printf("  %-22s %-6s %.2e  (tolerance %.0e)  %s\n", infer_label(spec).c_str(), dt.c_str(), err, tol,
                  pass ? "ok" : "FAIL");
      j["infer_checks"].push_back({{"variant", infer_label(spec)}, {"dtype", dt}, {"kv_cache", a.check_kv_cache},
                                   {"seq", a.check_infer_seq}, {"max_error", err}, {"tolerance", tol},
                                   {"pass", pass}});
    }
  if (!a.json.empty()) {
    std::ofstream out(a.json);
    require(static_cast<bool>(out), "--json: cannot write '" + a.json + "'");
    out << j.dump(2) << "\n";
    require(static_cast<bool>(out), "--json: writing '" + a.json + "' failed");
  }
  return ok ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  cplab::prepare_runtime(argv);  // OpenMP and OpenBLAS settings, read at load time (core/runtime_env.h)
  CLI::App app{"cplab-cpu-bench: the CPU reference's GFLOP/s per CP mode beside this machine's GEMM peak, "
               "measured in the same run", "cplab-cpu-bench"};
  Args a;
  app.add_option("--modes", a.modes, "CP modes, comma-separated")->capture_default_str();
  app.add_option("--dtype", a.dtypes, "double, float or both, comma-separated")->capture_default_str();
  app.add_option("--layout", a.layout, "contiguous | zigzag | striped")->capture_default_str();
  app.add_option("--cp", a.cp, "simulated ranks")->capture_default_str();
  app.add_option("--hcp", a.hcp, "a2a+p2p: ICP,OCP")->capture_default_str();
  app.add_option("--seq", a.seq, "tokens of the timed runs")->capture_default_str();
  app.add_option("--heads", a.heads, "query heads")->capture_default_str();
  app.add_option("--kv-heads", a.kv_heads, "KV heads")->capture_default_str();
  app.add_option("--head-dim", a.head_dim, "head dim (= v head dim)")->capture_default_str();
  app.add_flag("--no-causal", a.no_causal, "full attention instead of causal");
  app.add_option("--reps", a.reps, "timed repetitions of each row (the best is kept)")->capture_default_str();
  app.add_option("--peak-size", a.peak_size, "GEMM peak: square size")->capture_default_str();
  app.add_option("--peak-reps", a.peak_reps, "GEMM peak: timed calls (the best is kept)")->capture_default_str();
  app.add_option("--check-seq", a.check_seq, "tokens of the runs checked against dense attention")
      ->capture_default_str();
  app.add_option("--infer-modes", a.infer_modes, "inference variants, comma-separated (p2p = pass-KV, pass-q, "
                 "decode-pass-q, decode-ag; empty: none)")->capture_default_str();
  app.add_option("--kv-cache", a.kv_cache, "inference rows: cached tokens P")->capture_default_str();
  app.add_option("--infer-seq", a.infer_seq, "inference rows: new tokens T")->capture_default_str();
  app.add_option("--check-kv-cache", a.check_kv_cache, "inference checks against dense attention: P")
      ->capture_default_str();
  app.add_option("--check-infer-seq", a.check_infer_seq, "inference checks against dense attention: T")
      ->capture_default_str();
  app.add_option("--json", a.json, "also write every figure as JSON to this file");
  cplab::app::strict_numbers(app);
  int status = 0;
  return cplab::app::cli_main("cplab-cpu-bench", app, argc, argv, [&] {
    app.parse(argc, argv);
    status = run(a);
    return status;
  });
}
