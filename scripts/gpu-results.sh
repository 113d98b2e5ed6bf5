#!/usr/bin/env bash
# gpu-results.sh: the GPU measurements the issues ask for, in phases that each fit one device call.
#
#   scripts/gpu-results.sh PHASE [OUTDIR]    (OUTDIR default: $OUT, the device tool's folder, else out/gpu-results)
#
# What it is: build cplab for sm_90 (once per build dir; later phases only run ninja, which is
# incremental), run ctest -L cuda and cplab-bench, and write to OUTDIR, as each step ends:
#   results.md                 commit, GPU, nvcc, g++, date, phase; per step its status (PASS / FAIL rc /
#                              TIMEOUT / SKIPPED (exit 77, no GPU) / NOT RUN (phase time spent)), the build's
#                              warning count, ctest's result lines, the bench tables, and a failed step's
#                              last 40 log lines
#   steps.log                  one line per step start and end, with times
#   gpu-results-PHASE.tgz      every log, JSON and trace (and the two files above), folder gpu-results-PHASE/
# Nothing else lands in OUTDIR (3 files, names [A-Za-z0-9._-]); the tarball is repacked after every
# step and in an EXIT trap, so a kill still leaves what was done.
#
# Phases, budgets and estimates for an H100/H200 machine with 16 cores. Each step runs under
# `timeout -k 10 T`, T = its budget clipped to what is left of the phase limit (550 s, less 15 s kept
# for packing), so a phase ends before the device tool's 600 s limit even when a step hangs; a step
# left with under 20 s, or under 60 s of a larger budget, is NOT RUN. attention v2 has its own phase:
# build-test's budgets already fill the 550 s.
#   build-test   configure          60 s  (est. 15-30 s; skipped when BUILD_DIR is configured already)
#                build             300 s  (est. 1.5-3 min: about 12 CPU-minutes on the 2-core dev box)
#                ctest -L cuda     420 s or what is left of the 550 s (est. 1-3 min; ~26 tests, --timeout
#                                  120 per test, and --stop-time 15 s before the step's timeout, since
#                                  comm_gpu_tests (TIMEOUT 600) and comm_gpu_tests_delayed (TIMEOUT 300)
#                                  set their own, which --timeout does not shorten)
#                                  = 60 + 300 + at least 175 s before the phase limit cuts in
#   attention    build (ninja)     300 s  (est. < 10 s after build-test on the same warm machine)
#                attention v2      420 s  (est. 2-4 min: 24 shapes fwd+bwd, SDPA baseline, yardstick)
#   bench        build (ninja)     300 s  (est. < 10 s after build-test)
#                attention v3 fwd  150 s  (est. 1-2 min: --kernel v3 --pass fwd; v3's backward is v2's)
#                cp p2p, allgather,
#                a2a, a2a+p2p   4 x 80 s  (est. 30-50 s each: cp 8, 64K tokens, 32/8 heads, d 128, causal bf16)
#                cp p2p v3 fwd      50 s  (est. 10-20 s: the ring with --kernel v3 --pass fwd)
#                                  = 520 s after the build check
#   all          every step above, no phase limit and no per-step timeout (your own machine);
#                ctest keeps --timeout 120 per test
# On the device: run scripts/gpu-bundle.sh here first, then one call per phase, back to back (the
# machine stays warm only 30 s, and the build dir in the repo copy lives only while it is warm):
#   carry [".deps"], command `scripts/gpu-results.sh build-test $OUT`, then `... attention $OUT`,
#   then `... bench $OUT`. A phase on a cold machine builds first and gets what time is left.
# Environment: CPLAB_GPU_BUILD_DIR (default build-gpu; relative to the repository root), CUDA_ARCH (default 90),
#   CPLAB_GPU_PHASE_LIMIT (seconds, default 550 for the limited phases; 0 = none), NCCL_HOME,
#   CPLAB_GPU_SKIP_BUILD=1 (use the build dir as it is: no configure, no build; dry runs, reruns).
# The build is configured with -DCPLAB_WERROR=OFF (a newer host compiler's new warnings must not cost
# a GPU session its build); results.md counts the warnings instead. NCCL: the system's nccl.h, else
# the pip wheel nvidia-nccl-cu13 (nvidia/nccl/{include,lib/libnccl.so.2}), else no NcclComm.
# The commit: git when this is a git checkout, else .deps/COMMIT (written by gpu-bundle.sh).
# Exit status: the number of failed, timed-out or not-run steps (0: all passed or skipped); 2 for bad usage.
# What it is not: a CPU test (scripts/test.sh), a multi-GPU run (pass --backend nccl yourself), or a
# place for benchmark logic (that is bench/; this only runs it and files the output).
set -u -o pipefail
cd "$(dirname "$0")/.." || exit 2
root=$PWD

