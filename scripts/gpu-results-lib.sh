# shellcheck shell=bash disable=SC2034,SC2154  # sourced: the caller sets root, out, name, bdir, limit, reserve and reads the rest
# gpu-results-lib.sh: the step machinery of scripts/gpu-results.sh (sourced by it, not run).
#
# What it is: OUTDIR's three files (results.md, steps.log, the tarball, repacked after every step and
# in an EXIT trap), the machine's facts (CUDA on PATH, NCCL, the commit, the GPU), run_step: one
# command under `timeout -k 10 T` with T = its limit clipped to what is left before the run's
# deadline, its status and a summary of its log appended to results.md as soon as it ends; gate_step
# (a step not run because one it needs did not pass); use_prebuilt (the fallback's programs); and the
# state file (out/gpu-results.state: each step's status and the failed tests, which a diagnose call
# on the same machine reads).
# What it is not: the plan (which steps, their limits and estimates: scripts/gpu-results.sh).
# Expects from the caller: root, out (OUTDIR), name (the tarball's folder), bdir, limit (seconds for
# the whole run, 0 = none), reserve (seconds kept for a timed-out step's kill grace and the packing).

# ---- work folder (packed into the tarball) and OUTDIR's three files
tmp=$(mktemp -d "${TMPDIR:-/tmp}/cplab-gpu-results.XXXXXX") || exit 2
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
child=""          # the running step's `timeout` (its own process group)
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

# ---- steps
n_pass=0 n_fail=0 n_timeout=0 n_skip=0 n_notrun=0 n_gated=0
last_rc=""  # the last step's exit status, or not-run
declare -A key_status=()  # KEY -> PASS FAIL TIMEOUT SKIPPED NOTRUN GATED
declare -A ctest_passed=() ctest_skipped=()  # a ctest step's KEY -> its tests passed, skipped
step_keys=()              # the keys in the order they ran
state_put() {  # state_put LINE...: append to the state file (key=value and "step KEY STATUS" lines)
  mkdir -p "$(dirname "$state")" && printf '%s\n' "$@" >>"$state"
}
note_status() {  # note_status KEY STATUS
  key_status[$1]=$2
  step_keys+=("$1")
  state_put "step $1 $2"
}
# gate_step KEY TITLE WHY: a step not run because a step it needs did not pass (not a failure of its own)
gate_step() {
  n_gated=$((n_gated + 1))
  note_status "$1" GATED
  echo "[$(now)] NOT RUN $2: $3" >>"$steplog"
  md "" "## $2" "" "**NOT RUN** (gated): $3."
  pack
}
# run_step KIND TITLE KEY LIMIT COMMAND...: KIND configure | build | ctest | bench | preflight | sanitize
# (what results.md shows of the log). A ctest step also gets --stop-time 8 s before its time-out: ctest's --timeout
# does not shorten a test's own TIMEOUT property (comm_gpu_tests: 600 s), --stop-time does.
run_step() {
  local kind=$1 title=$2 key=$3 budget=$4
  shift 4
  local log=$work/$key.log t=$budget left
  if [ "$limit" -gt 0 ]; then
    left=$((limit - reserve - SECONDS))
    [ "$t" -le "$left" ] || t=$left
    if [ "$t" -lt "$budget" ] && [ "$t" -lt 60 ]; then  # cut short to under a minute: not worth it
      n_notrun=$((n_notrun + 1))
      note_status "$key" NOTRUN
      echo "[$(now)] NOT RUN $title: $left s left in the run, limit $budget s" >>"$steplog"
      md "" "## $title" "" "**NOT RUN**: $left s left of the run's $limit s (step limit $budget s)."
      pack
      last_rc=not-run
      return
    fi
  else
    t=0  # no run limit (phase all): no time-out
  fi
  local cmd=("$@")
  if [ "$kind" = ctest ] && [ "$t" -ge 20 ]; then  # local time, as ctest reads it
    cmd+=(--stop-time "$(date -d "+$((t - 8)) seconds" +%H:%M:%S)")
  fi
  local shown="${cmd[*]//$work/$name}"  # the command as shown: work-folder paths as they are in the tarball
  echo "[$(now)] start $title (timeout $([ "$t" -gt 0 ] && echo "$t s" || echo none)): $shown" >>"$steplog"
  echo "gpu-results: $title ..." >&2
  local t0=$SECONDS rc status
  { echo "\$ $shown"; echo; } >"$log"
  # in the background and waited for, so that a signal to this script is handled at once (on_signal);
  # timeout runs the command in a process group of its own, which a timeout or on_signal ends whole
  current=$title current_log=$log
  timeout -k 10 "$t" "${cmd[@]}" >>"$log" 2>&1 </dev/null &
  child=$!
  wait "$child"
  rc=$?
  if kill -0 -- "-$child" 2>/dev/null; then  # what is left of its process group (a timed-out build's ninja)
    kill -TERM -- "-$child" 2>/dev/null
    sleep 3
    kill -KILL -- "-$child" 2>/dev/null
  fi
  # a ctest step whose every test was skipped (no GPU) is SKIPPED, not PASS
  if [ "$kind" = ctest ] && [ "$rc" = 0 ] && [ "$(ctest_count "$log" Passed)" = 0 ] && [ "$(ctest_count "$log" Skipped)" != 0 ]; then
    rc=77
  fi
  child="" current="(none)" current_log="" last_rc=$rc
  local dt=$((SECONDS - t0))
  case $rc in
    0) status="PASS"; n_pass=$((n_pass + 1)); note_status "$key" PASS ;;
    124 | 137) status="TIMEOUT after $dt s (limit $t s; killed)"; n_timeout=$((n_timeout + 1)); note_status "$key" TIMEOUT ;;
    77) status="SKIPPED (exit 77: no CUDA device)"; n_skip=$((n_skip + 1)); note_status "$key" SKIPPED ;;
    *) status="FAIL (exit $rc)"; n_fail=$((n_fail + 1)); note_status "$key" FAIL ;;
  esac
  echo "[$(now)] end $title: $status, $dt s" >>"$steplog"
  md "" "## $title" "" "**$status**, $dt s (timeout $([ "$t" -gt 0 ] && echo "$t s" || echo none)); log \`$name/$key.log\`"
  [ "$kind" = bench ] || md "" '```' "$shown" '```'  # a bench log starts with its command
  case $kind in
    configure) summarize_configure "$log" ;;
    build) summarize_build "$log" ;;
    ctest) summarize_ctest "$log" "$key" ;;
    bench) md "" '```'; tail -n 300 "$log" >>"$results"; md '```' ;;
    preflight) md "" '```'; tail -n +3 "$log" | head -n 60 >>"$results"; md '```' ;;
    sanitize) md "" '```'; tail -n 80 "$log" >>"$results"; md '```' ;;
  esac
  if [ "$rc" != 0 ] && [ "$rc" != 77 ] && [[ $kind != @(bench|preflight|sanitize) ]]; then
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
  md "" '```'
  grep -E '^-- cplab|CMake (Warning|Error)|The CUDA compiler identification' "$1" | head -20 >>"$results"
  md '```'
}
# ctest_count LOG STATUS: how many of a ctest log's result lines end in STATUS (Passed, Skipped, Failed...)
ctest_count() { grep -cE "^ *[0-9]+/[0-9]+ Test +#.*(\*\*\*| )$2( |$)" "$1"; }
summarize_ctest() {
  local log=$1 key=$2 count k
  cp "$bdir/Testing/Temporary/LastTest.log" "$work/${key}_LastTest.log" 2>/dev/null
  count=""
  for k in Passed Skipped Failed Timeout "Not Run"; do count="$count$(ctest_count "$log" "$k") $k, "; done
  md "" "Tests: ${count%, } (Skipped: exit 77, no GPU, or kernel v3 refused on a GPU that is not CC 9.0)"
  ctest_passed[$key]=$(ctest_count "$log" Passed)
  ctest_skipped[$key]=$(ctest_count "$log" Skipped)
  md "" '```'
  grep -E '^ *[0-9]+/[0-9]+ Test +#|tests passed|tests failed|The following tests|^[[:space:]]+[0-9]+ - |Total Test time' "$log" >>"$results"
  md '```'
  # the failed tests and the first failing doctest case of each (scripts/gpu_results_ctest.py), for diagnose
  local line
  while IFS= read -r line; do state_put "failed $key $line"; done < <(python3 "$root/scripts/gpu_results_ctest.py" failures "$log")
}

