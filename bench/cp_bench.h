// cp_bench.h: `cplab-bench cp`: one context-parallel attention layer on GPU ranks, timed and checked.
//
// What it is: the arguments, their checks (before any CUDA call: the CP layer's rules when its
// CpSpec is built, reference/modes/cp_spec.h, then the GPU's, GpuCpSpec::check) and the run: any
// mode (p2p, allgather, a2a, a2a+p2p; packed sequences with --cu-seqlens) on P ranks, virtual
// ranks on this GPU (--backend local) or one GPU per rank (--backend nccl), against the baseline
// of the same attention as one kernel launch on one GPU, forward (and backward): ms per layer;
// with G the GPUs the ranks run on (1 for local, P for nccl), efficiency = baseline time /
// (G x CP time) and its inverse G*CP/base, TFLOP/s per GPU (FLOPs / G / CP time); bytes moved, the
// fraction of communication hidden behind compute, and the CP result (O, dQ, dK, dV) checked
// against the baseline on sampled rows; a table, optional JSON, and the measured compute times as
// a cplab trace for cplab-viz's timeline.
// With --kv-cache (or an inference --mode) the run is an inference step instead: infer_cp_bench.h.
// What it is not: the kernel benchmark (cplab-bench attention), or a multi-node run (mpirun:
// cplab-comm-check --backend mpi).
#pragma once

#include <cstdint>
#include <string>

namespace cplab::bench {

struct CpArgs {
  // as given on the command line; mode and layout are parsed once, into the run's CpSpec
  std::string mode = "p2p", layout = "zigzag", dtype = "bf16", backend = "local", pass = "both", kernel = "v2";
  std::string hcp, cu_seqlens;  // "ICP,OCP" for a2a+p2p; packed sequences "0,a,b,..."
  bool pad = false;
  std::int64_t cp = 8, seq = -1, heads = 32, kv_heads = 8, head_dim = 128;  // seq -1: 65536 or the packed total
  bool no_causal = false;
  int warmup = 2, iters = 5;
  std::string json_path, trace_path;
  // an inference step (issue 37; infer_cp_bench.h): --kv-cache P cached tokens (given: an
  // inference step), --seq the T new tokens, the cache's layout; --mode p2p (pass-KV), pass-q, decode-pass-q
  // or decode-ag. pass_given: --pass was on the command line (inference runs the forward only)
  std::int64_t kv_cache = 0;
  std::string cache_layout = "zigzag";
  bool kv_cache_given = false, pass_given = false;  // --kv-cache, --pass on the command line
};

// throws cplab::Error naming the rule (no CUDA call)
void check_cp_args(const CpArgs& a);
// runs it (a usable GPU is required); returns the exit status: 0 PASS, 1 FAIL
int run_cp(const CpArgs& a);

}  // namespace cplab::bench