phases="build-test, attention, bench, all"
usage() { sed -n '4p' "$0" | sed 's/^# *//'; echo "phases: $phases (see the header of $0)"; }
phase=${1:-}
case "$phase" in
  build-test | attention | bench | all) ;;
  -h | --help) usage; exit 0 ;;
  "") echo "gpu-results: no phase given; valid phases: $phases" >&2; usage >&2; exit 2 ;;
  *) echo "gpu-results: unknown phase '$phase'; valid phases: $phases" >&2; usage >&2; exit 2 ;;
esac
out=${2:-${OUT:-out/gpu-results}}  # out/ is git-ignored
mkdir -p "$out" || exit 2
out=$(cd "$out" && pwd)
bdir=${CPLAB_GPU_BUILD_DIR:-build-gpu}
arch=${CUDA_ARCH:-90}
if [ "$phase" = all ]; then limit=${CPLAB_GPU_PHASE_LIMIT:-0}; else limit=${CPLAB_GPU_PHASE_LIMIT:-550}; fi
reserve=15  # seconds kept for the final packing when a phase limit is set

# ---- work folder (packed into the tarball) and OUTDIR's three files
tmp=$(mktemp -d "${TMPDIR:-/tmp}/cplab-gpu-results.XXXXXX") || exit 2
name=gpu-results-$phase
work=$tmp/$name
mkdir -p "$work"
results=$out/results.md
steplog=$out/steps.log
tarball=$out/$name.tgz
: >"$results"
: >"$steplog"
md() { printf '%s\n' "$@" >>"$results"; }
now() { date -u +%H:%M:%S; }

pack() {  # tarball of the work folder (+ results.md, steps.log); > 15 MiB: again without the traces
  cp "$results" "$steplog" "$work/" 2>/dev/null
  tar -czf "$tarball.part" -C "$tmp" "$name" 2>/dev/null || return 1
  if [ "$(stat -c %s "$tarball.part")" -gt $((15 * 1024 * 1024)) ]; then
    tar -czf "$tarball.part" -C "$tmp" --exclude='*_trace.json' "$name" 2>/dev/null || return 1
    packed_note="tarball over 15 MiB: repacked without the *_trace.json files"
  fi
  mv -f "$tarball.part" "$tarball"
}
finished=0
packed_note=""
child=""         # the running step's `timeout` (its own process group)
current="(none)"  # the running step's title
current_log=""    # and its log
# shellcheck disable=SC2317  # the trap handlers are called indirectly
on_exit() {
  if [ "$finished" = 0 ]; then
    md "" "## interrupted" "" "The script stopped before its end (signal or error) at $(now) UTC, $SECONDS s in," \
      "during step: $current. The steps above are what was done."
    echo "[$(now)] interrupted after $SECONDS s during $current" >>"$steplog"
    if [ -f "$current_log" ]; then
      md "" "Last 40 lines of its log:" "" '```'; tail -n 40 "$current_log" >>"$results"; md '```'
    fi
  fi
  pack
  [ -z "$packed_note" ] || echo "gpu-results: $packed_note" >&2
  rm -rf "$tmp"
}
# shellcheck disable=SC2317
on_signal() {  # end the running step's process group, then exit (which runs on_exit)
  if [ -n "$child" ]; then
    kill -TERM -- "-$child" 2>/dev/null
    sleep 2
    kill -KILL -- "-$child" 2>/dev/null
  fi
  exit "$1"
}
trap on_exit EXIT
trap 'on_signal 129' HUP
trap 'on_signal 130' INT
trap 'on_signal 143' TERM

