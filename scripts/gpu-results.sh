#!/usr/bin/env bash
# gpu-results.sh: every GPU measurement of cplab in ONE command of at most 540 s on a GPU machine.
#
#   scripts/gpu-results.sh [all-in-one] [OUTDIR]       the one command (the default)
#   scripts/gpu-results.sh --dry-run [--measure-build]  here: print the plan; measure the build
#   scripts/gpu-results.sh build-test|attention|bench|all [OUTDIR]   the older phases (below)
#
# ON THE DEVICE (the device tool, one call, from a cold start):
#   1. here, first: scripts/gpu-bundle.sh   (.deps/: Eigen, doctest, CLI11, nlohmann-json headers and
#      .deps/COMMIT; 10.2 MiB, with the 3.3 MiB tree well under the 64 MiB carry limit: the dry run
#      checks it)
#   2. run with carry [".deps"], command `scripts/gpu-results.sh`, timeout_s 600
#      (the script stops itself by 540 s; the 60 s left are margin, not plan: with the machine's
#      start, one such call fits a 15-minute device budget, a second one does not)
#   3. commit $OUT's results.md as data/gpu/results-<gpu>-<commit>.md; the tarball holds the logs,
#      JSON and traces (cplab-viz --view timeline --trace).
# OUTDIR (default: $OUT, the device tool's folder, else out/gpu-results) gets three files, written as
# each step ends (names [A-Za-z0-9._-]; nothing else lands there):
#   results.md                 commit, GPU, nvcc, g++, date; per step its status (PASS / FAIL rc /
#                              TIMEOUT / SKIPPED (exit 77, no GPU) / NOT RUN), the build's warning
#                              count, ctest's result lines, the bench tables, a failed step's last 40 lines
#   steps.log                  one line per step start and end, with times
#   gpu-results-PHASE.tgz      every log, JSON and trace (and the two files above), folder gpu-results-PHASE/
# The tarball is repacked after every step and in an EXIT trap, so a kill still leaves what was done.
#
# all-in-one: configure (Ninja, Release, sm_90, warnings not errors), build ONLY the five targets the
# GPU steps run, the GPU tests (v3's cases in processes of their own: cuda_tests_v3, cp_gpu_tests_v3,
# bench_*_v3), cplab-bench attention (v2 fwd + bwd, v3 fwd) beside PyTorch SDPA flash and cuDNN, and
# cplab-bench cp for every mode (the ring at 64K tokens, the others at 32K). Every step has its own
# limit (`timeout -k 10`), clipped to what is left before 540 - 25 s (25 s kept for a killed step's
# grace, up to 13 s, and the packing). The limits sum to 505 s, so a step that hangs is cut at its
# own limit and the later ones still get theirs (a kill adds up to 13 s, which the last steps lose
# when every step runs to its limit: the last one is then cut short or NOT RUN, as results.md says).
# `--dry-run` prints the steps, their limits and estimates, and checks that sum; `--dry-run
# --measure-build` also configures and builds exactly those targets here
# (scripts/gpu-build-measure.sh, CPU seconds, scaled to 16 cores). The figures of the last dry run,
# with the date and the machine: data/gpu/dry-run.md.
# Older phases (each its own call; the build dir does not survive a cold start): build-test
# (full build, ctest -L cuda), attention (v2 full FA2/FA3 setup), bench (v3 fwd + every CP mode),
# each limited to 550 s; all = every step of the three, no limits (your own GPU machine).
# Environment: CPLAB_GPU_BUILD_DIR (default build-gpu), CUDA_ARCH (default 90), CPLAB_GPU_PHASE_LIMIT
#   (seconds; 0 = none), NCCL_HOME, CPLAB_GPU_SKIP_BUILD=1 (use the build dir as it is).
# The build is configured with -DCPLAB_WERROR=OFF (a newer host compiler's new warnings must not cost
# a GPU session its build); results.md counts the warnings instead. NCCL: the system's nccl.h, else
# the pip wheel nvidia-nccl-cu13, else no NcclComm. The commit: git, else .deps/COMMIT.
# Exit status: the number of failed, timed-out or not-run steps (0: all passed or skipped); 2 bad usage.
# What it is not: a CPU test (scripts/test.sh), a multi-GPU run (pass --backend nccl yourself), or a
# place for benchmark logic (bench/; this only runs it and files the output). The machinery (steps,
# time limits, OUTDIR's files) is scripts/gpu-results-lib.sh.
set -u -o pipefail
cd "$(dirname "$0")/.." || exit 2
root=$PWD

