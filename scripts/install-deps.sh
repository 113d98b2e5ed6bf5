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
set -euo pipefail
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