# ---- the machine: CUDA on PATH, NCCL, the commit
if ! command -v nvcc >/dev/null 2>&1 && [ -x /usr/local/cuda/bin/nvcc ]; then export PATH=/usr/local/cuda/bin:$PATH; fi
cuda_root=$(dirname "$(dirname "$(command -v nvcc 2>/dev/null || echo /usr/local/cuda/bin/nvcc)")")

# NCCL: cuda/comm/CMakeLists.txt finds nccl.h / libnccl (names nccl, libnccl.so.2) with hints
# $NCCL_HOME/{include,lib,lib64} and the CUDA toolkit, or takes CPLAB_NCCL_INCLUDE_DIR / _LIBRARY.
nccl_args=()
nccl_note="not found: NcclComm and the nccl tests are not built"
find_nccl() {
  local d wheel lib
  if [ -n "${NCCL_HOME:-}" ] && [ -f "$NCCL_HOME/include/nccl.h" ]; then nccl_note="NCCL_HOME=$NCCL_HOME (given)"; return; fi
  for d in /usr/include /usr/local/include "$cuda_root/include" "$cuda_root"/targets/*/include; do
    if [ -f "$d/nccl.h" ]; then nccl_note="system: $d/nccl.h"; return; fi
  done
  # the pip wheel: nvidia/nccl is a namespace package (no __init__.py, so no __file__): look on sys.path
  wheel=$(python3 -c 'import os, sys
for p in sys.path:
    d = os.path.join(p or ".", "nvidia", "nccl")
    if os.path.isfile(os.path.join(d, "include", "nccl.h")):
        print(os.path.abspath(d)); break' 2>/dev/null)
  [ -n "$wheel" ] || return
  lib=$wheel/lib/libnccl.so
  [ -e "$lib" ] || lib=$wheel/lib/libnccl.so.2  # the wheel ships only libnccl.so.2
  [ -e "$lib" ] || { nccl_note="pip wheel at $wheel has no lib/libnccl.so.2: NcclComm not built"; return; }
  export NCCL_HOME=$wheel
  export LD_LIBRARY_PATH=$wheel/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
  nccl_args=(-DCPLAB_NCCL_INCLUDE_DIR="$wheel/include" -DCPLAB_NCCL_LIBRARY="$lib")
  nccl_note="pip wheel: $lib (NCCL_HOME and CPLAB_NCCL_* set; its lib/ on LD_LIBRARY_PATH)"
}
find_nccl

# commit: git only when this folder is the checkout's top (not a parent repository's)
commit_args=()
if [ "$(git rev-parse --show-toplevel 2>/dev/null)" = "$root" ]; then
  commit=$(git rev-parse HEAD)
  if [ -n "$(git status --porcelain -- . ':(exclude).deps' 2>/dev/null)" ]; then
    commit="$commit (dirty tree: uncommitted changes, per git status)"
  fi
elif [ -f .deps/COMMIT ]; then
  c=$(sed -n 's/^commit=//p' .deps/COMMIT)
  dirty=$(sed -n 's/^dirty=//p' .deps/COMMIT)
  commit="$c (no git here: from .deps/COMMIT, written by gpu-bundle.sh at $(sed -n 's/^bundled=//p' .deps/COMMIT);"
  commit="$commit tree dirty then: ${dirty:-unknown})"
  short=${c:0:12}
  [ "$dirty" = yes ] && short=$short-dirty
  # for cplab-bench's JSON (bench/CMakeLists.txt: a -DCPLAB_BENCH_COMMIT value wins over git)
  [ -n "$c" ] && [ "$c" != unknown ] && commit_args=(-DCPLAB_BENCH_COMMIT="$short")
else
  commit="unknown (no git repository here and no .deps/COMMIT: run scripts/gpu-bundle.sh before the device call)"
fi

gpu=$(nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader 2>/dev/null | paste -sd';' -)
{
  md "# cplab GPU results: phase $phase" ""
  md "- commit: $commit"
  md "- GPU: ${gpu:-none (no nvidia-smi or no GPU)}"
  md "- nvcc: $(nvcc --version 2>/dev/null | grep -o 'release .*' || echo 'not found')"
  md "- g++: $(g++ --version 2>/dev/null | head -1 || echo 'not found')"
  md "- cmake: $(cmake --version 2>/dev/null | head -1); ninja: $(ninja --version 2>/dev/null || echo 'not found')"
  if [ "$phase" != build-test ]; then  # the SDPA baseline's torch (a few seconds to import)
    md "- python3 / torch: $(timeout 30 python3 -c 'import sys, torch; print(sys.version.split()[0], "/", torch.__version__, "CUDA", torch.version.cuda)' 2>/dev/null || echo 'no torch')"
  fi
  md "- NCCL: $nccl_note"
  md "- date: $(date -u +%Y-%m-%dT%H:%M:%SZ); host: $(hostname); $(nproc) cores"
  md "- phase: $phase; build dir: $bdir (CUDA_ARCH $arch, CPLAB_WERROR=OFF); phase limit: $([ "$limit" -gt 0 ] && echo "$limit s" || echo none)"
}
echo "[$(now)] phase $phase, OUTDIR $out, work $work" >>"$steplog"
pack

# ---- steps
n_pass=0 n_fail=0 n_timeout=0 n_skip=0 n_notrun=0
last_rc=""  # the last step's exit status, or not-run
# run_step KIND NAME KEY BUDGET COMMAND...: KIND build | ctest | bench (what results.md shows of the log)
run_step() {
  local kind=$1 title=$2 key=$3 budget=$4
  shift 4
  local log=$work/$key.log t=$budget left
  if [ "$limit" -gt 0 ]; then
    left=$((limit - reserve - SECONDS))
    [ "$t" -le "$left" ] || t=$left
    if [ "$t" -lt 20 ] || { [ "$t" -lt "$budget" ] && [ "$t" -lt 60 ]; }; then
      n_notrun=$((n_notrun + 1))
      echo "[$(now)] NOT RUN $title: $left s left in the phase, budget $budget s" >>"$steplog"
      md "" "## $title" "" "**NOT RUN**: $left s left of the phase's $limit s (budget $budget s)."
      pack
      last_rc=not-run
      return
    fi
  else
    t=0  # phase all: no timeout
  fi
  local shown="${*//$work/$name}"  # the command as shown: work-folder paths as they are in the tarball
  echo "[$(now)] start $title (timeout $([ "$t" -gt 0 ] && echo "$t s" || echo none)): $shown" >>"$steplog"
  echo "gpu-results: $title ..." >&2
  local t0=$SECONDS rc status
  { echo "\$ $shown"; echo; } >"$log"
  # in the background and waited for, so that a signal to this script is handled at once (on_signal);
  # timeout runs the command in a process group of its own, which a timeout or on_signal ends whole
  current=$title current_log=$log
  timeout -k 10 "$t" "$@" >>"$log" 2>&1 </dev/null &
  child=$!
  wait "$child"
  rc=$?
  if kill -0 -- "-$child" 2>/dev/null; then  # what is left of its process group (a timed-out build's ninja)
    kill -TERM -- "-$child" 2>/dev/null
    sleep 3
    kill -KILL -- "-$child" 2>/dev/null
  fi
  child="" current="(none)" current_log="" last_rc=$rc
  local dt=$((SECONDS - t0))
  case $rc in
    0) status="PASS"; n_pass=$((n_pass + 1)) ;;
    124 | 137) status="TIMEOUT after $dt s (budget $t s; killed)"; n_timeout=$((n_timeout + 1)) ;;
    77) status="SKIPPED (exit 77: no CUDA device)"; n_skip=$((n_skip + 1)) ;;
    *) status="FAIL (exit $rc)"; n_fail=$((n_fail + 1)) ;;
  esac
  echo "[$(now)] end $title: $status, $dt s" >>"$steplog"
  md "" "## $title" "" "**$status**, $dt s (timeout $([ "$t" -gt 0 ] && echo "$t s" || echo none)); log \`$name/$key.log\`"
  [ "$kind" = bench ] || md "" '```' "$shown" '```'  # a bench log starts with its command
  case $kind in
    build) summarize_build "$log" ;;
    ctest) summarize_ctest "$log" ;;
    bench) md "" '```'; tail -n 300 "$log" >>"$results"; md '```' ;;
  esac
  if [ "$rc" != 0 ] && [ "$rc" != 77 ] && [ "$kind" != bench ]; then
    md "" "Last 40 lines of the log:" "" '```'; tail -n 40 "$log" >>"$results"; md '```'
  fi
  pack
}

