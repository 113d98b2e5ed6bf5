# shellcheck shell=bash disable=SC2034,SC2154  # sourced by scripts/gpu-results.sh, whose variables it reads
# gpu-results-dry.sh: `scripts/gpu-results.sh --dry-run` (sourced by it, not run): the plan of both device
# calls with their limits summed and checked, the device-time budget, the carry against 64 MiB (with and
# without the prebuilt fallback), the build measured here (--measure-build) and the tests the ctest
# steps select. With --plan-only: the plans and their checks alone (the ctest test gpu_results_plan).
# Sets rc: 0 when every check holds, 1 otherwise.
# What it is not: a GPU measurement (nothing here runs on a GPU).

nccl_args=() commit_args=() work="\$WORK" last_rc=0 rc=0
fit=$((call1_limit - reserve)) dfit=$((diagnose_limit - reserve))
# show_plan TITLE FIT MUST: the rows planned since the last call, their sum against FIT (MUST=1: a check)
show_plan() {
  echo "### $1"
  echo
  echo "| step | key | limit s | estimate | command |"
  echo "| --- | --- | ---: | --- | --- |"
  printf '%s\n' "${plan_rows[@]}"
  echo
  if [ "$plan_sum" -le "$2" ]; then
    echo "Limits summed: $plan_sum s, within the $2 s before the $reserve s reserve."
  elif [ "$3" = 1 ]; then
    echo "**OVER**: limits summed $plan_sum s, more than the $2 s before the $reserve s reserve." && rc=1
  else
    echo "Limits summed: $plan_sum s, more than the $2 s before the reserve: the last steps are clipped or NOT RUN."
  fi
  echo
  plan_rows=() plan_sum=0
}

echo "# bash scripts/gpu-results.sh --dry-run$([ "$measure" = 1 ] && echo ' --measure-build')$([ "$plan_only" = 1 ] && echo ' --plan-only')"
echo
echo "$(date -u +%Y-%m-%dT%H:%M:%SZ) on $(hostname) ($(nproc) cores), commit $(git rev-parse --short HEAD 2>/dev/null || echo unknown)."
echo "Each step runs under \`timeout -k 10 LIMIT\`, LIMIT clipped to what is left of the call's limit less"
echo "the $reserve s reserve (a timed-out step's kill grace, up to 13 s, and the packing); the configure adds"
echo "the NCCL and commit arguments found on the machine. The prebuilt fallback's step (10 s) runs only"
echo "when the build fails, in the time the build did not use."
echo
echo "## Call 1: \`bash scripts/gpu-results.sh\` ($call1_limit s; device timeout_s 420)"
echo
plan_call1
show_plan "Call 1's steps" "$fit" 1
echo "## Call 2: \`bash scripts/gpu-results.sh diagnose\`, the recipe call 1 prints ($diagnose_limit s; timeout_s $((diagnose_limit + 30)))"
echo
name=gpu-results-diagnose
plan_diagnose
show_plan "When nothing failed" "$dfit" 1
plan_diagnose ctest_v3 cp_p2p_v3_fwd
show_plan "Example: \`--failed ctest_v3,cp_p2p_v3_fwd\` on the warm machine (its build folder and state kept)" "$dfit" 1
diag_fresh=1
plan_diagnose ctest_v3 cp_p2p_v3_fwd
diag_fresh=0
show_plan "The same on a fresh machine (no build folder: it builds first)" "$dfit" 0
echo "### The recipe call 1 prints last (two examples)"
echo
md() { printf '%s\n' "$@" | sed 's/^/> /; s/^> $/>/'; }  # as results.md gets it, quoted here
declare -A key_status=([preflight]=PASS [ctest_v3]=PASS)
step_keys=(preflight ctest_v3)
echo "When every step passed:"
echo
print_recipe 2>/dev/null
key_status[ctest_v3]=FAIL key_status[cp_p2p_v3_fwd]=GATED key_status[cp_a2a]=TIMEOUT
step_keys+=(cp_a2a cp_p2p_v3_fwd)
echo
echo "When v3's tests failed and the a2a benchmark timed out (the v3 benchmarks then gated, not failed):"
echo
print_recipe 2>/dev/null
echo
echo "## The device-time budget: 900 s"
echo
awk -v c1="$call1_limit" -v c2="$diagnose_limit" 'BEGIN {
  s_lo = 60; s_hi = 120; x = 20  # a start, 1-2 min; the tree and .deps up, the results back (guess), per call
  lo = s_lo + c1 + x + c2 + x; hi = s_hi + c1 + x + c2 + x
  printf "A start (60-120 s) + call 1 (at most %d s) + call 2 (at most %d s) + transfers (about %d s a call, a guess)\n", c1, c2, x
  printf "= %d-%d s of the 900 s, leaving %d-%d s; a start that fails first and is retried on the other kind costs\n", lo, hi, 900 - hi, 900 - lo
  printf "1-2 min more: then call 2 needs CPLAB_GPU_PHASE_LIMIT (the recipe says how).\n" }'
