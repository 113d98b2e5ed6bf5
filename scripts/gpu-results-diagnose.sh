# shellcheck shell=bash disable=SC2034,SC2154  # sourced by scripts/gpu-results.sh, whose variables it reads
# gpu-results-diagnose.sh: call 2 of scripts/gpu-results.sh (sourced by it, not run): the recipe call 1
# prints, and the diagnose run.
#
# What it is: print_recipe (the end of call 1: what failed, and the exact device call that diagnoses
# it), run_diagnose (call 2: only what failed again, with CUDA_LAUNCH_BLOCKING=1, then compute-sanitizer
# on ONE failing case: the first failing doctest case of a failed test, or the smoke test (tests/cuda)
# of a failed benchmark's kind; when nothing failed, the ring at 64K tokens and attention at 16K / 32K),
# and plan_diagnose (the same plan for the dry run). What failed comes from --failed KEYS (what the
# recipe names; enough on a fresh machine, which builds first) or else from out/gpu-results.state, which
# call 1 left on the machine (with the failed tests and their first failing cases).
# What it is not: a second copy of call 1's steps (bench_cmd and the ctest selections are call 1's).

diag_known=(preflight configure build prebuilt ldd ctest_gpu ctest_v3 "${bench_keys[@]}")
# a failed benchmark's smallest relative: its smoke test in tests/cuda/CMakeLists.txt
declare -A diag_smoke=([attention_v2]=bench_attention_smoke [attention_v3_fwd]=bench_attention_smoke_v3
  [cp_p2p]=bench_cp_smoke [cp_allgather]=bench_cp_smoke_allgather [cp_a2a]=bench_cp_smoke_a2a
  [cp_a2a_p2p]=bench_cp_smoke_hcp [cp_p2p_v3_fwd]=bench_cp_smoke_v3 [cp_pass_q]=bench_cp_smoke_pass_q
  [cp_decode_ag]=bench_cp_smoke_decode_ag)
