#!/usr/bin/env bash
# gpu-results.sh: every GPU measurement of cplab, in two device calls that fit a 15-minute device budget.
#
#   bash scripts/gpu-results.sh [call1] [OUTDIR]                  call 1 (the default): at most 360 s
#   bash scripts/gpu-results.sh diagnose [--failed KEYS] [OUTDIR] call 2: what call 1 printed, at most 240 s
#   bash scripts/gpu-results.sh all [OUTDIR]                      your own GPU machine: everything, no limits
#   bash scripts/gpu-results.sh --dry-run [--measure-build] [--plan-only]   here: the plan of both calls
#
# ON THE DEVICE (the device tool; 15 minutes in all: the machine's start, 1-2 min, every call, the idle
# time between them; no machine starts with under 4 minutes left):
#   1. here, first: bash scripts/gpu-bundle.sh --prebuilt (.deps/: the header-only dependencies, the
#      commit, and the prebuilt fallback; the dry run checks the carry against 64 MiB)
#   2. call 1: carry [".deps"], command `bash scripts/gpu-results.sh`, timeout_s 420. It stops itself by
#      360 s and prints, last, the recipe of call 2 (also at the end of results.md).
#   3. call 2, AT ONCE (the machine stays warm 30 s; its build folder and out/gpu-results.state, which
#      says what failed, stay with it): the recipe's command, carry [".deps"], timeout_s 270. It reruns
#      only what failed with CUDA_LAUNCH_BLOCKING=1 and runs compute-sanitizer on one failing case;
#      when nothing failed, it runs the 64K ring. On a fresh machine it builds first (the recipe's
#      --failed names the steps, so it needs no state).
#   4. give the machine back; commit each call's results.md as data/gpu/results-<gpu>-<commit>-callN.md.
# Call 1's steps: preflight (versions, nvidia-smi, torch), configure, build of the five programs the GPU
# steps run (if it fails: the prebuilt programs of .deps/prebuilt.tar.xz, and results.md says so),
# ldd of those programs, the GPU tests, kernel v3's tests, cplab-bench attention (v2, 3 iterations),
# v3's forward (only if v3's tests passed; no yardstick), cplab-bench cp (the ring at 32K tokens, the
# other modes at 16K; v3's ring only if v3's tests passed), and two inference steps (issue 37:
# pass-Q, 1K new tokens over a 32K cache; decode-ag, one new token over a 32K interleaved cache). Each step runs under `timeout -k 10` at its
# own limit, clipped to what is left before the run's limit less a 25 s reserve (a killed step's grace
# and the packing); the limits sum to at most that (the dry run checks it, and a ctest test checks the
# dry run).
# OUTDIR (default: $OUT, the device tool's folder, else out/gpu-results) gets three files, written as
# each step ends: results.md (commit, GPU, versions; per step its status PASS / FAIL rc / TIMEOUT /
# SKIPPED (exit 77, no GPU) / NOT RUN, the build's warnings, ctest's result lines, the bench tables, a
# failed step's last 40 lines; last, call 2's recipe), steps.log (one line per step start and end) and
# gpu-results-PHASE.tgz (every log, JSON and trace; repacked after every step and in an EXIT trap).
# Environment: CPLAB_GPU_BUILD_DIR (default build-gpu), CUDA_ARCH (default 90), CPLAB_GPU_PHASE_LIMIT
#   (seconds for the whole call; 0 = none), CPLAB_GPU_PREBUILT=force (the prebuilt programs without
#   trying the build: a rehearsal), CPLAB_GPU_SKIP_BUILD=1 (the build folder's programs as they are),
#   CPLAB_GPU_STATE (default out/gpu-results.state), CPLAB_SANITIZER_TOOL (default memcheck), NCCL_HOME.
# Exit status: the number of failed, timed-out or not-run steps (0: all passed, skipped or gated); 2 bad usage.
# What it is not: a CPU test (scripts/test.sh), a multi-GPU run (pass --backend nccl yourself), or a
# place for benchmark logic (bench/). The step machinery: scripts/gpu-results-lib.sh; the dry run's
# report: scripts/gpu-results-dry.sh; the diagnose plan: scripts/gpu-results-diagnose.sh.
set -u -o pipefail
cd "$(dirname "$0")/.." || exit 2
root=$PWD