warning_re=': warning( #[0-9]+-D)?:|(nvcc|ptxas|nvlink) warning ?:'
summarize_build() {
  local log=$1 n distinct
  n=$(grep -cE "$warning_re" "$log")
  distinct=$(grep -E "$warning_re" "$log" | sort -u | wc -l)
  md "" "Warnings (CPLAB_WERROR=OFF; of what this step compiled): **$n** warning lines ($distinct distinct)"
  if [ "$n" -gt 0 ]; then
    md "" "By kind:" "" '```'
    grep -E "$warning_re" "$log" | grep -oE '\[-W[^]]+\]|#[0-9]+-D|(nvcc|ptxas|nvlink) warning' | sort | uniq -c | sort -rn | head -20 >>"$results"
    md '```' "" "First distinct warnings:" "" '```'
    grep -E "$warning_re" "$log" | sort -u | head -15 | cut -c1-300 >>"$results"
    md '```'
  fi
}
summarize_configure() {
  local log=$1
  md "" '```'
  grep -E '^-- cplab|CMake (Warning|Error)|The CUDA compiler identification' "$log" | head -20 >>"$results"
  md '```'
}
summarize_ctest() {
  local log=$1
  cp "$bdir/Testing/Temporary/LastTest.log" "$work/ctest_LastTest.log" 2>/dev/null
  local count k
  count=""
  for k in Passed Skipped Failed Timeout "Not Run"; do
    count="$count$(grep -cE "^ *[0-9]+/[0-9]+ Test +#.*(\*\*\*| )$k( |$)" "$log") $k, "
  done
  md "" "Tests: ${count%, } (Skipped: exit 77, no GPU, or kernel v3 refused on a GPU that is not CC 9.0)"
  md "" '```'
  grep -E '^ *[0-9]+/[0-9]+ Test +#|tests passed|tests failed|The following tests|^[[:space:]]+[0-9]+ - |Total Test time' "$log" >>"$results"
  md '```'
}