# use_prebuilt WHY: the fallback: .deps/prebuilt.tar.xz unpacked into build-gpu-prebuilt (a step of its
# own), then bdir points there and the programs find libgomp and the SDPA scripts
use_prebuilt() {
  local dir=$root/build-gpu-prebuilt
  if [ ! -f "$root/.deps/prebuilt.tar.xz" ]; then
    md "" "> No prebuilt fallback: .deps/prebuilt.tar.xz was not carried (bash scripts/gpu-bundle.sh --prebuilt makes it)."
    return 1
  fi
  run_step configure "prebuilt fallback: unpack .deps/prebuilt.tar.xz ($1)" prebuilt 10 \
    bash "$root/scripts/gpu-prebuilt.sh" use "$dir"
  [ "$last_rc" = 0 ] || return 1
  bdir=$dir
  export LD_LIBRARY_PATH=$dir/prebuilt-lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} CPLAB_BENCH_DIR=$root/bench
  local origin pc
  origin=$(sed -n 's/^built=//p' "$dir/prebuilt-ORIGIN")
  pc=$(sed -n 's/^commit=//p' "$dir/prebuilt-ORIGIN")
  md "" "> **PREBUILT PROGRAMS**: $1, so the steps below run the programs of .deps/prebuilt.tar.xz, built" \
    "> $origin from commit $pc (dirty: $(sed -n 's/^dirty=//p' "$dir/prebuilt-ORIGIN")), not the ones built here."
  case "$commit" in "$pc"*) ;; *) md "> **Their commit differs from this tree's ($commit)**: they may not match the source." ;; esac
  state_put "bdir=$bdir" "prebuilt=1"
}
