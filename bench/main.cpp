// main.cpp: `cplab-bench`, benchmarks of cplab's CUDA kernels that print a table (in the style of
// nccl-tests and llm.c). One benchmark so far: `cplab-bench attention`.
//
// What it is: argument parsing (CLI11), the order "check every argument, then look for a GPU, then
// run", and the exit statuses: 0 every row PASS; 1 a check FAILed or a run error; 2 bad input,
// with a message naming the rule (decided before any CUDA call, so also on CPU-only machines);
// 77 no usable CUDA device ("cplab-bench: skipped: no CUDA device (<reason>)"; ctest: Skipped).
// What it is not: a timed test (ctest only runs it tiny), or the benchmark (attention_bench.cpp).
#include <CLI/CLI.hpp>
#include <cstdio>
#include <exception>
#include <iostream>
#include <new>

#include "attention.h"  // cuda/: check_supported
#include "attention_bench.h"
#include "attention_config.h"
#include "cli_common.h"  // app/: strict numbers, parse-error messages
#include "core/runtime_env.h"  // reference/
#include "cp_bench.h"
#include "device.h"  // cuda/
#include "core/error.h"
#include "modes/mode_table.h"  // mode_names
#include "infer/infer_table.h"  // infer_mode_names

namespace {

void add_attention_options(CLI::App& cmd, cplab::bench::AttentionArgs& a) {
  cmd.add_option("--dtype", a.dtype, "input dtype: bf16 | fp16")->capture_default_str();
  cmd.add_option("--head-dim", a.head_dim, "head dims, comma-separated (kernel v2: 64 and/or 128; v1: up to 128)")->capture_default_str();
  cmd.add_option("--seq", a.seq, "sequence lengths, comma-separated, each a multiple of 64")->capture_default_str();
  cmd.add_option("--causal", a.causal, "both | yes | no")->capture_default_str();
  cmd.add_option("--kernel", a.kernel, "v2 (mma.sync) | v3 (wgmma + TMA forward, v2 backward; H100/H200) | v1 (scalar)")->capture_default_str();
  cmd.add_option("--pass", a.pass, "fwd | bwd | both")->capture_default_str();
  cmd.add_option("--tokens", a.tokens, "tokens per shape: b = tokens / seq sequences (1 if seq > tokens)")
      ->capture_default_str();
  cmd.add_option("--hidden", a.hidden, "h * d: query heads = hidden / head dim (unless --heads)")->capture_default_str();
  cmd.add_option("--heads", a.heads, "query heads for every head dim (overrides --hidden)");
  cmd.add_option("--kv-heads", a.kv_heads, "KV heads (GQA; default: = heads)");
  cmd.add_option("--warmup", a.warmup, "untimed iterations before timing")->capture_default_str();
  cmd.add_option("--iters", a.iters, "timed iterations")->capture_default_str();
  CLI::Option* base = cmd.add_option("--baseline", a.baseline,
                                     "baseline command, one quoted string (default: python3 <source>/bench/sdpa_baseline.py)");
  CLI::Option* none = cmd.add_flag("--no-baseline", a.no_baseline, "skip the PyTorch SDPA baseline");
  base->excludes(none);
  CLI::Option* yard = cmd.add_option("--sdpa-error", a.sdpa_error,
                                     "accuracy yardstick command, one quoted string (default: python3 "
                                     "<source>/bench/sdpa_error.py)");
  CLI::Option* no_yard = cmd.add_flag("--no-sdpa-error", a.no_sdpa_error,
                                      "skip the yardstick (SDPA's own error against the same reference)");
  yard->excludes(no_yard);
  cmd.add_option("--keep-io", a.keep_io, "keep the yardstick's .npy inputs and SDPA outputs in this directory");
  cmd.add_option("--json", a.json_path, "also write every row as JSON to this file");
}

void add_cp_options(CLI::App& cmd, cplab::bench::CpArgs& a) {
  cmd.add_option("--mode", a.mode, "CP mode: one of " + cplab::mode_names() + "; an inference step (--kv-cache): one of " +
                                       cplab::infer_mode_names())->capture_default_str();
  cmd.add_option("--cp", a.cp, "CP ranks")->capture_default_str();
  cmd.add_option("--hcp", a.hcp, "a2a+p2p: ICP,OCP (inner all-to-all size x outer ring size = cp)");
  cmd.add_option("--cu-seqlens", a.cu_seqlens, "packed sequences (THD): cumulative lengths 0,a,b,...");
  cmd.add_flag("--pad", a.pad, "pad every packed sequence to the layout's factor");
  cmd.add_option("--seq", a.seq, "global tokens (default 65536; with --cu-seqlens the packed total)");
  cmd.add_option("--heads", a.heads, "query heads")->capture_default_str();
  cmd.add_option("--kv-heads", a.kv_heads, "KV heads")->capture_default_str();
  cmd.add_option("--head-dim", a.head_dim, "head dim (64 or 128)")->capture_default_str();
  cmd.add_option("--layout", a.layout, "zigzag | striped | contiguous")->capture_default_str();
  cmd.add_flag("--no-causal", a.no_causal, "full attention instead of causal");
  cmd.add_option("--dtype", a.dtype, "bf16 | fp16")->capture_default_str();
  cmd.add_option("--kernel", a.kernel, "v2 (mma.sync) | v3 (wgmma + TMA forward, v2 backward; H100/H200), also for the baseline")
      ->capture_default_str();
  cmd.add_option("--backend", a.backend, "local (virtual ranks on one GPU) | nccl (one GPU per rank)")->capture_default_str();
  cmd.add_option("--pass", a.pass, "fwd | both (forward + backward)")->capture_default_str();
  cmd.add_option("--warmup", a.warmup, "untimed iterations")->capture_default_str();
  cmd.add_option("--iters", a.iters, "timed iterations")->capture_default_str();
  cmd.add_option("--json", a.json_path, "also write the results as JSON to this file");
  cmd.add_option("--trace", a.trace_path, "write the run's trace with the measured tile times (cplab-viz --view timeline --trace)");
  cmd.add_option("--kv-cache", a.kv_cache, "an inference step (issue 37): P cached tokens; --seq is then the T new tokens "
                 "(default 1024, decode 1) and --mode p2p (pass-KV), pass-q, decode-pass-q or decode-ag");
  cmd.add_option("--cache-layout", a.cache_layout, "inference: zigzag | interleaved")->capture_default_str();
}

}  // namespace