phases="all-in-one (default), build-test, attention, bench, all"
usage() { sed -n '4,6p' "$0" | sed 's/^# *//'; echo "phases: $phases (see the header of $0)"; }
dry=0 measure=0 phase=""
while [ $# -gt 0 ]; do
  case "$1" in
    --dry-run) dry=1 ;;
    --measure-build) measure=1 ;;
    -h | --help) usage; exit 0 ;;
    all-in-one | build-test | attention | bench | all) [ -z "$phase" ] || break; phase=$1 ;;
    -*) echo "gpu-results: unknown option '$1'; valid: --dry-run, --measure-build, --help" >&2; usage >&2; exit 2 ;;
    *) break ;;
  esac
  shift
done
phase=${phase:-all-in-one}
[ $# -le 1 ] || { echo "gpu-results: too many arguments: $*; valid phases: $phases" >&2; usage >&2; exit 2; }
if [ $# = 1 ] && [ ! -d "$1" ] && [ -z "${1##[a-z]*}" ] && [ "${1#*/}" = "$1" ] && [ "$1" = "${1%.*}" ]; then
  echo "gpu-results: unknown phase '$1'; valid phases: $phases (an OUTDIR that is a plain word: write ./$1)" >&2
  exit 2
fi
[ "$measure" = 0 ] || [ "$dry" = 1 ] || { echo "gpu-results: --measure-build needs --dry-run" >&2; exit 2; }
[ "$dry" = 0 ] || [ "$phase" = all-in-one ] || { echo "gpu-results: --dry-run plans the all-in-one run only" >&2; exit 2; }
bdir=${CPLAB_GPU_BUILD_DIR:-build-gpu}
jobs=$(nproc)
[ "$dry" = 0 ] || jobs=16  # the dry run shows the GPU machine's command
arch=${CUDA_ARCH:-90}
case "$phase" in
  all) limit=${CPLAB_GPU_PHASE_LIMIT:-0} ;;
  all-in-one) limit=${CPLAB_GPU_PHASE_LIMIT:-540} ;;
  *) limit=${CPLAB_GPU_PHASE_LIMIT:-550} ;;
esac
reserve=25  # seconds kept, when a run limit is set, for a timed-out step's kill (-k 10, then 3 s) and the packing
name=gpu-results-$phase

# What the all-in-one run builds and tests. The GPU tests are ctest -L cuda without those labelled
# host (tests/cuda/CMakeLists.txt: they need no GPU and CI runs them: the kernel emulation and its
# mutants, the host checks, bad arguments, the SASS report), so these targets are all they need;
# `--dry-run --measure-build` checks every selected test's program is among them.
gpu_targets=(cplab_cuda_tests cplab_comm_tests cplab_cp_gpu_tests cplab-comm-check cplab-bench)
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
    [ "$kind" = ctest ] && c="$c --stop-time <start + $((lim - 15)) s>"
    c=${c# } c=${c//|/\\|}  # a | would split the markdown table's cell
    plan_rows+=("| $title | $lim | $est | \`$c\` |")
    plan_sum=$((plan_sum + lim))
    [ "$key" != build ] || plan_build=$lim
  else
    run_step "$kind" "$title" "$key" "$lim" "$@"
  fi
}

