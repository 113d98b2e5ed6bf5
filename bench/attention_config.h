// attention_config.h: what `cplab-bench attention` runs: its command line, the checked plan of
// shapes made from it, the FLOP count, the sample of rows it checks, and the tolerances.
//
// What it is: plain C++ (no CUDA call, no CUDA header), so every argument is checked and every
// rule broken is reported (cplab::Error, exit status 2) before the GPU is touched, also on
// machines without one. One place for the numbers the output is judged by: attention_flops
// (FlashAttention convention) and tolerance (per dtype).
// What it is not: the timing (attention_run.h), the reference check (attention_check.h), or the
// kernels' own rules (cuda/attention.h check_supported, which main.cpp also calls before any GPU work).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/dtype.h"  // reference/: DType

namespace cplab::bench {

enum class Pass { fwd, bwd };
const char* to_string(Pass p);

// The command line as typed (lists are comma-separated text, checked by make_plan).
struct AttentionArgs {
  std::string dtype = "bf16";
  std::string head_dim = "64,128";
  std::string seq = "1024,2048,4096,8192,16384,32768";
  std::string causal = "both";  // both | yes | no
  std::string kernel = "v2";    // v2 | v3 | v1
  std::string pass = "both";    // fwd | bwd | both
  std::int64_t tokens = 16384;  // b * s (b = 1 when s > tokens)
  std::int64_t hidden = 2048;   // h * d, unless --heads is given
  std::int64_t heads = 0;       // 0: hidden / d
  std::int64_t kv_heads = 0;    // 0: = heads (no GQA)
  int warmup = 3, iters = 10;
  std::string baseline;  // "" and !no_baseline: the default, python3 <source>/bench/sdpa_baseline.py
  bool no_baseline = false;
  std::string sdpa_error;  // "" and !no_sdpa_error: the default, python3 <source>/bench/sdpa_error.py
  bool no_sdpa_error = false;
  std::string keep_io;  // "" = the yardstick's files go to a temporary directory, removed at the end
  std::string json_path;
};

// One benchmarked shape: b sequences of s tokens, h query heads, hk KV heads, head dim d (= dv).
struct Shape {
  std::int64_t b = 0, s = 0, h = 0, hk = 0, d = 0;
  bool causal = false;
};

struct AttentionPlan {
  int kernel = 2;  // cuda::Kernel's value: 1 v1 (scalar), 2 v2 (mma.sync), 3 v3 (wgmma + TMA forward)
  DType dtype = DType::bf16;
  std::vector<Shape> shapes;  // for each d, for causal no then yes, for each s (as given)
  bool fwd = true, bwd = true;
  int warmup = 3, iters = 10;
  std::int64_t tokens = 16384, hidden = 2048;
  bool heads_given = false;
  std::string causal;        // both | yes | no (for the baseline's command line)
  std::string baseline_cmd;    // "" = no baseline
  std::string sdpa_error_cmd;  // "" = no accuracy yardstick (--no-sdpa-error)
  std::string keep_io;         // "" = temporary directory for the yardstick's files; else kept there
  std::string json_path;       // "" = no JSON file
};

// Checks every argument and expands the shapes; throws cplab::Error naming the broken rule.
AttentionPlan make_plan(const AttentionArgs& args);

// The default baseline command: python3 '<source dir>/bench/sdpa_baseline.py'.
std::string default_baseline_command();
// The default yardstick command: python3 '<source dir>/bench/sdpa_error.py'.
std::string default_sdpa_error_command();

// FlashAttention's convention (benchmarks/benchmark_flash_attention.py): forward 4*b*h*s^2*d
// (the QK^T and PV GEMMs), causal exactly half, backward 2.5x forward (5 GEMMs); h = query heads.
// Useful FLOPs: the softmax and the masked-out half are not counted.
double attention_flops(const Shape& x, Pass p);

// --- the correctness sample --------------------------------------------------------------------
// Forward: O and LSE of kSampleRows query rows of head 0 of sequence 0, spread over the sequence
// (sample_rows). Backward: for s <= kFullBackwardMaxSeq the whole of sequence 0's dQ (query heads
// 0 .. h/hk-1, the group of KV head 0) and dK, dV of KV head 0; for longer s, dQ of the sampled rows.
inline constexpr std::int64_t kSampleRows = 32;
inline constexpr std::int64_t kFullBackwardMaxSeq = 4096;
std::vector<std::int64_t> sample_rows(std::int64_t s);  // row i*(s-1)/31, i = 0..31 (0 and s-1 included)

// --- tolerances: THE numbers a row's PASS / FAIL is judged by -----------------------------------
// error = max |gpu - ref| / max |ref| over each checked tensor (O, LSE; dQ, dK, dV), ref in double.
// The inputs are exact in the dtype, so the error is the kernels' own rounding: P (and the output
// O) rounded to the dtype, fp32 accumulation. bf16 keeps 8 significant bits (2^-8 = 3.9e-3), fp16
// 11 (2^-11 = 4.9e-4): the tolerances allow about 5 and 10 such units relative to the largest value.
inline constexpr double kToleranceBf16 = 2e-2;
inline constexpr double kToleranceFp16 = 5e-3;
double tolerance(DType t);

// --- the accuracy yardstick: SDPA's own error against the same reference (sdpa_error.h) ----------
// The issue's rule: "on an H100/H200 also measure PyTorch SDPA's error against the same reference
// as the yardstick: our error must be no worse than 1.5x SDPA's." Per tensor (O; dQ, dK, dV; LSE is
// not compared: SDPA's public API does not return it), on the same rows with the same metric as
// above: PASS if our error <= kSdpaErrorRatio * min over the SDPA backends that ran (flash, cuDNN).
inline constexpr double kSdpaErrorRatio = 1.5;
// Measured, to bound its cost (files of sequence 0, whole tensors), on these shapes only: for each
// (d, causal), the smallest benchmarked s >= kYardstickMinSeq (the smallest benchmarked s if none
// is) and s = kYardstickSeq if benchmarked. The full FA2/FA3 setup: s = 1024 and 4096, 8 shapes,
// where the backward check covers whole heads (s <= kFullBackwardMaxSeq).
inline constexpr std::int64_t kYardstickMinSeq = 1024;
inline constexpr std::int64_t kYardstickSeq = 4096;
bool is_yardstick_shape(const AttentionPlan& plan, const Shape& x);

}  // namespace cplab::bench
