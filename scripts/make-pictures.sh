#!/usr/bin/env bash
# make-pictures.sh: renders the README's cplab-viz pictures into docs/img/ (headless, under
# xvfb-run). Each line below is the command the README quotes for its picture.
# Needs a built tree (scripts/main.sh or scripts/test.sh); run from anywhere.
set -euo pipefail
cd "$(dirname "$0")/.."
viz="xvfb-run -a -s '-screen 0 1400x900x24' build/viz/cplab-viz --headless --size 1200x680"
mkdir -p docs/img
run() { echo "+ cplab-viz $*"; eval "$viz $*" >/dev/null; }
run --view ownership --cp 4 --seq 32 --out docs/img/ownership.png
run --view ownership --cp 2 --cu-seqlens 0,12,36,42 --pad --out docs/img/ownership_thd.png
run --view ring --cp 4 --seq 32 --step 1 --out docs/img/ring.png
run --view ring --mode a2a --cp 4 --seq 32 --kv-heads 4 --step 0 --out docs/img/ring_a2a.png
run --view ring --cp 64 --seq 1048576 --heads 32 --kv-heads 8 --head-dim 128 --step 5 --out docs/img/ring_1m.png
run --view masks --cp 4 --seq 32 --out docs/img/masks.png
run --view masks --cp 4 --seq 32 --layout contiguous --out docs/img/masks_contiguous.png
run --view scheduler --ranks 8 --out docs/img/scheduler.png
build/app/cplab run --mode p2p --cp 4 --seq 4096 --heads 8 --kv-heads 2 --head-dim 64 --causal --layout zigzag \
  --backward --trace /tmp/cplab_timeline_trace.json >/dev/null
run --view timeline --trace /tmp/cplab_timeline_trace.json --out docs/img/timeline.png
