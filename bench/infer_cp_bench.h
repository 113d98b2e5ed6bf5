// infer_cp_bench.h: `cplab-bench cp --kv-cache P`: one inference CP step (issue 37) on GPU ranks,
// timed and checked.
//
// What it is: T = --seq new tokens (default 1024; 1 for the decode variants) attending to a KV
// cache of P = --kv-cache tokens and to themselves (causal with the offset P), one request, sharded
// as the reference's InferSpec says (reference/infer/infer_spec.h: --layout for the new tokens of
// pass-KV and pass-Q, round-robin for decode; --cache-layout for the cache), run on N = --cp ranks
// by cuda/cp/infer_gpu.h: --mode p2p (pass-KV), pass-q, decode-pass-q or decode-ag; virtual ranks
// on this GPU (--backend local) or one GPU per rank (--backend nccl). Against the baseline of the
// same attention as one kernel launch on one GPU (T x (P+T), bottom-right causal): ms, efficiency
// = baseline / (G x CP), TFLOP/s per GPU (4 h d per visible (query, key) pair, FlashAttention's
// convention counted exactly), bytes moved, the share of communication hidden, and O checked
// against the baseline on sampled rows (the same tolerance as the training run). Forward only.
// Rules (cplab::Error, exit 2, before any CUDA call): the InferSpec's own, the kernels' (check_supported),
// no --pass both (inference has no backward), no --hcp, --cu-seqlens, --pad or --trace.
// What it is not: the training layer (cp_bench.h), or the choice between the variants (cplab plan).
#pragma once

#include "cp_bench.h"

namespace cplab::bench {

// --kv-cache given, or an inference-only --mode (pass-q, decode-pass-q, decode-ag)
bool is_infer_run(const CpArgs& a);
// throws cplab::Error naming the rule (no CUDA call)
void check_infer_cp_args(const CpArgs& a);
// runs it (a usable GPU is required); 0 PASS, 1 FAIL
int run_infer_cp(const CpArgs& a);

}  // namespace cplab::bench
