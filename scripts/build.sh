#!/usr/bin/env bash
# build.sh [BUILD_DIR] [cmake args...]: configure and build cplab (Release, Ninja).
# CUDA parts are built when a CUDA compiler is found (pass -DCPLAB_ENABLE_CUDA=OFF to skip them).
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${1:-build}
shift || true
cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=Release "$@"
cmake --build "$dir" -j "$(nproc)"