for _k in ${failed_arg//,/ }; do
  [[ " ${diag_known[*]} " == *" $_k "* ]] ||
    { echo "gpu-results: --failed: unknown step key '$_k'; keys: ${diag_known[*]}" >&2; exit 2; }
done
san_tool=${CPLAB_SANITIZER_TOOL:-memcheck}
[[ $san_tool =~ ^(memcheck|racecheck|synccheck|initcheck)$ ]] ||
  { echo "gpu-results: CPLAB_SANITIZER_TOOL '$san_tool' is not one of memcheck, racecheck, synccheck, initcheck" >&2; exit 2; }

# diag_sanitize TEST [CASE]: compute-sanitizer on TEST's command (its doctest filter replaced by CASE)
diag_sanitize() {
  local test=$1 case=${2:-} envs=() tcmd=() a lines
  if [ "$dry" = 1 ]; then
    step sanitize "compute-sanitizer --tool $san_tool on one failing case" sanitize 90 \
      "the case alone: 10-60 s (memcheck slows kernels 10-100x)" \
      compute-sanitizer --tool "$san_tool" --error-exitcode 99 --print-limit 30 "<$test>" "-tc=<its first failing case>"
    return
  fi
  lines=$(python3 "$root/scripts/gpu_results_ctest.py" command "$bdir" "$test") ||
    { md "" "> compute-sanitizer not run: no test $test in $bdir."; return; }
  while IFS= read -r a; do
    if [ ${#tcmd[@]} = 0 ] && { [ "$a" = env ] || [[ $a =~ ^[A-Za-z_][A-Za-z0-9_]*= ]]; }; then
      [ "$a" = env ] || envs+=("$a")
    elif [ -n "$case" ] && [[ $a == -tc=* ]]; then :  # the case below replaces the test's own filter
    else tcmd+=("$a"); fi
  done <<<"$lines"
  [ -z "$case" ] || tcmd+=("-tc=${case//,/\\,}")
  if ! command -v compute-sanitizer >/dev/null 2>&1; then
    md "" "> compute-sanitizer not found on PATH: not run (it would run ${tcmd[*]})."
    return
  fi
  # shellcheck disable=SC2016  # the quotes are the title's
  step sanitize "compute-sanitizer --tool $san_tool: $test${case:+, case '$case'}" sanitize 90 "" \
    env "${envs[@]}" compute-sanitizer --tool "$san_tool" --error-exitcode 99 --print-limit 30 "${tcmd[@]}"
}

# diag_failed_tests KEY: the state's failed tests of ctest step KEY, as TEST<TAB>CASE lines
diag_failed_tests() { [ -f "$state" ] && sed -n "s/^failed $1 //p" "$state"; }

plan_diagnose() {  # plan_diagnose KEYS...: the steps; no keys: nothing failed
  local key san=0 sel tests names first_test="" first_case="" line
  if [ "$dry" = 0 ] && [ ! -f "$bdir/CTestTestfile.cmake" ]; then
    md "" "> No build folder $bdir here (a fresh machine): building first."
    ensure_build 20 "" 50 "" "${gpu_targets[@]}"
  elif [ "$dry" = 1 ] && [ "${diag_fresh:-0}" = 1 ]; then
    ensure_build 20 "4 s CPU here; cmake's CUDA checks" 50 "22-33 s (as call 1)" "${gpu_targets[@]}"
  fi
  if [ $# = 0 ]; then
    bench_step cp_p2p_64k 60 "$(cp_estimate 65536 both) (issue 23's 64K ring)"
    if [ "$dry" = 1 ] || grep -qx 'v3ok=1' "$state" 2>/dev/null; then
      bench_step cp_p2p_v3_fwd_64k 30 "$(cp_estimate 65536 fwd) (only when call 1's v3 tests all passed)"
    fi
    # shellcheck disable=SC2054
    step bench "cplab-bench attention --head-dim 128 --seq 16384,32768 (v2)" attention_v2_long 60 \
      "20-40 s (guess): 4 shapes x 2 passes, SDPA baseline, no yardstick" "$bdir/bench/cplab-bench" attention \
      --head-dim 128 --seq 16384,32768 --tokens 32768 --causal both --warmup 1 --iters 3 --no-sdpa-error \
      --json "$work/attention_v2_long.json"
    return
  fi
  local built=0 bd=${CPLAB_GPU_BUILD_DIR:-build-gpu} keep
  for key in "$@"; do
    case "$key" in
      configure | build | prebuilt)  # the build on this machine again (call 1's own folder), every error shown
        [ "$built" = 0 ] || continue
        built=1
        if [ "$dry" = 1 ] || [ ! -f "$bd/build.ninja" ] && [ ! -f "$bd/Makefile" ]; then
          configure_args
          step configure "configure again" configure_again 20 "" cmake -S . -B "$bd" "${cfg[@]}"
        fi
        keep=(-k 0)  # ninja: keep going past every failure; make: -k
        [ -f "$bd/Makefile" ] && keep=(-k)
        step build "build again, every error (keep going)" build_errors 60 "" cmake --build "$bd" -j "$jobs" \
          --target "${gpu_targets[@]}" -- "${keep[@]}" ;;
      preflight) step preflight "preflight again" preflight_again 15 "" bash scripts/gpu-preflight.sh versions ;;
      ldd) step preflight "ldd again" ldd_again 5 "" bash scripts/gpu-preflight.sh ldd "$bdir" "${gpu_programs[@]}" ;;
      ctest_gpu | ctest_v3)
        names=""
        while IFS=$'\t' read -r line _; do [ -n "$line" ] && names+="${names:+|}$line"; done < <(diag_failed_tests "$key")
        if [ -n "$names" ]; then sel=(-R "^($names)\$"); tests="call 1's failed tests";
        elif [ "$key" = ctest_v3 ]; then sel=("${v3_sel[@]}"); tests="call 1's selection";
        else sel=("${gpu_sel[@]}"); tests="call 1's selection"; fi
        step ctest "$key again ($tests), CUDA_LAUNCH_BLOCKING=1" "${key}_again" 60 "as in call 1, kernels serialized" \
          env CUDA_LAUNCH_BLOCKING=1 OMP_NUM_THREADS=4 ctest --test-dir "$bdir" "${sel[@]}" -j 2 --output-on-failure --timeout 50
        if [ "$san" = 0 ]; then
          san=1 first_test="" first_case=""
          if [ "$dry" = 0 ]; then  # this rerun's first failure, else call 1's
            IFS=$'\t' read -r first_test first_case < <(python3 "$root/scripts/gpu_results_ctest.py" failures "$work/${key}_again.log"; \
              diag_failed_tests "$key")
          fi
          if [ "$dry" = 1 ] || [ -n "$first_test" ]; then diag_sanitize "${first_test:-the first failed test}" "$first_case"
          else md "" "> compute-sanitizer not run for $key: no failed test named (call 1's or this rerun's)."; san=0; fi
        fi ;;
      *)
        bench_cmd "$key"
        step bench "$title again, CUDA_LAUNCH_BLOCKING=1" "${key}_again" 40 "as in call 1, kernels serialized" \
          env CUDA_LAUNCH_BLOCKING=1 "${cmd[@]}"
        if [ "$san" = 0 ]; then san=1; diag_sanitize "${diag_smoke[$key]}"; fi ;;
    esac
  done
}

