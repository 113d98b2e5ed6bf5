#!/usr/bin/env bash
# gpu-prebuilt.sh: the GPU run's five programs built here, the fallback of a GPU machine whose own build fails.
#
#   bash scripts/gpu-prebuilt.sh make        here (by scripts/gpu-bundle.sh --prebuilt): configure
#                                           build-prebuilt/ (nvcc, sm_90 and kernel v3 for sm_90a; libstdc++
#                                           and libgcc linked statically; no OpenBLAS, NCCL or MPI), build
#                                           the five targets, pack .deps/prebuilt.tar.xz, check it
#   bash scripts/gpu-prebuilt.sh use DIR     on the GPU machine (by scripts/gpu-results.sh, when its build
#                                           failed): unpack into DIR, a build folder ctest runs as if it had
#                                           been built there
#   bash scripts/gpu-prebuilt.sh shadow BDIR DIR   a build folder DIR whose ctest runs BDIR's five
#                                           programs (the rehearsal test)
#   bash scripts/gpu-prebuilt.sh check       here: unpack into a temporary folder, and check that every
#                                           program links against nothing but the C library's own and the
#                                           carried libgomp (ldd), and runs as far as a CPU allows
#                                           (--help, the doctest case lists)
#
# The archive holds prebuilt/: bin/<the build folder's relative paths> (stripped programs), every
# CTestTestfile.cmake of the build folder (so ctest -L cuda -LE host selects the same tests),
# lib/libgomp.so.1 (OpenMP: the reference's threads), and ORIGIN (this machine's source and build
# folders, which `use` rewrites to the GPU machine's in the CTestTestfiles, and the commit). The
# programs find sdpa_baseline.py / sdpa_error.py through CPLAB_BENCH_DIR, which `use` prints for the
# caller to export with LD_LIBRARY_PATH (bench/attention_config.cpp; a compiled-in path would be this
# machine's).
# What it is not: a package of cplab (it holds the GPU tests and benchmarks only), or a substitute
# for the build on the GPU machine (which the run always tries first).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
archive=$root/.deps/prebuilt.tar.xz
# shellcheck source=scripts/gpu-targets.sh
. scripts/gpu-targets.sh  # gpu_targets, gpu_programs
# what ldd may name besides the carried libgomp: the C library's own parts (the GPU machine has its own)
allowed_re='^(linux-vdso\.so\.1|libc\.so\.6|libm\.so\.6|libpthread\.so\.0|libdl\.so\.2|librt\.so\.1|ld-linux-x86-64\.so\.2|/lib64/ld-linux-x86-64\.so\.2)$'

die() { echo "gpu-prebuilt: $*" >&2; exit 1; }

# the test files of a build folder: every CTestTestfile.cmake and the files they include (doctest's
# discovery: without its test list, which names programs not carried, it adds one unlabelled NOT_BUILT
# test that no GPU step selects)
test_files() { find "$1" \( -name CTestTestfile.cmake -o -name '*_include-*.cmake' \) "${@:2}"; }
copy_test_files() { (cd "$1" && test_files . -exec cp --parents {} "$2/" \;); }  # copy_test_files BDIR DEST
rewrite_paths() { test_files "$1" -print0 | xargs -0 sed -i "$2"; }              # rewrite_paths DIR SED_SCRIPT

# shadow BDIR DIR: a build folder DIR whose ctest runs BDIR's GPU programs (linked, not copied): the
# rehearsal test (tests/cuda/gpu_results_rehearsal.sh), whose inner ctest must not write BDIR/Testing
shadow() {
  local bdir dir p
  bdir=$(cd "$1" && pwd)
  mkdir -p "$2" && dir=$(cd "$2" && pwd)
  copy_test_files "$bdir" "$dir"
  rewrite_paths "$dir" "s|$bdir|$dir|g"
  for p in "${gpu_programs[@]}"; do mkdir -p "$dir/$(dirname "$p")" && ln -sfn "$bdir/$p" "$dir/$p"; done
}

