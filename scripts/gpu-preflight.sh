#!/usr/bin/env bash
# gpu-preflight.sh: what a GPU machine has, before scripts/gpu-results.sh spends its minutes on it.
#
#   bash scripts/gpu-preflight.sh versions          nvidia-smi, nvcc, compute-sanitizer, g++, glibc, cmake,
#                                                   ninja, python3 and torch (version, CUDA, cuDNN, the GPU it
#                                                   sees; a cold import, which also warms the bench steps'
#                                                   torch start), cores, memory, disk. Exit 77 when
#                                                   nvidia-smi lists no GPU (the later steps skip), else 0
#   bash scripts/gpu-preflight.sh ldd BDIR PROG...  ldd of each program (paths relative to BDIR): exit 1
#                                                   when one is missing or a library is "not found"
#
# What it is not: a test (it reports; the steps after it decide).
set -u -o pipefail
cd "$(dirname "$0")/.." || exit 2
if ! command -v nvcc >/dev/null 2>&1 && [ -x /usr/local/cuda/bin/nvcc ]; then export PATH=/usr/local/cuda/bin:$PATH; fi

line() { printf '%-18s %s\n' "$1:" "$2"; }
first() { "$@" 2>&1 | head -1; }

versions() {
  local rc=0 smi
  if smi=$(nvidia-smi --query-gpu=name,memory.total,driver_version,compute_cap,clocks.max.sm --format=csv,noheader 2>&1) &&
     [ -n "$smi" ]; then
    line GPU "$smi"
  else
    line GPU "none: nvidia-smi says: ${smi:-nothing}"
    rc=77
  fi
  line nvcc "$(nvcc --version 2>/dev/null | grep -o 'release .*' || echo 'not found')"
  if command -v compute-sanitizer >/dev/null 2>&1; then
    line compute-sanitizer "$(compute-sanitizer --version 2>&1 | grep -oiE 'version [0-9.]+' | head -1)"
  else
    line compute-sanitizer "not found (call 2 then runs without it)"
  fi
  line g++ "$(first g++ --version)"
  line glibc "$(first ldd --version)"
  line cmake "$(first cmake --version)"
  line ninja "$(ninja --version 2>/dev/null || echo 'not found')"
  line python3 "$(command -v python3) $(first python3 --version)"
  line torch "$(timeout 12 python3 -c '
import torch
c = torch.cuda.is_available()
print(torch.__version__, "cuda", torch.version.cuda, "cudnn", torch.backends.cudnn.version(),
      "device", torch.cuda.get_device_name(0) if c else "none")' 2>&1 | tail -1)"
  line cores "$(nproc)"
  line memory "$(free -g 2>/dev/null | awk '/^Mem:/ { print $2 " GiB, " $7 " available" }')"
  line disk "$(df -h . | awk 'NR == 2 { print $4 " free of " $2 }')"
  line kernel "$(uname -r)"
  if command -v nvidia-smi >/dev/null 2>&1; then echo; nvidia-smi 2>&1 | head -20; fi
  return "$rc"
}

ldd_check() {
  local bdir=$1 rc=0 p out
  shift
  for p in "$@"; do
    if [ ! -x "$bdir/$p" ]; then echo "$p: MISSING (not built)"; rc=1; continue; fi
    out=$(ldd "$bdir/$p" 2>&1) || { echo "$p: ldd failed: $out"; rc=1; continue; }
    echo "$p: $(awk '{ print $1 }' <<<"$out" | paste -sd' ' -)"
    if grep -q 'not found' <<<"$out"; then grep 'not found' <<<"$out" | sed 's/^/  NOT FOUND: /'; rc=1; fi
  done
  return "$rc"
}

case "${1:-}" in
  versions) versions ;;
  ldd) [ $# -ge 3 ] || { echo "gpu-preflight: usage: ldd BDIR PROG..." >&2; exit 2; }; shift; ldd_check "$@" ;;
  -h | --help) sed -n '2,11p' "$0" | sed 's/^# \{0,1\}//' ;;
  *) echo "gpu-preflight: expected versions or ldd BDIR PROG... (got '${1:-}')" >&2; exit 2 ;;
esac
