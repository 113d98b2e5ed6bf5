#!/usr/bin/env bash
# test.sh: the README's test command (and the only thing .ci/run calls). Installs what is missing,
# then builds and runs ctest in two stages; the second runs even when the first fails, and the
# summary at the end names every failed and every skipped test:
#   build/       the normal build; with nvcc present the CUDA parts are compiled (warnings are errors)
#                and their GPU tests report "skipped" when there is no GPU (11-13 minutes on 2 cores
#                from a fresh clone, most of it compiling the CUDA kernels)
#   build-asan/  a CPU-only build (-DCPLAB_ENABLE_CUDA=OFF) under AddressSanitizer and
#                UndefinedBehaviorSanitizer: the reference and command-line tests, the bad-input
#                reproducers and the fuzz test (15-20 minutes; -O1, line-table debug info -g1)
#   .venv/       the Python package: `pip install ".[test]"` into a venv made with Debian's python3
#                (the README's way), its build folder build/ (stage 1's objects are reused: only the
#                nanobind module compiles), then its pytest suite (python/tests/), with CPLAB_CLI
#                pointing at build/app/cplab for the tests that compare the two
#   site/        cplab-viz for the browser (scripts/web.sh --no-serve: emscripten, WebAssembly), tested in
#                Debian's headless chromium against the native app (tests/web/web_check.py)
set -uo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh || exit 1
jobs=$(nproc)
logs=$(mktemp -d)
status=0
summary=()

# stage NAME BUILD_DIR [cmake args...]: configure, build, ctest (its output also in $logs/BUILD_DIR.log)
stage() {
  local name=$1 dir=$2 t0=$SECONDS
  local log="$logs/$dir.log"
  shift 2
  echo "== test.sh: $name ($dir) =="
  if ! scripts/build.sh "$dir" "$@"; then
    summary+=("$name: BUILD FAILED ($(( SECONDS - t0 )) s)")
    status=1
    return
  fi
  env ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
    ctest --test-dir "$dir" --output-on-failure -j "$jobs" 2>&1 | tee "$log"
  local rc=${PIPESTATUS[0]}
  local total failed skipped
  total=$(sed -n 's/.*tests passed, [0-9]* tests failed out of \([0-9]*\).*/\1/p' "$log" | tail -1)
  failed=$(grep -cE '^\s+[0-9]+ - .*\((Failed|Timeout|SEGFAULT|Subprocess aborted|Exception|Not Run)\)' "$log")
  skipped=$(grep -cE '^\s+[0-9]+ - .*\(Skipped\)' "$log")
  summary+=("$name: ${total:-?} tests, $(( ${total:-0} - failed - skipped )) passed, $skipped skipped, $failed failed ($(( SECONDS - t0 )) s)")
  if ((skipped)); then
    summary+=("  skipped (no CUDA device here; they run on a GPU machine):")
    while read -r line; do summary+=("    $line"); done < <(grep -E '^\s+[0-9]+ - .*\(Skipped\)' "$log" |
      sed -E 's/^\s+[0-9]+ - (.*) \(Skipped\)/\1/')
  fi
  if ((rc != 0)); then
    status=1
    while read -r line; do summary+=("  FAILED: $line"); done < <(grep -E '^\s+[0-9]+ - ' "$log" |
      grep -v '(Skipped)' | sed -E 's/^\s+[0-9]+ - //')
  fi
}

stage "stage 1/4: build + CUDA parts when nvcc exists (11-13 min on 2 cores)" build -DCPLAB_ENABLE_CUDA=ON
# -g1 (line tables: sanitizer reports still name the function, file and line) compiles about a third
# faster than RelWithDebInfo's -g (19.7 s -> 13.5 s for check/sampled_attention.cpp, measured), and
# -O1 (AddressSanitizer's recommended level) a third faster again than -O2 (14.2 s -> 9.3 s for the same
# file, measured): the minutes stage 4 (the browser build) added are won back here
stage "stage 2/4: CPU only under ASan + UBSan (15-20 min on 2 cores)" build-asan -DCPLAB_ENABLE_CUDA=OFF -DCPLAB_SANITIZE=ON \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O1 -g1 -DNDEBUG"

# stage 3: the Python package, installed into a venv as the README says, and its pytest suite
python_stage() {
  local t0=$SECONDS log="$logs/pytest.log"
  echo "== test.sh: stage 3/4: the Python package (pip install into .venv; about 30 s: only the module compiles) and its pytest suite =="
  if [ ! -x .venv/bin/python ] && ! /usr/bin/python3 -m venv .venv; then
    summary+=("stage 3/4 python: could not make the venv .venv"); status=1; return
  fi
  if ! .venv/bin/pip install -q ".[test]" --config-settings=build-dir="$PWD/build"; then
    summary+=("stage 3/4 python: pip install FAILED ($(( SECONDS - t0 )) s)"); status=1; return
  fi
  CPLAB_CLI="$PWD/build/app/cplab" .venv/bin/python -m pytest python/tests -rs -p no:cacheprovider 2>&1 | tee "$log"
  local rc=${PIPESTATUS[0]}
  summary+=("stage 3/4 python (pytest): $(grep -E '^=+ .*(passed|failed|error).* =+$' "$log" | tail -1 | sed -E 's/^=+ (.*) =+$/\1/') ($(( SECONDS - t0 )) s)")
  while read -r line; do summary+=("  $line"); done < <(grep -E '^SKIPPED' "$log")
  if ((rc != 0)); then
    status=1
    while read -r line; do summary+=("  FAILED: $line"); done < <(grep -E '^(FAILED|ERROR) ' "$log")
  fi
}
python_stage

# stage 4: the browser build (scripts/web.sh --no-serve: emscripten, into site/) and its page in
# Debian's headless chromium, against the native app of stage 1 (tests/web/web_check.py, under a
# virtual X server for the native renders)
web_stage() {
  local t0=$SECONDS log="$logs/web.log"
  echo "== test.sh: stage 4/4: cplab-viz in the browser (emscripten build of site/, then headless chromium; about 5 min on 2 cores) =="
  if ! scripts/web.sh --no-serve; then
    summary+=("stage 4/4 web: BUILD FAILED ($(( SECONDS - t0 )) s)"); status=1; return
  fi
  local rc=0
  /usr/bin/python3 tests/web/test_cdp_selftest.py 2>&1 | tee "$log"
  ((PIPESTATUS[0] == 0)) || rc=1
  xvfb-run -a -s "-screen 0 1400x900x24" /usr/bin/python3 tests/web/web_check.py site build/viz/cplab-viz build/app/cplab 2>&1 |
    tee -a "$log"
  ((PIPESTATUS[0] == 0)) || rc=1
  summary+=("stage 4/4 web: $(grep -cE '^ok[: ]' "$log") checks passed, $(grep -cE '^FAIL[: ]' "$log") failed ($(( SECONDS - t0 )) s)")
  while read -r line; do summary+=("  $line"); done < <(grep -E '^page: ' "$log")
  if ((rc != 0)); then
    status=1
    while read -r line; do summary+=("  FAILED: $line"); done < <(grep -E '^FAIL[: ]' "$log")
  fi
}
web_stage

echo
echo "== test.sh: summary =="
printf '%s\n' "${summary[@]}"
rm -rf "$logs"
if ((status == 0)); then echo "test.sh: all tests passed (skipped ones listed above)"; else echo "test.sh: FAILED"; fi
exit $status