phases="call1 (default), diagnose, all"
usage() { sed -n '4,7p' "$0" | sed 's/^# *//'; echo "phases: $phases (see the header of $0)"; }
dry=0 measure=0 plan_only=0 phase="" failed_arg=""
while [ $# -gt 0 ]; do
  case "$1" in
    --dry-run) dry=1 ;;
    --measure-build) measure=1 ;;
    --plan-only) plan_only=1 ;;
    --failed) [ $# -ge 2 ] || { echo "gpu-results: --failed needs a value (step keys, comma-separated)" >&2; exit 2; }
      failed_arg=$2; shift ;;
    --failed=*) failed_arg=${1#--failed=} ;;
    -h | --help) usage; exit 0 ;;
    call1 | diagnose | all) [ -z "$phase" ] || break; phase=$1 ;;
    -*) echo "gpu-results: unknown option '$1'; valid: --dry-run, --measure-build, --plan-only, --failed, --help" >&2
      usage >&2; exit 2 ;;
    *) break ;;
  esac
  shift
done
phase=${phase:-call1}
[ $# -le 1 ] || { echo "gpu-results: too many arguments: $*; valid phases: $phases" >&2; usage >&2; exit 2; }
if [ $# = 1 ] && [ ! -d "$1" ] && [ -z "${1##[a-z]*}" ] && [ "${1#*/}" = "$1" ] && [ "$1" = "${1%.*}" ]; then
  echo "gpu-results: unknown phase '$1'; valid phases: $phases (an OUTDIR that is a plain word: write ./$1)" >&2
  exit 2
fi
[ "$measure" = 0 ] || [ "$dry" = 1 ] || { echo "gpu-results: --measure-build needs --dry-run" >&2; exit 2; }
[ "$plan_only" = 0 ] || [ "$dry" = 1 ] || { echo "gpu-results: --plan-only needs --dry-run" >&2; exit 2; }
[ "$dry" = 0 ] || [ "$phase" = call1 ] || { echo "gpu-results: --dry-run plans call 1 and call 2 together; name no phase" >&2; exit 2; }
[ -z "$failed_arg" ] || [ "$phase" = diagnose ] || { echo "gpu-results: --failed belongs to the diagnose phase" >&2; exit 2; }
[[ $failed_arg =~ ^[a-z0-9_,]*$ ]] || { echo "gpu-results: --failed '$failed_arg': expected step keys such as ctest_v3,cp_p2p" >&2; exit 2; }
bdir=${CPLAB_GPU_BUILD_DIR:-build-gpu}
jobs=$(nproc)
[ "$dry" = 0 ] || jobs=16  # the dry run shows the GPU machine's command
arch=${CUDA_ARCH:-90}
call1_limit=${CPLAB_GPU_CALL1_LIMIT:-360}  # the call's own limit; the test of the check lowers it
diagnose_limit=240
case "$phase" in
  all) limit=${CPLAB_GPU_PHASE_LIMIT:-0} ;;
  call1) limit=${CPLAB_GPU_PHASE_LIMIT:-$call1_limit} ;;
  diagnose) limit=${CPLAB_GPU_PHASE_LIMIT:-$diagnose_limit} ;;
esac
[[ $limit =~ ^[0-9]+$ ]] || { echo "gpu-results: CPLAB_GPU_PHASE_LIMIT '$limit' is not a number of seconds" >&2; exit 2; }
reserve=25  # seconds kept, when a run limit is set, for a timed-out step's kill (-k 10, then 3 s) and the packing
name=gpu-results-$phase
# git-ignored: stays on a warm machine for the diagnose call (call 1 writes it)
state=${CPLAB_GPU_STATE:-$root/out/gpu-results.state}

# The five programs the GPU steps run (gpu_targets, gpu_programs); the GPU tests are ctest -L cuda without
# those labelled host (tests/cuda/CMakeLists.txt: they need no GPU and CI runs them); `--dry-run
# --measure-build` checks every selected test's program is among them.
# shellcheck source=scripts/gpu-targets.sh
. "$root/scripts/gpu-targets.sh"
gpu_sel=(-L cuda -LE host -E '_v3$')   # the GPU tests but v3's
v3_sel=(-L cuda -LE host -R '_v3$')    # v3's, each its own process

