#!/usr/bin/env bash
# gpu_results_rehearsal.sh SOURCE_DIR BUILD_DIR: scripts/gpu-results.sh's two device calls run end to end on a
# machine WITHOUT a GPU (ctest gpu_results_rehearsal), on this build's programs.
#
# What it checks: call 1 (CPLAB_GPU_SKIP_BUILD=1) runs every step (the GPU tests and benchmarks report
# skipped), gates the two v3 benchmarks (v3's tests did not all pass), exits 0, and leaves results.md
# (every step, the summary, call 2's recipe), steps.log, the tarball and the state file; call 2 then
# reruns a failed benchmark with CUDA_LAUNCH_BLOCKING=1 and points compute-sanitizer at its smoke test
# (or says compute-sanitizer is missing, naming the command), and reruns call 1's failed test by name.
# The programs run from a shadow build folder (scripts/gpu-prebuilt.sh shadow: the CTestTestfiles copied,
# the programs linked) so that the inner ctest does not write into BUILD_DIR/Testing while the outer ctest runs.
# What it is not: a GPU run. With a GPU here it reports skipped (exit 77): run scripts/gpu-results.sh.
set -u -o pipefail
src=$1 bdir=$(cd "$2" && pwd)
if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L 2>/dev/null | grep -q GPU; then
  echo "skipped: a GPU is here, and the rehearsal would run the real GPU steps (run bash scripts/gpu-results.sh)"
  exit 77
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0
check() {  # check WHAT COMMAND...
  local what=$1
  shift
  if "$@"; then echo "ok   $what"; else echo "FAIL $what"; fails=$((fails + 1)); fi
}
has() { grep -qF -- "$2" "$1"; }

# the shadow build folder: the test files copied, the five programs linked (scripts/gpu-prebuilt.sh)
shadow=$tmp/b
bash "$src/scripts/gpu-prebuilt.sh" shadow "$bdir" "$shadow" || { echo "gpu_results_rehearsal: no shadow folder"; exit 1; }

export CPLAB_GPU_SKIP_BUILD=1 CPLAB_GPU_BUILD_DIR=$shadow CPLAB_GPU_STATE=$tmp/state
bash "$src/scripts/gpu-results.sh" "$tmp/c1" >"$tmp/c1.out" 2>&1
rc=$?
r=$tmp/c1/results.md
check "call 1 exits 0 (got $rc)" test "$rc" = 0
for t in "## preflight" "## ldd of the five programs" "## GPU tests (ctest -L cuda" "## GPU tests of kernel v3" \
         "## cplab-bench attention (kernel v2" "## cplab-bench cp --mode p2p --seq 32768" \
         "## cplab-bench cp --mode a2a+p2p --hcp 2,4 --seq 16384" "## cplab-bench cp --mode pass-q --kv-cache 32768" \
         "## cplab-bench cp --mode decode-ag --kv-cache 32768" "## summary" "## Call 2: the recipe" \
         "command: bash scripts/gpu-results.sh diagnose"; do
  check "call 1's results.md has '$t'" has "$r" "$t"
done
check "the two v3 benchmarks are gated" test "$(grep -c 'NOT RUN\*\* (gated)' "$r")" = 2
check "the recipe is on stderr too" has "$tmp/c1.out" "## Call 2: the recipe"
check "the tarball and steps.log" test -s "$tmp/c1/gpu-results-call1.tgz" -a -s "$tmp/c1/steps.log"
check "the state has each step" has "$tmp/state" "step cp_a2a_p2p SKIPPED"

# call 2: a failed benchmark (by --failed) and a failed test (in the state, as call 1's ctest reader writes it)
printf 'failed ctest_gpu cuda_tests\tattention v2, causal\n' >>"$tmp/state"
bash "$src/scripts/gpu-results.sh" diagnose --failed cp_a2a,ctest_gpu "$tmp/c2" >"$tmp/c2.out" 2>&1
rc=$?
r=$tmp/c2/results.md
check "call 2 exits 0 (got $rc)" test "$rc" = 0
check "call 2 reruns the benchmark" has "$r" "## cplab-bench cp --mode a2a --seq 16384 again, CUDA_LAUNCH_BLOCKING=1"
check "call 2 sanitizes the benchmark's smoke test" grep -qE "compute-sanitizer.*cplab-bench cp --mode a2a --cp 2 --seq 1024" "$r"
check "call 2 reruns call 1's failed test by name" has "$r" "-R ^(cuda_tests)\$"
check "call 2's summary" has "$r" "## summary"
if ((fails)); then
  echo "--- call 1's output"; cat "$tmp/c1.out"; echo "--- call 2's results.md"; cat "$r"
fi
echo "gpu_results_rehearsal: $fails failed"
exit $((fails > 0))
