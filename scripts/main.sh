#!/usr/bin/env bash
# main.sh: the README's main job. Installs what is missing, builds everything, and runs
# `cplab demo`: every implemented CP mode at a small configuration, checked against dense attention.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh build -DCPLAB_ENABLE_CUDA=ON
echo
build/app/cplab demo
