#!/usr/bin/env bash
# main.sh: the README's main job, in stages that each say what they do and how long they took.
#   1. install what is missing (Debian packages; idempotent: seconds once installed, a few minutes
#      the first time)
#   2. build what the main job needs, on the CPU: the reference, `cplab`, `cplab-viz` and the 13
#      lesson programs (about 2 minutes on 2 cores from a fresh clone). The CUDA parts are built too only where they can
#      run: with nvcc and a GPU (nvidia-smi lists one), or when asked (CPLAB_CUDA=1 scripts/main.sh);
#      scripts/test.sh always builds them when nvcc exists
#   3. install `cplab` and `cplab-viz` into /usr/local/bin (on PATH: every command in the README,
#      docs/ and the lessons then runs as written)
#   4. run `cplab demo`: every CP mode at a small size, checked against dense attention (seconds)
#   5. install the Python package into .venv (pip install ., reusing build/'s objects: only the
#      nanobind module compiles, under a minute) and run python/examples/ring_attention_bug.py:
#      `cplab.check` naming the bugs of a hand-written NumPy ring attention
#   6. start cplab-viz when a display can be opened; otherwise print how to render its views to PNG
set -euo pipefail
cd "$(dirname "$0")/.."
t_all=$SECONDS
stage() { echo; echo "== main.sh: $* =="; t0=$SECONDS; }
took() { echo "   ($(( SECONDS - t0 )) s)"; }

stage "1/6 install missing packages (seconds when present; a few minutes the first time)"
scripts/install-deps.sh
took

cuda=OFF
why="no GPU here (nvidia-smi lists none); CPLAB_CUDA=1 builds the CUDA parts anyway"
if [ "${CPLAB_CUDA:-0}" = 1 ]; then cuda=ON; why="CPLAB_CUDA=1"
elif command -v nvidia-smi > /dev/null && nvidia-smi -L 2> /dev/null | grep -q GPU; then cuda=ON; why="a GPU is present"
fi
stage "2/6 build the reference, cplab, cplab-viz and the lessons (about 2 min on 2 cores; CUDA parts: $cuda, $why)"
log=$(mktemp)
if ! cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DCPLAB_ENABLE_CUDA=$cuda > "$log" 2>&1; then
  cat "$log"; echo "main.sh: cmake could not configure build/"; exit 1
fi
grep -E '^-- cplab' "$log" || true
rm -f "$log"
targets=(cplab lessons)
if grep -q '^build viz/cplab-viz:' build/build.ninja; then targets+=(cplab-viz); fi
if [ "$cuda" = ON ]; then targets=(all); fi
cmake --build build -j "$(nproc)" --target "${targets[@]}"
took

stage "3/6 install cplab and cplab-viz into /usr/local/bin"
cmake --install build --prefix /usr/local > /dev/null
echo "   $(command -v cplab) $(command -v cplab-viz || echo '(cplab-viz not built: ImGui, GLFW or OpenGL missing)')"
took

stage "4/6 cplab demo (a few seconds)"
cplab demo
took

stage "5/6 the Python package: pip install . into .venv, then python/examples/ring_attention_bug.py (under a minute)"
[ -x .venv/bin/python ] || /usr/bin/python3 -m venv .venv
.venv/bin/pip install -q . --config-settings=build-dir="$PWD/build"
.venv/bin/python python/examples/ring_attention_bug.py
echo "   import cplab from .venv/bin/python (docs/python.md)"
took

stage "6/6 cplab-viz"
if [ -n "${DISPLAY:-}" ] && command -v cplab-viz > /dev/null; then
  echo "   starting cplab-viz on display $DISPLAY (close its window to finish)"
  if ! cplab-viz; then
    echo "   cplab-viz could not run on display '$DISPLAY' (a stale DISPLAY?). Its views as PNGs instead:"
    echo "     xvfb-run -a cplab-viz --headless --view ring --out ring.png"
  fi
else
  echo "   no display (DISPLAY is not set), so cplab-viz is not started. Its views as PNGs:"
  echo "     xvfb-run -a cplab-viz --headless --view ring --out ring.png"
fi
echo
echo "main.sh: done in $(( SECONDS - t_all )) s. Start here: tutorials/01_attention_lse/README.md"