# ---- the steps: step KIND TITLE KEY LIMIT ESTIMATE COMMAND...: run it, or (dry run) list it
plan_rows=() plan_sum=0 plan_build=0
step() {
  local kind=$1 title=$2 key=$3 lim=$4 est=$5
  shift 5
  if [ "$dry" = 1 ]; then
    local c="" a
    for a in "$@"; do  # as a shell would need it, work-folder paths as in the tarball
      a=${a//$work/$name}
      [[ $a =~ [^][A-Za-z0-9_./=,:+-] ]] && a="'$a'"
      c+=" $a"
    done
    [ "$kind" = ctest ] && c="$c --stop-time <start + $((lim - 8)) s>"
    c=${c# } c=${c//|/\\|}  # a | would split the markdown table's cell
    plan_rows+=("| $title | \`$key\` | $lim | $est | \`$c\` |")
    plan_sum=$((plan_sum + lim))
    [ "$key" != build ] || plan_build=$lim
  else
    run_step "$kind" "$title" "$key" "$lim" "$@"
  fi
}
# all_passed KEY: ctest step KEY passed, with at least one test and none skipped
all_passed() { [ "${key_status[$1]:-}" = PASS ] && [ "${ctest_passed[$1]:-0}" -gt 0 ] && [ "${ctest_skipped[$1]:-0}" = 0 ]; }
# gated KEY NEED TITLE: false (run it) when step NEED's tests all passed; else the step is gated, true
gated() {
  [ "$dry" = 1 ] && return 1
  all_passed "$2" && return 1
  gate_step "$1" "$3" "it runs only when $2 passed every test (it: ${key_status[$2]:-not run}, ${ctest_passed[$2]:-0} passed, ${ctest_skipped[$2]:-0} skipped)"
  return 0
}

configure_args() {  # the configure command's arguments (the lib's NCCL and commit, when run)
  local gen=() prefix=()
  command -v ninja >/dev/null 2>&1 && gen=(-G Ninja)
  [ -d .deps/usr ] && prefix=(-DCMAKE_PREFIX_PATH="$root/.deps/usr")
  cfg=("${gen[@]}" -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES="$arch" -DCPLAB_WERROR=OFF
       "${prefix[@]}" "${nccl_args[@]}" "${commit_args[@]}")
}
# ensure_build CONF_LIMIT CONF_EST BUILD_LIMIT BUILD_EST [TARGETS]: configure (when needed) and build;
# when that fails (or CPLAB_GPU_PREBUILT=force), the prebuilt programs
ensure_build() {
  local cl=$1 ce=$2 bl=$3 be=$4 tg=()
  shift 4
  [ $# = 0 ] || tg=(--target "$@")
  if [ "$dry" = 0 ] && [ "${CPLAB_GPU_SKIP_BUILD:-0}" = 1 ]; then
    md "" "## configure, build" "" "skipped: CPLAB_GPU_SKIP_BUILD=1 (the programs in $bdir are used as they are)."
    state_put "bdir=$bdir"
    return
  fi
  if [ "$dry" = 0 ] && [ "${CPLAB_GPU_PREBUILT:-}" = force ]; then
    md "" "## configure, build" "" "skipped: CPLAB_GPU_PREBUILT=force (the prebuilt programs, without trying the build)."
    use_prebuilt "CPLAB_GPU_PREBUILT=force" || md "" "> **No programs to run**: the steps below fail at once."
    return
  fi
  configure_args
  if [ "$dry" = 0 ] && { [ -f "$bdir/build.ninja" ] || [ -f "$bdir/Makefile" ]; } &&
    grep -q '^CPLAB_WERROR:BOOL=OFF$' "$bdir/CMakeCache.txt" 2>/dev/null; then
    md "" "## configure" "" "skipped: $bdir is configured already (the build step reruns CMake if a CMakeLists.txt changed)."
    echo "[$(now)] configure skipped: $bdir is configured" >>"$steplog"
  else
    step configure configure configure "$cl" "$ce" cmake -S . -B "$bdir" "${cfg[@]}"
  fi
  step build build build "$bl" "$be" cmake --build "$bdir" -j "$jobs" "${tg[@]}"
  if [ "$dry" = 0 ]; then
    state_put "bdir=$bdir"
    [ "$last_rc" = 0 ] || use_prebuilt "the build on this machine failed (exit $last_rc)" ||
      md "" "> **The build did not finish**: the steps below run whatever programs exist in $bdir (missing ones" \
        "> fail at once; others may be stale)."
  fi
}

# ---- the benchmarks: bench_cmd KEY sets title and cmd (the bench's command for step KEY)
# cp: 8 ranks, 32/8 heads, d 128, causal bf16; each run times 4 kinds x --iters per pass after --warmup
cp_shape=(--cp 8 --heads 32 --kv-heads 8 --head-dim 128 --warmup 1 --iters 3)
# shellcheck disable=SC2054  # the commas are cplab-bench list values
attn_shapes=(--head-dim 64,128 --seq 2048,8192 --causal both --warmup 1 --iters 3)  # 8 shapes, FA2/FA3's d
cp_seq_p2p=32768 cp_seq_other=16384 cp_kv_cache=32768
bench_cmd() {
  local b=$bdir/bench/cplab-bench mode extra=() seq=$cp_seq_other
  case "$1" in
    attention_v2) title="cplab-bench attention (kernel v2, fwd + bwd, 3 iterations)"
      cmd=("$b" attention "${attn_shapes[@]}" --json "$work/$1.json") ;;
    attention_v3_fwd) title="cplab-bench attention --kernel v3 --pass fwd (no yardstick)"
      cmd=("$b" attention --kernel v3 --pass fwd "${attn_shapes[@]}" --no-sdpa-error --json "$work/$1.json") ;;
    cp_p2p_v3_fwd | cp_p2p_64k | cp_p2p_v3_fwd_64k)
      seq=$cp_seq_p2p extra=(--kernel v3 --pass fwd)
      case "$1" in cp_p2p_64k) seq=65536 extra=() ;; cp_p2p_v3_fwd_64k) seq=65536 ;; esac
      title="cplab-bench cp --mode p2p${extra[*]:+ ${extra[*]}} --seq $seq"
      cmd=("$b" cp --mode p2p "${extra[@]}" --seq "$seq" "${cp_shape[@]}" --json "$work/$1.json" --trace "$work/${1}_trace.json") ;;
    cp_p2p | cp_allgather | cp_a2a | cp_a2a_p2p)
      mode=${1#cp_} mode=${mode/a2a_p2p/a2a+p2p}
      [ "$mode" = p2p ] && seq=$cp_seq_p2p
      # shellcheck disable=SC2054  # 2,4 is one value
      [ "$mode" = a2a+p2p ] && extra=(--hcp 2,4)
      title="cplab-bench cp --mode $mode${extra[*]:+ ${extra[*]}} --seq $seq"
      cmd=("$b" cp --mode "$mode" "${extra[@]}" --seq "$seq" "${cp_shape[@]}" --json "$work/$1.json" --trace "$work/${1}_trace.json") ;;
    cp_pass_q | cp_decode_ag)  # inference (issue 37): T new tokens over a cache of P = cp_kv_cache
      mode=${1#cp_} mode=${mode/_/-} extra=(--seq 1024)
      [ "$mode" = decode-ag ] && extra=(--seq 1 --cache-layout interleaved)
      title="cplab-bench cp --mode $mode --kv-cache $cp_kv_cache ${extra[*]}"
      cmd=("$b" cp --mode "$mode" --kv-cache "$cp_kv_cache" "${extra[@]}" "${cp_shape[@]}" --json "$work/$1.json") ;;
    *) return 1 ;;
  esac
}
bench_keys=(  # call 2 reads them (scripts/gpu-results-diagnose.sh)
  attention_v2 attention_v3_fwd cp_p2p cp_allgather cp_a2a cp_a2a_p2p cp_p2p_v3_fwd cp_pass_q cp_decode_ag)