configure_args() {  # the configure command's arguments (the lib's NCCL and commit, when run)
  local gen=() prefix=()
  command -v ninja >/dev/null 2>&1 && gen=(-G Ninja)
  [ -d .deps/usr ] && prefix=(-DCMAKE_PREFIX_PATH="$root/.deps/usr")
  cfg=("${gen[@]}" -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES="$arch" -DCPLAB_WERROR=OFF
       "${prefix[@]}" "${nccl_args[@]}" "${commit_args[@]}")
}
# configure (when needed) and build TARGETS (none: everything)
ensure_build() {
  local cl=$1 ce=$2 bl=$3 be=$4 tg=()
  shift 4
  [ $# = 0 ] || tg=(--target "$@")
  if [ "${CPLAB_GPU_SKIP_BUILD:-0}" = 1 ] && [ "$dry" = 0 ]; then
    md "" "## configure, build" "" "skipped: CPLAB_GPU_SKIP_BUILD=1 (the binaries in $bdir are used as they are)."
    echo "[$(now)] configure and build skipped: CPLAB_GPU_SKIP_BUILD=1" >>"$steplog"
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
  if [ "$dry" = 0 ] && [ "$last_rc" != 0 ]; then
    md "" "> **The build did not finish**: the steps below run whatever binaries exist in $bdir (missing ones" \
      "> fail at once; others may be stale)."
  fi
}

bench=$bdir/bench/cplab-bench
# cp 8 ranks, 32/8 heads, d 128, causal bf16; each run times 4 kinds x --iters per pass after --warmup:
# about 24 F + 13 B GPU seconds with F, B one forward, backward over all tokens on one GPU
cp_shape=(--cp 8 --heads 32 --kv-heads 8 --head-dim 128 --warmup 1 --iters 3)
# cp_modes LIMIT_P2P LIMIT_OTHER LIMIT_V3 SEQ_OTHER: the ring at 64K tokens (one attention call at 64K
# beside it: issue 23's 1.15x), the other modes at SEQ_OTHER, then the ring with kernel v3, forward
cp_modes() {
  local mode key extra lim seq
  for mode in p2p allgather a2a a2a+p2p; do
    key=cp_${mode//+/_} extra=() lim=$2 seq=$4
    [ "$mode" = p2p ] && lim=$1 seq=65536
    [ "$mode" = a2a+p2p ] && extra=(--hcp "2,4")
    step bench "cplab-bench cp --mode $mode${extra[*]:+ ${extra[*]}} --seq $seq" "$key" "$lim" "$(cp_estimate "$seq" both)" \
      "$bench" cp --mode "$mode" "${extra[@]}" --seq "$seq" "${cp_shape[@]}" --json "$work/$key.json" --trace "$work/${key}_trace.json"
  done
  step bench "cplab-bench cp --mode p2p --kernel v3 --pass fwd --seq 65536" cp_p2p_v3_fwd "$3" "$(cp_estimate 65536 fwd)" \
    "$bench" cp --mode p2p --kernel v3 --pass fwd --seq 65536 "${cp_shape[@]}" --json "$work/cp_p2p_v3_fwd.json" \
    --trace "$work/cp_p2p_v3_fwd_trace.json"
}
# the GPU seconds of one cp run, guessed from the issue's predicted rates (v2 forward 200, backward 80
# TFLOP/s; causal FLOPs 4 h s^2 d / 2 forward, 2.5x that backward): 24 F + 13 B, or 13 F forward only
cp_estimate() {
  awk -v s="$1" -v p="$2" 'BEGIN { f = 4 * 32 * s * s * 128 / 2; F = f / 200e12; B = 2.5 * f / 80e12
    t = (p == "fwd") ? 13 * F : 24 * F + 13 * B
    printf "%.0f s GPU + set-up (guess from the predicted rates; never run)", t }'
}

# all-in-one: the limits sum to 505 s, 10 s under the 515 s before the reserve (checked by --dry-run,
# whose last output, with the build measured, is data/gpu/dry-run.md). The GPU steps' estimates are
# guesses: none of them has run on a GPU yet.
# shellcheck disable=SC2054  # the commas are cplab-bench list values
attn_shapes=(--head-dim 64,128 --seq 2048,8192 --causal both)  # 8 shapes: the FA2/FA3 anchors' d and 8K
plan_all_in_one() {
  ensure_build 30 "10-11 s wall, 4 CPU s on the busy 2-core dev box" \
    90 "16-31 s: 260-287 CPU s in two runs on the 2-core dev box, scaled to 16 cores (below)" "${gpu_targets[@]}"
  step ctest "GPU tests (ctest -L cuda, no v3, no CPU-only tests)" ctest_gpu 95 "30-80 s (guess), 4 at a time" \
    env OMP_NUM_THREADS=4 ctest --test-dir "$bdir" "${gpu_sel[@]}" -j 4 --output-on-failure --timeout 80
  # cp_gpu_tests_v3: 14 CP runs at 1600 tokens, d 64/128, each checked against a dense double reference
  # (`cplab run` of one such shape: 2.4 CPU s here for the CP simulation and the dense oracle together)
  step ctest "GPU tests of kernel v3 (own processes)" ctest_v3 45 "10-30 s (guess); a v3 stall traps in 10 s" \
    env OMP_NUM_THREADS=4 ctest --test-dir "$bdir" "${v3_sel[@]}" -j 4 --output-on-failure --timeout 30
  step bench "cplab-bench attention (kernel v2, fwd + bwd)" attention_v2 70 \
    "30-60 s (guess): 8 shapes x 2 passes, SDPA baseline and yardstick (2 torch starts)" \
    "$bench" attention "${attn_shapes[@]}" --json "$work/attention_v2.json"
  step bench "cplab-bench attention --kernel v3 --pass fwd" attention_v3_fwd 35 "15-30 s (guess): as above, forward only" \
    "$bench" attention --kernel v3 --pass fwd "${attn_shapes[@]}" --json "$work/attention_v3_fwd.json"
  cp_modes 45 25 20 32768
}

# the older phases, as before (each a call of its own, 550 s; all: no limits)
plan_phase() {
  case "$1" in
    build-test | all) ensure_build 60 "15-30 s" 300 "full build" ;;
    *) ensure_build 60 "15-30 s" 300 "< 10 s on the machine that ran build-test" ;;
  esac
  case "$1" in build-test | all)
    step ctest "ctest -L cuda" ctest_cuda 420 "1-3 min" ctest --test-dir "$bdir" -L cuda --output-on-failure --timeout 120 ;;
  esac
  case "$1" in attention | all)
    step bench "cplab-bench attention (kernel v2, fwd + bwd)" attention_v2 420 "2-4 min" \
      "$bench" attention --json "$work/attention_v2.json" ;;
  esac
  case "$1" in bench | all)
    step bench "cplab-bench attention --kernel v3 --pass fwd" attention_v3_fwd 150 "1-2 min" \
      "$bench" attention --kernel v3 --pass fwd --json "$work/attention_v3_fwd.json"
    cp_modes 80 80 50 65536 ;;
  esac
}

