#!/usr/bin/env bash
# gpu-bundle.sh: copy the header-only build dependencies (Eigen, doctest, CLI11, nlohmann-json:
# headers and CMake package files, Debian's paths kept) into .deps/usr, so that a GPU machine
# without these packages (the device tool's image: nvcc, CMake, NCCL, no package registry) can
# build cplab with CMAKE_PREFIX_PATH=.deps/usr. .deps/ is git-ignored; pass it to the device tool
# in `carry`. Run it here, after scripts/install-deps.sh, right before the device call; idempotent.
# It also writes .deps/COMMIT (the commit and whether the tree is dirty), because the device's copy
# of the tree has no .git: scripts/gpu-results.sh reads it there.
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
# .deps/COMMIT: key=value lines (commit, dirty, bundled), then the changed paths when dirty. Untracked
# files count: the device tool carries untracked files that git does not ignore.
mkdir -p .deps
if commit=$(git rev-parse HEAD 2>/dev/null); then
  changes=$(git status --porcelain -- . ':(exclude).deps')
  if [ -n "$changes" ]; then dirty=yes; else dirty=no; fi
else
  commit=unknown dirty=unknown changes=""
fi
{
  echo "commit=$commit"
  echo "dirty=$dirty"
  echo "bundled=$(date -u +%Y-%m-%dT%H:%M:%SZ)"
  [ -z "$changes" ] || { echo "# changed paths (git status --porcelain):"; printf '%s\n' "$changes"; }
} >.deps/COMMIT
echo "gpu-bundle: .deps/COMMIT: $(head -2 .deps/COMMIT | tr '\n' ' ')"
echo "gpu-bundle: $(du -sh .deps | cut -f1) in .deps/ (carry it; configure with -DCMAKE_PREFIX_PATH=\$PWD/.deps/usr)"