# the GPU seconds of one cp run, guessed from the predicted rates (v2 forward 200, backward 80 TFLOP/s;
# causal FLOPs 4 h s^2 d / 2 forward, 2.5x that backward): 24 F + 13 B, or 13 F forward only
cp_estimate() {
  awk -v s="$1" -v p="$2" 'BEGIN { f = 4 * 32 * s * s * 128 / 2; F = f / 200e12; B = 2.5 * f / 80e12
    t = (p == "fwd") ? 13 * F : 24 * F + 13 * B
    printf "%.1f s GPU + set-up (guess from the predicted rates; never run)", t }'
}
# an inference step's GPU seconds, guessed the same way (forward 200 TFLOP/s, 4 h d per visible pair of
# T queries over P cached keys and themselves, 13 forwards per run)
infer_estimate() {
  awk -v t="$1" -v p="$2" 'BEGIN { f = 4 * 32 * 128 * (t * p + t * (t + 1) / 2); printf "%.2f s GPU + set-up (guess from the predicted rates; never run)", 13 * f / 200e12 }'
}
bench_step() {  # bench_step KEY LIMIT ESTIMATE [PREFIX...]: the bench of KEY as a step
  local key=$1 lim=$2 est=$3
  shift 3
  bench_cmd "$key"
  step bench "$title" "$key" "$lim" "$est" "$@" "${cmd[@]}"
}