make_archive() {
  local bdir=$root/build-prebuilt stage commit
  command -v nvcc >/dev/null || [ -x /usr/local/cuda/bin/nvcc ] || die "no nvcc here: cannot build the prebuilt programs"
  command -v nvcc >/dev/null || export PATH=/usr/local/cuda/bin:$PATH
  commit=$(sed -n 's/^commit=//p' .deps/COMMIT 2>/dev/null || true)
  local dirty short
  dirty=$(sed -n 's/^dirty=//p' .deps/COMMIT 2>/dev/null || true)
  short=${commit:0:12}
  [ "$dirty" = yes ] && short=$short-dirty
  echo "gpu-prebuilt: configure $bdir (sm_90 + sm_90a, static libstdc++/libgcc, no OpenBLAS/NCCL/MPI)"
  cmake -S . -B "$bdir" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 \
    -DCPLAB_USE_OPENBLAS=OFF -DCPLAB_ENABLE_NCCL=OFF -DCPLAB_ENABLE_MPI=OFF \
    "-DCMAKE_EXE_LINKER_FLAGS=-static-libstdc++ -static-libgcc" -DCPLAB_BENCH_COMMIT="${short:-unknown}" >"$root/.deps/prebuilt-configure.log" 2>&1 ||
    { cat "$root/.deps/prebuilt-configure.log" >&2; die "configure failed"; }
  grep -q 'kernel v3 (wgmma + TMA) built for sm_90a' "$root/.deps/prebuilt-configure.log" || die "the configure did not build kernel v3 for sm_90a"
  echo "gpu-prebuilt: build ${gpu_targets[*]}"
  cmake --build "$bdir" -j "$(nproc)" --target "${gpu_targets[@]}"
  stage=$(mktemp -d)
  mkdir -p "$stage/prebuilt/bin" "$stage/prebuilt/lib"
  local p
  for p in "${gpu_programs[@]}"; do
    [ -x "$bdir/$p" ] || die "$bdir/$p was not built"
    mkdir -p "$stage/prebuilt/bin/$(dirname "$p")"
    strip -o "$stage/prebuilt/bin/$p" "$bdir/$p"
  done
  copy_test_files "$bdir" "$stage/prebuilt/bin"
  cp -L "$(g++ -print-file-name=libgomp.so.1)" "$stage/prebuilt/lib/libgomp.so.1"
  {
    echo "source=$root"
    echo "build=$bdir"
    echo "commit=${commit:-unknown}"
    echo "dirty=${dirty:-unknown}"
    echo "built=$(date -u +%Y-%m-%dT%H:%M:%SZ) on $(hostname), $(g++ --version | head -1), $(nvcc --version | grep -o 'release [0-9.]*')"
  } >"$stage/prebuilt/ORIGIN"
  mkdir -p .deps
  tar -C "$stage" -cJf "$archive.part" prebuilt
  mv -f "$archive.part" "$archive"
  rm -rf "$stage"
  echo "gpu-prebuilt: $archive: $(du -h "$archive" | cut -f1) ($(du -sh "$bdir" | cut -f1) build folder not carried)"
  check_archive
}

# unpack DIR: the archive's prebuilt/ into DIR (a build folder), the CTestTestfiles' paths rewritten
unpack() {
  local dir=$1 src bld
  [ -f "$archive" ] || die "no $archive (make it here: bash scripts/gpu-bundle.sh --prebuilt)"
  rm -rf "$dir" && mkdir -p "$dir"
  dir=$(cd "$dir" && pwd)
  local tmp
  tmp=$(mktemp -d)
  tar -C "$tmp" -xJf "$archive"
  src=$(sed -n 's/^source=//p' "$tmp/prebuilt/ORIGIN")
  bld=$(sed -n 's/^build=//p' "$tmp/prebuilt/ORIGIN")
  cp -a "$tmp/prebuilt/bin/." "$dir/"
  mkdir -p "$dir/prebuilt-lib"
  cp -a "$tmp/prebuilt/lib/." "$dir/prebuilt-lib/"
  cp "$tmp/prebuilt/ORIGIN" "$dir/prebuilt-ORIGIN"
  rm -rf "$tmp"
  # the build folder first (it lies inside the source folder), then the source folder
  rewrite_paths "$dir" "s|$bld|$dir|g; s|$src/|$root/|g"
  echo "$dir"
}

