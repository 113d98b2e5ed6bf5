#!/usr/bin/env bash
# gpu-bundle.sh [--prebuilt]: make .deps/, the carry of a GPU machine's call (the device tool's image has
# nvcc, CMake, ninja and PyTorch but none of cplab's Debian packages and no package registry).
#
#   bash scripts/gpu-bundle.sh              the header-only build dependencies (Eigen, doctest, CLI11,
#                                           nlohmann-json: headers and CMake package files, Debian's paths
#                                           kept) into .deps/usr, and .deps/COMMIT
#   bash scripts/gpu-bundle.sh --prebuilt   the same, and .deps/prebuilt.tar.xz: the GPU run's five programs
#                                           built HERE with nvcc (scripts/gpu-prebuilt.sh), which
#                                           scripts/gpu-results.sh runs only when the build on the GPU
#                                           machine fails (and says so)
#
# Run it here, after scripts/install-deps.sh, right before the device call; idempotent. .deps/ is
# git-ignored; pass it to the device tool in `carry`. The GPU machine configures with
# CMAKE_PREFIX_PATH=.deps/usr. Debian's doctestTargets.cmake hard-codes its prefix as "/usr" (the other
# three packages compute theirs from the file's location); the copy here computes it from its own
# location too, so doctest::doctest's include folder is .deps/usr/include there (checked below by a
# configure of a two-line project against .deps/usr alone).
# .deps/COMMIT: the commit and whether the tree is dirty, because the device's copy of the tree has no
# .git: scripts/gpu-results.sh reads it there.
# What it is not: an installer for the GPU machine (it copies files, it installs nothing).
set -euo pipefail
cd "$(dirname "$0")/.."
prebuilt=0
for a in "$@"; do
  case "$a" in
    --prebuilt) prebuilt=1 ;;
    -h | --help) sed -n '2,10p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "gpu-bundle: unknown argument '$a'; valid: --prebuilt, --help" >&2; exit 2 ;;
  esac
done
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

# doctest's prefix: lib/cmake/doctest/doctestTargets.cmake -> three folders up, as CMake's own export does
dt=$dest/lib/cmake/doctest/doctestTargets.cmake
grep -q '^set(_IMPORT_PREFIX "/usr")$' "$dt" || { echo "gpu-bundle: $dt has no 'set(_IMPORT_PREFIX \"/usr\")' line to fix" >&2; exit 1; }
# shellcheck disable=SC2016  # ${CMAKE_CURRENT_LIST_DIR} is CMake's
sed -i 's|^set(_IMPORT_PREFIX "/usr")$|get_filename_component(_IMPORT_PREFIX "${CMAKE_CURRENT_LIST_DIR}/../../.." ABSOLUTE)|' "$dt"
# the check: every package's imported include folder resolves under .deps/usr, none under /usr
chk=$(mktemp -d)
cat >"$chk/CMakeLists.txt" <<'EOF'
cmake_minimum_required(VERSION 3.16)
project(deps_check LANGUAGES NONE)
find_package(Eigen3 REQUIRED NO_MODULE)
find_package(doctest REQUIRED)
find_package(CLI11 REQUIRED)
find_package(nlohmann_json REQUIRED)
foreach(t Eigen3::Eigen doctest::doctest CLI11::CLI11 nlohmann_json::nlohmann_json)
  get_target_property(inc ${t} INTERFACE_INCLUDE_DIRECTORIES)
  message(STATUS "deps-check ${t} ${inc}")
endforeach()
EOF
if ! cmake -S "$chk" -B "$chk/b" -DCMAKE_PREFIX_PATH="$PWD/$dest" -DCMAKE_FIND_USE_SYSTEM_PACKAGE_REGISTRY=OFF \
     -DCMAKE_FIND_ROOT_PATH="$PWD/.deps" -DCMAKE_FIND_ROOT_PATH_MODE_PACKAGE=ONLY >"$chk/log" 2>&1; then
  cat "$chk/log" >&2; echo "gpu-bundle: CMake does not find the four packages in $dest alone" >&2; rm -rf "$chk"; exit 1
fi
bad=$(grep '^-- deps-check' "$chk/log" | grep -v " $PWD/$dest/" || true)
grep '^-- deps-check' "$chk/log" | sed "s|$PWD/||g; s/^-- deps-check /gpu-bundle: include folder of /"
rm -rf "$chk"
[ -z "$bad" ] || { echo "gpu-bundle: an include folder outside $dest: $bad" >&2; exit 1; }

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
if [ "$prebuilt" = 1 ]; then
  bash scripts/gpu-prebuilt.sh make
else
  rm -f .deps/prebuilt.tar.xz
fi
echo "gpu-bundle: $(du -sh .deps | cut -f1) in .deps/ (carry it; configure with -DCMAKE_PREFIX_PATH=\$PWD/.deps/usr)"