# ---- call 1: the limits sum to 335 s, the 360 s before the 25 s reserve (checked by --dry-run; its last
# output is data/gpu/dry-run.md). The GPU steps' estimates are guesses: none has run on a GPU yet.
plan_call1() {
  step preflight "preflight: versions, nvidia-smi, torch" preflight 15 "2-10 s (a cold torch import)" \
    bash scripts/gpu-preflight.sh versions
  ensure_build 20 "4 s CPU here; cmake's CUDA checks" \
    50 "22-33 s: 353 CPU s on the busy 2-core dev box, scaled to 16 cores (data/gpu/dry-run.md)" "${gpu_targets[@]}"
  step preflight "ldd of the five programs" ldd 5 "< 1 s" bash scripts/gpu-preflight.sh ldd "$bdir" "${gpu_programs[@]}"
  step ctest "GPU tests (ctest -L cuda, no v3, no CPU-only tests)" ctest_gpu 75 "30-70 s (guess), 4 at a time" \
    env OMP_NUM_THREADS=4 ctest --test-dir "$bdir" "${gpu_sel[@]}" -j 4 --output-on-failure --timeout 55
  # cp_gpu_tests_v3: 14 CP runs at 1600 tokens, each checked against a dense double reference
  step ctest "GPU tests of kernel v3 (own processes)" ctest_v3 35 "10-25 s (guess); a v3 stall traps in 10 s" \
    env OMP_NUM_THREADS=4 ctest --test-dir "$bdir" "${v3_sel[@]}" -j 4 --output-on-failure --timeout 27
  [ "$dry" = 1 ] || ! all_passed ctest_v3 || state_put v3ok=1  # call 2's 64K v3 ring reads it
  bench_step attention_v2 36 "20-35 s (guess): 8 shapes x 2 passes, SDPA baseline and yardstick (2 torch starts)"
  gated attention_v3_fwd ctest_v3 "cplab-bench attention --kernel v3 --pass fwd" ||
    bench_step attention_v3_fwd 20 "8-15 s (guess): 8 shapes forward, SDPA baseline"
  bench_step cp_p2p 17 "$(cp_estimate $cp_seq_p2p both)"
  bench_step cp_allgather 11 "$(cp_estimate $cp_seq_other both)"
  bench_step cp_a2a 11 "$(cp_estimate $cp_seq_other both)"
  bench_step cp_a2a_p2p 11 "$(cp_estimate $cp_seq_other both)"
  bench_step cp_pass_q 9 "$(infer_estimate 1024 $cp_kv_cache)"
  bench_step cp_decode_ag 7 "$(infer_estimate 1 $cp_kv_cache)"
  gated cp_p2p_v3_fwd ctest_v3 "cplab-bench cp --mode p2p --kernel v3 --pass fwd" ||
    bench_step cp_p2p_v3_fwd 13 "$(cp_estimate $cp_seq_p2p fwd)"
}