echo
[ "$plan_only" = 1 ] && return 0

echo "## The carry: .deps and the tree, against the device tool's 64 MiB"
echo
if [ -d .deps/usr ]; then
  hdr=$(du -sb --exclude=prebuilt.tar.xz .deps | cut -f1)
  pre=0
  [ -f .deps/prebuilt.tar.xz ] && pre=$(stat -c %s .deps/prebuilt.tar.xz)
  tree=$(git ls-files -co --exclude-standard -z | du -cb --files0-from=- 2>/dev/null | tail -1 | cut -f1)
  awk -v h="$hdr" -v p="$pre" -v t="$tree" 'BEGIN { m = 1048576
    printf "- .deps without the prebuilt programs (headers, CMake files, COMMIT): %.1f MiB\n", h / m
    printf "- .deps/prebuilt.tar.xz (bash scripts/gpu-bundle.sh --prebuilt): %s\n", p > 0 ? sprintf("%.1f MiB", p / m) : "not made"
    printf "- the tree (tracked and untracked files git does not ignore): %.1f MiB\n", t / m
    printf "- together: %.1f MiB without the prebuilt programs, %.1f MiB with them, of 64 MiB\n", (h + t) / m, (h + p + t) / m }'
  [ $((hdr + pre + tree)) -le $((64 * 1048576)) ] || { echo "**OVER the 64 MiB carry limit**"; rc=1; }
  [ -f .deps/prebuilt.tar.xz ] && echo "- prebuilt: $(tar -xJOf .deps/prebuilt.tar.xz prebuilt/ORIGIN | sed -n 's/^built=//p'), commit $(tar -xJOf .deps/prebuilt.tar.xz prebuilt/ORIGIN | sed -n 's/^commit=//p' | cut -c1-12)"
else
  echo "No .deps here: run bash scripts/gpu-bundle.sh --prebuilt first (the device calls carry it)." && rc=1
fi
mdir=$root/build-gpu-dry  # the measured build: exactly the targets above
echo
echo "## The build measured: configure + exactly the five targets, here"
echo
if [ "$measure" = 1 ]; then  # kept in $mdir/measure.md for later dry runs
  configure_args
  mtmp=$(mktemp) || exit 2
  bash scripts/gpu-build-measure.sh "$mdir" 16 "${cfg[@]}" -- "${gpu_targets[@]}" >"$mtmp" || { cat "$mtmp"; rm -f "$mtmp"; exit 1; }
  { echo "By \`bash scripts/gpu-results.sh --dry-run --measure-build\` at commit $(git rev-parse --short HEAD 2>/dev/null || echo unknown)."
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
    python3 scripts/gpu_results_ctest.py programs "$mdir" "${a[@]}" | sed "s/^/- $sel: /" ||
      { echo "**a selected test has no built program**"; rc=1; }
  done
fi
