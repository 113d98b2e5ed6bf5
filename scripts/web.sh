#!/usr/bin/env bash
# web.sh: build cplab-viz for the browser and serve it (the README's web command).
#   1. install what is missing (scripts/install-deps.sh --web: emscripten 3.1.6, chromium, Dear ImGui
#      1.86's source into .deps/; idempotent: seconds once installed)
#   2. build it with emscripten in build-web/ (the reference, cplab check, the scene, the lessons'
#      pages and the app compiled to WebAssembly; 248-252 s on 2 cores from a fresh clone, measured;
#      seconds after an edit)
#   3. copy the site into site/ (one file, index.html, with the WebAssembly inside: any static host
#      serves it, GitHub Pages included, and it opens from disk too, so the lesson READMEs' relative
#      links to its pages work from a local clone) and print its size
#   4. serve site/ on 127.0.0.1 and print the address (Ctrl-C stops it)
# Options: --no-serve (build only: scripts/test.sh), --port N (default 8000), --out DIR (default site).
set -euo pipefail
cd "$(dirname "$0")/.."
serve=1 port=8000 out=site
while [ $# -gt 0 ]; do
  case "$1" in
    --no-serve) serve=0 ;;
    --port) port="${2:?--port needs a number}"; shift ;;
    --out) out="${2:?--out needs a folder}"; shift ;;
    *) echo "web.sh: error: unknown option $1 (--no-serve, --port N, --out DIR)" >&2; exit 2 ;;
  esac
  shift
done
[[ "$port" =~ ^[0-9]+$ ]] && [ "$port" -ge 1 ] && [ "$port" -le 65535 ] ||
  { echo "web.sh: error: --port $port must be a whole number in [1, 65535]" >&2; exit 2; }
t_all=$SECONDS
stage() { echo; echo "== web.sh: $* =="; t0=$SECONDS; }
took() { echo "   ($(( SECONDS - t0 )) s)"; }

stage "1/4 install missing packages (emscripten, chromium, Dear ImGui's source)"
scripts/install-deps.sh --web
took

stage "2/4 build cplab-viz as WebAssembly in build-web/ (about 4 min on 2 cores the first time)"
export NODE_PATH=/usr/share/nodejs  # Debian's emscripten runs node scripts that need its node modules
log=$(mktemp)
if ! emcmake cmake -S . -B build-web -G Ninja -DCMAKE_BUILD_TYPE=Release -DEigen3_DIR=/usr/share/eigen3/cmake \
     -DIMGUI_SOURCE_DIR="$PWD/.deps/imgui-1.86" > "$log" 2>&1; then
  cat "$log"; echo "web.sh: emcmake cmake could not configure build-web/"; exit 1
fi
rm -f "$log"
cmake --build build-web -j"$(nproc)" --target cplab-viz-web
took

stage "3/4 the site: $out/"
mkdir -p "$out"
rm -f "$out/index.js" "$out/index.wasm"  # (a site built before the page became one file)
cp build-web/site/index.html "$out"/
printf '   index.html %s bytes, %s gzipped (the WebAssembly inside, base64)\n' \
  "$(stat -c %s "$out/index.html")" "$(gzip -9 -c "$out/index.html" | wc -c)"
took
echo "web.sh: built in $(( SECONDS - t_all )) s"

if ((serve)); then
  stage "4/4 serve $out/ (Ctrl-C stops it)"
  echo "   open http://127.0.0.1:$port/index.html"
  echo "   a lesson:  http://127.0.0.1:$port/index.html?lesson=4&page=1"
  echo "   a picture: http://127.0.0.1:$port/index.html?view=ring&cp=8&seq=64&step=1"
  exec python3 -m http.server "$port" --bind 127.0.0.1 --directory "$out"
fi