# ---- dry run: the plan, checked against the run's limit; with --measure-build, the build measured
if [ "$dry" = 1 ]; then
  nccl_args=() commit_args=() work="\$WORK" last_rc=0
  echo "# scripts/gpu-results.sh --dry-run$([ "$measure" = 1 ] && echo ' --measure-build')"
  echo
  echo "$(date -u +%Y-%m-%dT%H:%M:%SZ) on $(hostname) ($(nproc) cores), commit $(git rev-parse --short HEAD 2>/dev/null || echo unknown)."
  echo "The all-in-one run's steps, in order, each under \`timeout -k 10 LIMIT\` (LIMIT clipped to what is"
  echo "left of $limit - $reserve s); the configure adds the NCCL and commit arguments found on the machine."
  echo
  plan_all_in_one
  echo "| step | limit s | estimate | command |"
  echo "| --- | ---: | --- | --- |"
  printf '%s\n' "${plan_rows[@]}"
  echo
  echo "Limits summed: $plan_sum s of the $((limit - reserve)) s before the reserve ($limit s in all; $reserve s kept"
  echo "for a timed-out step's kill grace, up to 13 s, and the packing)."
  rc=0
  if [ "$plan_sum" -gt $((limit - reserve)) ]; then
    echo "**OVER**: the limits exceed the run's time; a late step would be cut short or not run." && rc=1
  fi
  echo
  echo "## The carry: .deps and the tree, against the device tool's 64 MiB"
  echo
  if [ -d .deps/usr ]; then
    deps=$(du -sb .deps | cut -f1)
    tree=$(git ls-files -co --exclude-standard -z | du -cb --files0-from=- 2>/dev/null | tail -1 | cut -f1)
    awk -v d="$deps" -v t="$tree" 'BEGIN { m = 1048576; printf "- .deps (scripts/gpu-bundle.sh): %.1f MiB; the tree (tracked and untracked files git does not ignore): %.1f MiB; together %.1f MiB of 64 MiB\n", d / m, t / m, (d + t) / m }'
    [ $((deps + tree)) -le $((64 * 1048576)) ] || { echo "**OVER the 64 MiB carry limit**"; rc=1; }
  else
    echo "No .deps here: run scripts/gpu-bundle.sh first (the device call carries it)." && rc=1
  fi
  mdir=$root/build-gpu-dry  # the measured build: exactly the targets above
  echo
  echo "## The build measured: configure + exactly the targets above, here"
  echo
  if [ "$measure" = 1 ]; then  # kept in $mdir/measure.md for later dry runs
    configure_args
    mtmp=$(mktemp) || exit 2
    scripts/gpu-build-measure.sh "$mdir" 16 "${cfg[@]}" -- "${gpu_targets[@]}" >"$mtmp" || { cat "$mtmp"; rm -f "$mtmp"; exit 1; }
    { echo "By \`scripts/gpu-results.sh --dry-run --measure-build\` at commit $(git rev-parse --short HEAD 2>/dev/null || echo unknown)."
      echo; cat "$mtmp"; } >"$mdir/measure.md"
    rm -f "$mtmp"
  fi
  if [ -s "$mdir/measure.md" ]; then
    cat "$mdir/measure.md"
    upper=$(sed -n 's/^BUILD_UPPER_S=//p' "$mdir/measure.md")
    echo
    if [ -n "$upper" ] && [ "$upper" -le "$plan_build" ]; then
      echo "The build step's limit, $plan_build s, covers the scaled upper bound, $upper s."
    else
      echo "**The build step's limit, $plan_build s, is under the scaled upper bound, ${upper:-unknown} s.**" && rc=1
    fi
  else
    echo "Not measured: run with --measure-build."
  fi
  echo
  echo "## The tests the two ctest steps select, and their programs"
  echo
  if [ ! -s "$mdir/build.time" ]; then  # /usr/bin/time writes it when the build ends
    echo "Not checked: no finished measured build in $mdir (run with --measure-build)."
  else
    cmake "$mdir" >/dev/null || exit 1  # the tests as the CMakeLists.txt say today
    echo "In $mdir, built by the measurement (finished $(date -u -r "$mdir/build.time" +%Y-%m-%dT%H:%M:%SZ)):"
    echo
    for sel in gpu_sel v3_sel; do
      declare -n a=$sel
      # shellcheck disable=SC2016  # the Python is single-quoted
      ctest --test-dir "$mdir" "${a[@]}" --show-only=json-v1 | python3 -c '