run_diagnose() {
  local keys=() k st
  if [ -f "$state" ]; then  # call 1's build folder (the prebuilt one when its build failed)
    st=$(sed -n 's/^bdir=//p' "$state" | tail -1)
    [ -n "$st" ] && [ -d "$st" ] && bdir=$st
    if grep -qx 'prebuilt=1' "$state"; then
      export LD_LIBRARY_PATH=$bdir/prebuilt-lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} CPLAB_BENCH_DIR=$root/bench
      md "" "> **PREBUILT PROGRAMS**: call 1's build failed; these steps run the prebuilt programs in $bdir."
    fi
  fi
  if [ -n "$failed_arg" ]; then
    IFS=, read -ra keys <<<"$failed_arg"
    md "" "What failed (--failed): ${keys[*]}."
  elif [ -f "$state" ]; then
    while read -r _ k st; do keys+=("$k"); done < <(grep -E '^step [a-z0-9_]+ (FAIL|TIMEOUT|NOTRUN)$' "$state")
    md "" "What failed ($state, call 1 at $(sed -n 's/^call1=//p' "$state")): ${keys[*]:-nothing}."
  else
    md "" "No --failed and no $state (a fresh machine): taken as 'nothing failed'."
  fi
  plan_diagnose "${keys[@]}"
}

# print_recipe: the end of call 1, into results.md and on stderr (the device tool's output tail)
print_recipe() {
  local k failed=() tests line lines=()
  for k in "${step_keys[@]}"; do
    case "${key_status[$k]}" in FAIL | TIMEOUT | NOTRUN) [[ " ${failed[*]} " == *" $k "* ]] || failed+=("$k") ;; esac
  done
  lines+=("## Call 2: the recipe" "")
  if [ ${#failed[@]} = 0 ]; then
    lines+=("Nothing failed. Call 2 runs the ring at 64K tokens (v2 forward + backward; v3 forward when v3's"
      "tests all passed) and attention v2 at 16K and 32K, at most $diagnose_limit s:" ""
      "    command: bash scripts/gpu-results.sh diagnose")
  else
    lines+=("Failed, timed out or not run in call 1:")
    for k in "${failed[@]}"; do
      tests=$(diag_failed_tests "$k" | awk -F'\t' '{ printf "%s%s%s", (NR > 1 ? "; " : ""), $1, ($2 != "" ? " (case: " $2 ")" : "") }')
      lines+=("- $k: ${key_status[$k]}${tests:+; tests: $tests}")
    done
    lines+=("" "Call 2 reruns them with CUDA_LAUNCH_BLOCKING=1 and runs compute-sanitizer ($san_tool) on one failing"
      "case, at most $diagnose_limit s:" ""
      "    command: bash scripts/gpu-results.sh diagnose --failed $(IFS=,; echo "${failed[*]}")")
  fi
  lines+=("    carry [\".deps\"], timeout_s $((diagnose_limit + 30)); AT ONCE: the machine stays warm 30 s after a call"
    "    (a fresh one has no build folder: call 2 then builds first, about 70 s more). With less device time"
    "    left than $((diagnose_limit + 60)) s, prefix CPLAB_GPU_PHASE_LIMIT=<seconds left - 60>; under 90 s, give the machine back.")
  md "" "${lines[@]}"
  printf '%s\n' "${lines[@]}" >&2
}
