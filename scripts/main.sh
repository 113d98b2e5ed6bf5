#!/usr/bin/env bash
# main.sh: the README's main job. Installs what is missing, builds everything, and runs
# `cplab demo`: every implemented CP mode at a small configuration, checked against dense attention;
# then, when a display is available (DISPLAY set), the interactive visualizer cplab-viz.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh build -DCPLAB_ENABLE_CUDA=ON
echo
build/app/cplab demo
if [ -n "${DISPLAY:-}" ] && [ -x build/viz/cplab-viz ]; then
  echo
  echo "main.sh: starting cplab-viz (close its window to finish)"
  build/viz/cplab-viz
else
  echo
  echo "main.sh: no display (DISPLAY is not set), so cplab-viz is not started. Its views as PNGs:"
  echo "  xvfb-run -a build/viz/cplab-viz --headless --view ring --out ring.png"
fi