check_archive() {
  local dir rc=0 p out lib
  dir=$(mktemp -d)/build
  unpack "$dir" >/dev/null
  echo "gpu-prebuilt: checking the unpacked programs in $dir ($(sed -n 's/^built=//p' "$dir/prebuilt-ORIGIN"))"
  for p in "${gpu_programs[@]}"; do
    out=$(LD_LIBRARY_PATH=$dir/prebuilt-lib ldd "$dir/$p") || { echo "  $p: ldd failed"; rc=1; continue; }
    while read -r lib _ path _; do
      [ -n "$lib" ] || continue
      if [[ $lib =~ $allowed_re ]]; then continue; fi
      if [ "$lib" = libgomp.so.1 ] && [ "$path" = "$dir/prebuilt-lib/libgomp.so.1" ]; then continue; fi
      echo "  $p: links $lib => ${path:-?}: not the C library's, not carried"; rc=1
    done <<<"$out"
    if grep -q 'not found' <<<"$out"; then echo "  $p: a library not found:"; grep 'not found' <<<"$out"; rc=1; fi
    echo "  $p: $(du -h "$dir/$p" | cut -f1), ldd: $(awk '{print $1}' <<<"$out" | paste -sd' ' -)"
  done
  export LD_LIBRARY_PATH=$dir/prebuilt-lib CPLAB_BENCH_DIR=$root/bench
  for p in tests/cuda/cplab_cuda_tests tests/cuda/cplab_comm_tests tests/cuda/cplab_cp_gpu_tests; do
    local n
    n=$("$dir/$p" --list-test-cases 2>&1 | grep -cvE '^\[doctest\]|^=*$' || true)
    if [ "$n" -gt 1 ]; then echo "  $p --list-test-cases: $n lines"; else echo "  $p --list-test-cases failed"; rc=1; fi
  done
  for p in bench/cplab-bench cuda/comm/cplab-comm-check; do
    if "$dir/$p" --help >/dev/null 2>&1; then echo "  $p --help: exit 0"; else echo "  $p --help failed"; rc=1; fi
  done
  # as far as a CPU goes: an attention run with its SDPA baseline gets past its plan to the device check
  local brc=0
  "$dir/bench/cplab-bench" attention --seq 128 --head-dim 128 --tokens 256 --heads 4 --kv-heads 2 --warmup 1 --iters 1 \
    >/dev/null 2>&1 || brc=$?
  if [ "$brc" = 0 ] || [ "$brc" = 77 ]; then echo "  bench/cplab-bench attention (baseline from CPLAB_BENCH_DIR): exit $brc"
  else echo "  bench/cplab-bench attention: exit $brc (expected 0, or 77 without a GPU)"; rc=1; fi
  # the GPU steps' selection in the unpacked folder: every test's program is there
  python3 scripts/gpu_results_ctest.py programs "$dir" -L cuda -LE host | sed 's/^/  /' ||
    { echo "  the GPU steps would not find their tests"; rc=1; }
  rm -rf "$(dirname "$dir")"
  [ "$rc" = 0 ] || die "the prebuilt archive failed its check"
  echo "gpu-prebuilt: check passed"
}

case "${1:-}" in
  make) make_archive ;;
  use) [ $# = 2 ] || die "usage: gpu-prebuilt.sh use BUILD_DIR"; unpack "$2" ;;
  check) check_archive ;;
  shadow) [ $# = 3 ] || die "usage: gpu-prebuilt.sh shadow BUILD_DIR DIR"; shadow "$2" "$3" ;;
  -h | --help) sed -n '2,20p' "$0" | sed 's/^# \{0,1\}//' ;;
  *) echo "gpu-prebuilt: expected make, use DIR or check (got '${1:-}')" >&2; exit 2 ;;
esac