# configure (when needed) and build; every phase runs it, a no-op ninja when build-test ran before
ensure_build() {
  local gen=() prefix=()
  if [ "${CPLAB_GPU_SKIP_BUILD:-0}" = 1 ]; then
    md "" "## configure, build" "" "skipped: CPLAB_GPU_SKIP_BUILD=1 (the binaries in $bdir are used as they are)."
    echo "[$(now)] configure and build skipped: CPLAB_GPU_SKIP_BUILD=1" >>"$steplog"
    return
  fi
  command -v ninja >/dev/null 2>&1 && gen=(-G Ninja)
  [ -d .deps/usr ] && prefix=(-DCMAKE_PREFIX_PATH="$root/.deps/usr")
  if { [ -f "$bdir/build.ninja" ] || [ -f "$bdir/Makefile" ]; } && grep -q '^CPLAB_WERROR:BOOL=OFF$' "$bdir/CMakeCache.txt" 2>/dev/null; then
    md "" "## configure" "" "skipped: $bdir is configured already (the build step reruns CMake if a CMakeLists.txt changed)."
    echo "[$(now)] configure skipped: $bdir is configured" >>"$steplog"
  else
    run_step configure configure configure 60 cmake -S . -B "$bdir" "${gen[@]}" -DCMAKE_BUILD_TYPE=Release \
      -DCMAKE_CUDA_ARCHITECTURES="$arch" -DCPLAB_WERROR=OFF "${prefix[@]}" "${nccl_args[@]}" "${commit_args[@]}"
    summarize_configure "$work/configure.log"
    pack
  fi
  run_step build build build 300 cmake --build "$bdir" -j "$(nproc)"
  if [ "$last_rc" != 0 ]; then
    md "" "> **The build did not finish**: the steps below run whatever binaries exist in $bdir (missing ones" \
      "> fail at once; others may be stale). A later phase on the same warm machine resumes the build."
  fi
}

