#!/usr/bin/env bash
# test.sh: the README's test command (and the only thing .ci/run calls). Installs what is missing,
# then builds and runs ctest twice:
#   build/       the normal build; with nvcc present the CUDA parts are compiled (warnings are errors)
#                and their tests report "Skipped" when there is no GPU
#   build-asan/  a CPU-only build (-DCPLAB_ENABLE_CUDA=OFF) under AddressSanitizer and
#                UndefinedBehaviorSanitizer: the reference and command-line tests
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
jobs=$(nproc)

echo "== build/ (CUDA if found) =="
scripts/build.sh build -DCPLAB_ENABLE_CUDA=ON
ctest --test-dir build --output-on-failure -j "$jobs"

echo "== build-asan/ (CPU only, ASan + UBSan) =="
scripts/build.sh build-asan -DCPLAB_ENABLE_CUDA=OFF -DCPLAB_SANITIZE=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  ctest --test-dir build-asan --output-on-failure -j "$jobs"
echo "test.sh: all tests passed"