# ---- all: your own GPU machine, no limits: the full build, every cuda test, the full FA2/FA3 setup, 64K
plan_all() {
  step preflight "preflight: versions, nvidia-smi, torch" preflight 0 "" bash scripts/gpu-preflight.sh versions
  ensure_build 0 "" 0 "full build"
  step ctest "ctest -L cuda" ctest_cuda 0 "" ctest --test-dir "$bdir" -L cuda --output-on-failure --timeout 600
  step bench "cplab-bench attention (kernel v2, the full FA2/FA3 setup)" attention_v2 0 "" \
    "$bdir/bench/cplab-bench" attention --json "$work/attention_v2.json"
  step bench "cplab-bench attention --kernel v3 --pass fwd" attention_v3_fwd 0 "" \
    "$bdir/bench/cplab-bench" attention --kernel v3 --pass fwd --json "$work/attention_v3_fwd.json"
  cp_seq_p2p=65536 cp_seq_other=65536 cp_kv_cache=131072
  local k
  for k in cp_p2p cp_allgather cp_a2a cp_a2a_p2p cp_pass_q cp_decode_ag; do bench_step "$k" 0 ""; done
  bench_step cp_p2p_v3_fwd_64k 0 ""
}

# shellcheck source=scripts/gpu-results-diagnose.sh
. "$root/scripts/gpu-results-diagnose.sh"

if [ "$dry" = 1 ]; then
  # shellcheck source=scripts/gpu-results-dry.sh
  . "$root/scripts/gpu-results-dry.sh"
  exit "$rc"
fi

# ---- the run
out=${1:-${OUT:-out/gpu-results}}  # out/ is git-ignored
mkdir -p "$out" || exit 2
out=$(cd "$out" && pwd)
# shellcheck source=scripts/gpu-results-lib.sh
. "$root/scripts/gpu-results-lib.sh"
{
  md "# cplab GPU results: $phase" ""
  md "- commit: $commit"
  md "- GPU: ${gpu:-none (no nvidia-smi or no GPU)}"
  md "- nvcc: $(nvcc --version 2>/dev/null | grep -o 'release .*' || echo 'not found')"
  md "- g++: $(g++ --version 2>/dev/null | head -1 || echo 'not found')"
  md "- cmake: $(cmake --version 2>/dev/null | head -1); ninja: $(ninja --version 2>/dev/null || echo 'not found')"
  md "- NCCL: $nccl_note"
  md "- date: $(date -u +%Y-%m-%dT%H:%M:%SZ); host: $(hostname); $(nproc) cores"
  md "- run: $phase; build dir: $bdir (CUDA_ARCH $arch, CPLAB_WERROR=OFF); limit: $([ "$limit" -gt 0 ] && echo "$limit s" || echo none)"
  md "- torch: the preflight step's log, and the bench steps' headers (the SDPA baseline's own line)"
}
echo "[$(now)] $phase, OUTDIR $out, work $work" >>"$steplog"
pack

case "$phase" in
  call1) mkdir -p "$(dirname "$state")" && : >"$state"; state_put "call1=$(date -u +%Y-%m-%dT%H:%M:%SZ)"; plan_call1 ;;
  diagnose) run_diagnose ;;
  all) plan_all ;;
esac

n_bad=$((n_fail + n_timeout + n_notrun))
md "" "## summary" "" "$n_pass passed, $n_fail failed, $n_timeout timed out, $n_skip skipped (no GPU), $n_notrun not run," \
  "$n_gated gated (not run because a step they need did not pass); $SECONDS s in all. Logs, JSON and traces:" \
  "\`$name.tgz\` (folder \`$name/\`)."
echo "[$(now)] done: $n_pass passed, $n_fail failed, $n_timeout timed out, $n_skip skipped, $n_notrun not run, $n_gated gated, $SECONDS s" >>"$steplog"
[ "$phase" = call1 ] && print_recipe
finished=1
echo "gpu-results: $phase: $n_pass passed, $n_fail failed, $n_timeout timed out, $n_skip skipped, $n_notrun not run, $n_gated gated; $out/results.md, $tarball" >&2
exit "$n_bad"
