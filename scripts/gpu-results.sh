#!/usr/bin/env bash
# gpu-results.sh: every measurement the GPU issues ask for, in one run on a GPU machine, written to
# OUTDIR (default: $OUT, the device tool's output folder, else ./gpu-results):
#   build.log            the build (sm_90 unless CUDA_ARCH is set; viz off; .deps/usr used if present)
#   ctest_cuda.log       ctest -L cuda: kernel equivalence, communicators, every CP mode on virtual
#                        ranks (and on NCCL), the benchmark smoke runs
#   attention.json/.log  cplab-bench attention (bf16, d 64/128, s 1K..32K, causal and not, vs SDPA)
#   attention_v3.*       the same for kernel v3 (wgmma + TMA forward; its backward is v2's)
#   cp_p2p_v3.*          the ring of cp_p2p with kernel v3 (and its baseline also v3)
#   cp_<mode>.json/.log  cplab-bench cp, cp 8, 64K tokens, causal bf16, for every mode
#   results.md           GPU, commit, and the tables of the logs above, for data/ and the notes
# Each step runs even if an earlier one fails; the exit status is the number of failed steps.
# What it is not: a CPU test (scripts/test.sh), or a multi-GPU run (pass --backend nccl yourself).
set -u
cd "$(dirname "$0")/.."
out=${1:-${OUT:-gpu-results}}
mkdir -p "$out"
arch=${CUDA_ARCH:-90}
prefix=()
[ -d .deps/usr ] && prefix=(-DCMAKE_PREFIX_PATH="$PWD/.deps/usr")
failed=0
step() {  # step NAME LOG COMMAND...: run, log, count failures
  local name=$1 log=$2; shift 2
  echo "== $name" | tee -a "$out/steps.log"
  local t0=$SECONDS
  "$@" >"$out/$log" 2>&1
  local rc=$?
  echo "   rc=$rc, $((SECONDS - t0)) s" | tee -a "$out/steps.log"
  [ "$rc" -eq 0 ] || failed=$((failed + 1))
}
step configure build.log cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES="$arch" "${prefix[@]}"
step build build_ninja.log cmake --build build-gpu -j "$(nproc)"
step "ctest -L cuda" ctest_cuda.log ctest --test-dir build-gpu -L cuda --output-on-failure --timeout 900
bench=build-gpu/bench/cplab-bench
step "cplab-bench attention" attention.log "$bench" attention --json "$out/attention.json"
step "cplab-bench attention --kernel v3" attention_v3.log "$bench" attention --kernel v3 --json "$out/attention_v3.json"
for mode in p2p allgather a2a a2a+p2p; do
  extra=()
  [ "$mode" = "a2a+p2p" ] && extra=(--hcp 2,4)
  step "cplab-bench cp --mode $mode" "cp_$mode.log" "$bench" cp --mode "$mode" "${extra[@]}" --cp 8 --seq 65536 --heads 32 --kv-heads 8 \
    --head-dim 128 --json "$out/cp_$mode.json" --trace "$out/cp_${mode}_trace.json"
done
step "cplab-bench cp --mode p2p --kernel v3" cp_p2p_v3.log "$bench" cp --mode p2p --kernel v3 --cp 8 --seq 65536 --heads 32 \
  --kv-heads 8 --head-dim 128 --json "$out/cp_p2p_v3.json"
{
  echo "# cplab GPU results"
  echo
  echo "- commit: $(git rev-parse HEAD 2>/dev/null || echo unknown)$(git diff --quiet 2>/dev/null || echo ' (dirty tree)')"
  echo "- GPU: $(nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader 2>/dev/null || echo unknown)"
  echo "- nvcc: $(nvcc --version 2>/dev/null | tail -1)"
  echo "- date: $(date -u +%Y-%m-%dT%H:%MZ)"
  echo
  echo '## steps'; echo; echo '```'; cat "$out/steps.log"; echo '```'
  echo; echo '## ctest -L cuda'; echo; echo '```'; grep -E "Test +#|tests passed|Failed|Skipped" "$out/ctest_cuda.log" | tail -40; echo '```'
  for f in attention attention_v3 cp_p2p cp_allgather cp_a2a cp_a2a+p2p cp_p2p_v3; do
    [ -f "$out/$f.log" ] || continue
    echo; echo "## $f"; echo; echo '```'; cat "$out/$f.log"; echo '```'
  done
} >"$out/results.md"
echo "gpu-results: $failed failed step(s); $out/results.md"
exit "$failed"
