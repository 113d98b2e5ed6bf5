#!/usr/bin/env bash
# make-pictures.sh [--check]: renders docs/viz.md's cplab-viz pictures into docs/img/ (headless, under
# xvfb-run). Each line below is the command docs/viz.md quotes for its picture.
#   --check   render into a temporary folder instead and compare with the committed docs/img/ files:
#             byte for byte, else pixel by pixel allowing 8 levels per channel (scripts/png_compare.py:
#             Mesa's llvmpipe rounds a few edge pixels 1-3 levels differently on another CPU); exit 1
#             naming every stale picture (ctest `pictures_current` runs this, so a change that alters a
#             picture fails until the pictures are regenerated)
# The timeline picture draws a measured trace (tile durations of this machine): it is regenerated,
# never compared. Needs a built tree (scripts/main.sh or scripts/test.sh); CPLAB_VIZ and CPLAB_CLI
# name other binaries (default build/viz/cplab-viz, build/app/cplab). Run from anywhere. The web
# build's three screenshots (docs/img/web_*.png) are taken when site/ is built.
set -euo pipefail
cd "$(dirname "$0")/.."
check=0
[ "${1:-}" = --check ] && check=1
viz_bin=${CPLAB_VIZ:-build/viz/cplab-viz}
cli_bin=${CPLAB_CLI:-build/app/cplab}
out=docs/img
if ((check)); then out=$(mktemp -d); trap 'rm -rf "$out"' EXIT; fi
viz="xvfb-run -a -s '-screen 0 1400x900x24' $viz_bin --headless --size 1200x680"
mkdir -p "$out"
stale=()
run() {  # run ARGS... NAME.png: render; with --check, compare with docs/img/NAME.png
  local name=${*: -1}
  set -- "${@:1:$#-1}"
  ((check)) || echo "+ cplab-viz $* --out docs/img/$name"
  eval "$viz $* --out $out/$name" > /dev/null
  if ((check)) && ! cmp -s "$out/$name" "docs/img/$name" &&
    ! python3 scripts/png_compare.py "$out/$name" "docs/img/$name" > "$out/$name.cmp"; then
    stale+=("docs/img/$name ($(cat "$out/$name.cmp"))")
  fi
}
run --view ownership --cp 4 --seq 32 ownership.png
run --view ownership --cp 2 --cu-seqlens 0,12,36,42 --pad ownership_thd.png
run --view ring --cp 4 --seq 32 --step 1 ring.png
run --view ring --mode a2a --cp 4 --seq 32 --kv-heads 4 --step 0 ring_a2a.png
run --view ring --cp 64 --seq 1048576 --heads 32 --kv-heads 8 --head-dim 128 --step 5 ring_1m.png
run --view masks --cp 4 --seq 32 masks.png
run --view masks --cp 4 --seq 32 --layout contiguous masks_contiguous.png
run --view masks --mode a2a --cp 4 --seq 32 --kv-heads 4 masks_a2a.png
run --view masks --cp 2 --cu-seqlens 0,12,36,42 --pad masks_packed.png
run --view masks --cp 4 --seq 32 --window 4 masks_window.png
run --view masks --cp 4 --seq 32 --chunk 8 masks_chunk.png
run --view ring --cp 4 --seq 32 --layout striped --step 3 ring_striped_step3.png
run --view ring --mode a2a --cp 4 --seq 32 --kv-heads 4 --step 2 ring_a2a_output.png
run --view scheduler --ranks 8 scheduler.png
run --view timeline --mode p2p --cp 8 --seq 131072 --heads 32 --kv-heads 32 --head-dim 128 --link nvlink4 timeline_nvlink4.png
run --view timeline --mode p2p --cp 8 --seq 131072 --heads 32 --kv-heads 32 --head-dim 128 --link eth100 timeline_eth100.png
run --lesson 4 lesson.png
run --view ownership --kv-cache 448 --seq 64 --cp 4 --mode pass-q infer_ownership.png
run --view ownership --kv-cache 40,41,42,43 --cu-seqlens 0,1,2,3,4 --cp 4 --mode decode-ag --cache-layout interleaved infer_ownership_decode.png
run --view ring --kv-cache 448 --seq 64 --cp 4 --heads 8 --kv-heads 2 --head-dim 64 --dtype double --mode pass-q --step 1 infer_ring.png
run --view ring --kv-cache 448 --seq 64 --cp 4 --heads 8 --kv-heads 2 --head-dim 64 --dtype double --mode pass-q --step 4 infer_ring_a2a.png
run --view masks --kv-cache 24,40 --cu-seqlens 0,8,20 --cp 4 --mode pass-q infer_masks.png
run --view timeline --kv-cache 448 --seq 64 --cp 4 --heads 8 --kv-heads 2 --head-dim 64 --dtype double --mode pass-q infer_timeline.png
if ((check)); then
  if ((${#stale[@]})); then
    echo "make-pictures: stale (the current build draws them differently):"
    printf '  %s\n' "${stale[@]}"
    echo "  regenerate them with scripts/make-pictures.sh and commit docs/img/"
    exit 1
  fi
  echo "make-pictures: every compared picture in docs/img/ is what the current build draws"
  exit 0
fi
trace=$(mktemp)
"$cli_bin" run --mode p2p --cp 4 --seq 4096 --heads 8 --kv-heads 2 --head-dim 64 --causal --layout zigzag \
  --backward --trace "$trace" > /dev/null
run --view timeline --trace "$trace" timeline.png
rm -f "$trace"
# the browser build's pages, screenshotted in headless chromium (tests/web/web_check.py --pictures):
# only when site/ is built (scripts/web.sh) and chromium is installed; regenerated, never compared
# (the page is software-rendered WebGL, not Mesa's llvmpipe)
if [ -f site/index.html ] && command -v chromium > /dev/null; then
  python3 tests/web/web_check.py site --pictures docs/img
else
  echo "make-pictures: docs/img/web_*.png not regenerated: build site/ first (scripts/web.sh --no-serve)"
fi