bench=$bdir/bench/cplab-bench
ctest_step() {  # ctest's --timeout does not shorten a test's own TIMEOUT property; --stop-time does
  local t=420 stop=()
  if [ "$limit" -gt 0 ]; then
    local left=$((limit - reserve - SECONDS))
    [ "$t" -le "$left" ] || t=$left
    [ "$t" -lt 30 ] || stop=(--stop-time "$(date -d "+$((t - 15)) seconds" +%H:%M:%S)")  # local time, as ctest reads it
  fi
  run_step ctest "ctest -L cuda" ctest_cuda 420 ctest --test-dir "$bdir" -L cuda --output-on-failure --timeout 120 "${stop[@]}"
}
attention_v2() {
  run_step bench "cplab-bench attention (kernel v2, fwd + bwd)" attention_v2 420 \
    "$bench" attention --json "$work/attention_v2.json"
}
bench_steps() {
  run_step bench "cplab-bench attention --kernel v3 --pass fwd" attention_v3_fwd 150 \
    "$bench" attention --kernel v3 --pass fwd --json "$work/attention_v3_fwd.json"
  local mode key extra
  local shape=(--cp 8 --seq 65536 --heads 32 --kv-heads 8 --head-dim 128 --warmup 1 --iters 3)  # 3 timings x 4 kinds per pass
  for mode in p2p allgather a2a a2a+p2p; do
    key=cp_${mode//+/_}
    extra=()
    [ "$mode" = a2a+p2p ] && extra=(--hcp "2,4")
    run_step bench "cplab-bench cp --mode $mode${extra[*]:+ ${extra[*]}}" "$key" 80 \
      "$bench" cp --mode "$mode" "${extra[@]}" "${shape[@]}" --json "$work/$key.json" --trace "$work/${key}_trace.json"
  done
  run_step bench "cplab-bench cp --mode p2p --kernel v3 --pass fwd" cp_p2p_v3_fwd 50 \
    "$bench" cp --mode p2p --kernel v3 --pass fwd "${shape[@]}" --json "$work/cp_p2p_v3_fwd.json" \
    --trace "$work/cp_p2p_v3_fwd_trace.json"
}

case "$phase" in
  build-test) ensure_build; ctest_step ;;
  attention) ensure_build; attention_v2 ;;
  bench) ensure_build; bench_steps ;;
  all) ensure_build; ctest_step; attention_v2; bench_steps ;;
esac

failed=$((n_fail + n_timeout + n_notrun))
md "" "## summary" "" "$n_pass passed, $n_fail failed, $n_timeout timed out, $n_skip skipped (no GPU), $n_notrun not run;" \
  "$SECONDS s in all. Logs, JSON and traces: \`$name.tgz\` (folder \`$name/\`)."
echo "[$(now)] done: $n_pass passed, $n_fail failed, $n_timeout timed out, $n_skip skipped, $n_notrun not run, $SECONDS s" >>"$steplog"
finished=1
echo "gpu-results: phase $phase: $n_pass passed, $n_fail failed, $n_timeout timed out, $n_skip skipped, $n_notrun not run; $out/results.md, $tarball" >&2
exit "$failed"