import json, os, sys
rc = 0
for t in json.load(sys.stdin)["tests"]:
    cmd = t.get("command") or ["?"]
    # the programs: the command, the -DEXE= of expect_exit.cmake, any path in the build dir (for mpiexec)
    progs = [cmd[0]] + [a[6:] for a in cmd if a.startswith("-DEXE=")]
    progs += [a for a in cmd[1:] if a.startswith(sys.argv[2] + "/") and not a.endswith((".json", ".cmake"))]
    ok = all(os.path.isfile(p) for p in progs)
    name, prog, state = t["name"], ", ".join(os.path.basename(p) for p in progs), "built" if ok else "NOT BUILT"
    print(f"- {sys.argv[1]}: `{name}` runs `{prog}`: {state}")
    rc |= not ok
sys.exit(rc)' "$sel" "$mdir" || { echo "**a selected test has no built program**"; rc=1; }
    done
  fi
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
  md "- torch: the bench steps' headers (the SDPA baseline's own line)"
}
echo "[$(now)] $phase, OUTDIR $out, work $work" >>"$steplog"
pack

if [ "$phase" = all-in-one ]; then plan_all_in_one; else plan_phase "$phase"; fi

failed=$((n_fail + n_timeout + n_notrun))
md "" "## summary" "" "$n_pass passed, $n_fail failed, $n_timeout timed out, $n_skip skipped (no GPU), $n_notrun not run;" \
  "$SECONDS s in all. Logs, JSON and traces: \`$name.tgz\` (folder \`$name/\`)."
echo "[$(now)] done: $n_pass passed, $n_fail failed, $n_timeout timed out, $n_skip skipped, $n_notrun not run, $SECONDS s" >>"$steplog"
finished=1
echo "gpu-results: $phase: $n_pass passed, $n_fail failed, $n_timeout timed out, $n_skip skipped, $n_notrun not run; $out/results.md, $tarball" >&2
exit "$failed"
