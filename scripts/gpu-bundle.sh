#!/usr/bin/env bash
# gpu-bundle.sh: copy the header-only build dependencies (Eigen, doctest, CLI11, nlohmann-json:
# headers and CMake package files, Debian's paths kept) into .deps/usr, so that a GPU machine
# without these packages (the device tool's image: nvcc, CMake, NCCL, no package registry) can
# build cplab with CMAKE_PREFIX_PATH=.deps/usr. .deps/ is git-ignored; pass it to the device tool
# in `carry`. Run it here, after scripts/install-deps.sh; idempotent.
# What it is not: an installer for the GPU machine (it copies files, it installs nothing).
set -euo pipefail
cd "$(dirname "$0")/.."
dest=.deps/usr
rm -rf "$dest"
for pkg in libeigen3-dev doctest-dev libcli11-dev nlohmann-json3-dev; do
  dpkg -s "$pkg" >/dev/null 2>&1 || { echo "gpu-bundle: $pkg is not installed (run scripts/install-deps.sh)" >&2; exit 1; }
  dpkg -L "$pkg" | while read -r f; do
    case "$f" in
      /usr/include/*|/usr/share/eigen3/cmake/*|/usr/lib/cmake/doctest/*|/usr/share/cmake/*)
        if [ -f "$f" ]; then mkdir -p "$dest$(dirname "${f#/usr}")" && cp "$f" "$dest${f#/usr}"; fi ;;
    esac
  done
done
echo "gpu-bundle: $(du -sh .deps | cut -f1) in .deps/ (carry it; configure with -DCMAKE_PREFIX_PATH=\$PWD/.deps/usr)"
