#!/usr/bin/env bash
# install-deps.sh: install what cplab needs to build and test on Debian 12, as root. Idempotent:
# packages already installed are left alone and apt is not touched at all when nothing is missing.
# cplab-viz needs Dear ImGui, GLFW, OpenGL (Mesa's llvmpipe without a GPU) and stb; xvfb + xauth
# give the headless render tests a virtual X server. OpenMPI (libopenmpi-dev, openmpi-bin) is for
# cuda/comm's one-process-per-GPU launch (`mpirun ... cplab-comm-check --backend mpi`).
# libopenblas-openmp-dev: the CPU attention kernel's products (reference/core/gemm.h); Debian's
# OpenBLAS picks its kernels for the CPU at run time, and its OpenMP build runs one thread inside the
# kernel's OpenMP loop (one level of threads). Without it the build falls back to Eigen's product.
# python3-venv, python3-dev: the Python package (pip install . into a venv; its nanobind module
# compiles against Python's headers); pip fetches nanobind, scikit-build-core, NumPy from PyPI.
# CUDA is not installed here (it is optional: with nvcc on PATH the cuda/ parts are built too).
# --web: also the browser build's (scripts/web.sh): emscripten 3.1.6 (its system libraries come
# prebuilt), Debian's chromium for the headless page tests, and Dear ImGui 1.86's full source
# (libimgui-dev has no imgui.cpp): `apt-get source` from a deb-src entry added beside Debian's own
# list, unpacked into .deps/imgui-1.86 of the repository.
set -euo pipefail
web=0
[ "${1:-}" = "--web" ] && web=1
pkgs=(build-essential cmake ninja-build pkgconf
      libeigen3-dev libopenblas-openmp-dev doctest-dev libcli11-dev nlohmann-json3-dev
      python3 python3-numpy python3-venv python3-dev
      libimgui-dev libglfw3-dev libstb-dev libgl1-mesa-dri libglx-mesa0 xvfb xauth
      libopenmpi-dev openmpi-bin)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "install-deps: installing ${missing[*]}"
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  $SUDO apt-get update -q
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q --no-install-recommends "${missing[@]}"
else
  echo "install-deps: all packages present"
fi

if ((web)); then
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  wmissing=()
  for p in emscripten chromium dpkg-dev; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || wmissing+=("$p")
  done
  if ((${#wmissing[@]})); then
    echo "install-deps: installing ${wmissing[*]} (the web build)"
    $SUDO apt-get update -q
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q "${wmissing[@]}"
  fi
  root="$(cd "$(dirname "$0")/.." && pwd)"
  if [ ! -f "$root/.deps/imgui-1.86/imgui.cpp" ]; then
    if ! grep -rqsE '^(Types:.*deb-src|deb-src )' /etc/apt/sources.list /etc/apt/sources.list.d/; then
      # Debian's own source list, for sources: same URI, suite and keyring as its binary entry
      echo "install-deps: adding a deb-src entry for Debian bookworm (apt-get source imgui)"
      printf 'Types: deb-src\nURIs: http://deb.debian.org/debian\nSuites: bookworm\nComponents: main\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\n' \
        | $SUDO tee /etc/apt/sources.list.d/cplab-deb-src.sources >/dev/null
      $SUDO apt-get update -q
    fi
    tmp="$(mktemp -d)"
    (cd "$tmp" && apt-get source --download-only -q imgui >/dev/null 2>&1) ||
      { echo "install-deps: error: apt-get source imgui failed (is a deb-src entry for bookworm configured?)" >&2; exit 1; }
    mkdir -p "$root/.deps"
    tar -xf "$tmp"/imgui_1.86*.orig.tar.* -C "$root/.deps"
    rm -rf "$tmp"
    [ -f "$root/.deps/imgui-1.86/imgui.cpp" ] || { echo "install-deps: error: Dear ImGui 1.86's source did not unpack into .deps/imgui-1.86" >&2; exit 1; }
    echo "install-deps: Dear ImGui 1.86 source in .deps/imgui-1.86"
  fi
fi