int main(int argc, char** argv) {
  cplab::prepare_runtime(argv);  // OpenMP and OpenBLAS settings for the CPU checks (core/runtime_env.h)
  CLI::App app{
      "cplab-bench: benchmarks of cplab's CUDA kernels; each prints a table and checks its results.\n"
      "Exit status: 0 all PASS, 1 a FAIL or run error, 2 bad input, 77 no CUDA device (skipped).\n"
      "Example:\n"
      "  cplab-bench attention --head-dim 128 --seq 4096,16384 --causal no --json out.json\n",
      "cplab-bench"};
  app.require_subcommand(1);
  app.option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);  // a repeated option: the last wins
  cplab::bench::AttentionArgs args;
  CLI::App* attention = app.add_subcommand(
      "attention",
      "cplab's attention kernels vs PyTorch SDPA (flash, cuDNN) in the FA2/FA3 setup: tokens = b*s = 16K, "
      "hidden = h*d = 2048, d = 64 and 128, s = 1K..32K, causal and not; ms, TFLOP/s, errors vs the CPU reference");
  add_attention_options(*attention, args);
  cplab::bench::CpArgs cp_args;
  CLI::App* cp = app.add_subcommand(
      "cp", "one context-parallel attention layer on GPU ranks (any mode; virtual ranks of one GPU or NCCL) against the same\n"
            "attention as one kernel launch: ms, efficiency and TFLOP/s per GPU, bytes moved, communication hidden, checked");
  add_cp_options(*cp, cp_args);
  cplab::app::strict_numbers(app);  // no clamped integers, no inf (app/cli_common.h)
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::cerr << "cplab-bench: error: " << cplab::app::parse_error_text(app, e, argc, argv) << "\n";
    return 2;
  }

  if (cp->parsed()) {
    cp_args.pass_given = cp->get_option("--pass")->count() > 0;
    cp_args.kv_cache_given = cp->get_option("--kv-cache")->count() > 0;
    try {
      cplab::bench::check_cp_args(cp_args);
      if (const auto rc = cplab::cuda::no_device_exit("cplab-bench: ")) return *rc;
      cplab::cuda::check_device_supports(cp_args.kernel == "v3" ? cplab::cuda::Kernel::v3 : cplab::cuda::Kernel::v2);
      return cplab::bench::run_cp(cp_args);
    } catch (const cplab::Error& e) {
      std::cerr << "cplab-bench: error: " << e.what() << "\n";
      return 2;
    } catch (const std::exception& e) {
      std::cerr << "cplab-bench: error: " << e.what() << "\n";
      return 1;
    } catch (...) {
      std::cerr << "cplab-bench: error: an unknown exception ended the run\n";
      return 1;
    }
  }
  try {
    const cplab::bench::AttentionPlan plan = cplab::bench::make_plan(args);
    for (const cplab::bench::Shape& x : plan.shapes) {  // the kernels' own rules, still no CUDA call
      cplab::cuda::AttnDims dims;
      dims.sq = dims.sk = x.s;
      dims.h = x.h;
      dims.hk = x.hk;
      dims.d = dims.dv = x.d;
      cplab::cuda::check_supported(static_cast<cplab::cuda::Kernel>(plan.kernel), plan.dtype, dims);
    }
    if (const auto rc = cplab::cuda::no_device_exit("cplab-bench: ")) return *rc;
    cplab::cuda::check_device_supports(static_cast<cplab::cuda::Kernel>(plan.kernel));
    return cplab::bench::run_attention(plan);
  } catch (const cplab::Error& e) {
    std::cerr << "cplab-bench: error: " << e.what() << "\n";
    return 2;
  } catch (const std::bad_alloc&) {
    std::cerr << "cplab-bench: error: out of host memory\n";
    return 1;
  } catch (const std::exception& e) {
    std::cerr << "cplab-bench: error: " << e.what() << "\n";
    return 1;
  } catch (...) {
    std::cerr << "cplab-bench: error: an unknown exception ended the run\n";
    return 1;
  }
}
