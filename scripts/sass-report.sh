#!/usr/bin/env bash
# sass-report.sh [--check] [--out FILE.md]: what every CUDA kernel of cuda/ compiles to, without a GPU.
#
# Compiles each cuda/*.cu for sm_90 (attention_v3_fwd.cu for sm_90a, as cuda/CMakeLists.txt does) with
# nvcc -cubin -Xptxas -v, then scripts/sass_report.py prints per kernel: registers, spills, stack
# (local memory) and shared memory, and per iteration of its inner loop (the loop holding the most
# MMA instructions) the counts of HMMA/HGMMA, MUFU.EX2, FFMA, other float ops, branches, barriers and
# memory, and the non-MMA, non-memory instructions per score element.
#   --check     exit 1 if a forward kernel spills or uses local memory (CI: ctest `sass_report`)
#   --out FILE  also write the report there (docs/sass-report.md is the committed one)
# Needs nvcc (CUDA 13: /usr/local/cuda/bin or PATH); exits 77 ("skipped") without it. cuobjdump comes
# (and the nvdisasm it runs) from the toolkit, else from PyPI (nvidia-cuda-cuobjdump and
# nvidia-cuda-nvdisasm, installed once into .deps/sass-tools);
# without it only the ptxas columns are filled (and --check still works: it reads ptxas).
# What it is not: a timing (instruction counts are not cycles) or the build (cmake builds the library).
set -euo pipefail
cd "$(dirname "$0")/.."
check=""
out=""
while (($#)); do
  case "$1" in
    --check) check=--check ;;
    --out) out="$2"; shift ;;
    *) echo "sass-report.sh: unknown argument $1 (use --check, --out FILE.md)" >&2; exit 2 ;;
  esac
  shift
done
NVCC=$(command -v nvcc || true)
[ -n "$NVCC" ] || NVCC=/usr/local/cuda/bin/nvcc
if [ ! -x "$NVCC" ]; then
  echo "sass-report.sh: skipped: no nvcc (on PATH or /usr/local/cuda/bin)"
  exit 77
fi
bindir=$(dirname "$NVCC")
CUOBJDUMP=$(command -v cuobjdump || true)
[ -n "$CUOBJDUMP" ] || { [ -x "$bindir/cuobjdump" ] && CUOBJDUMP="$bindir/cuobjdump"; } || true
if [ -z "$CUOBJDUMP" ]; then
  tools=.deps/sass-tools
  if [ ! -x $tools/nvidia/cu13/bin/cuobjdump ] || [ ! -x $tools/nvidia/cu13/bin/nvdisasm ]; then
    python3 -m pip install -q --disable-pip-version-check --upgrade --target $tools nvidia-cuda-cuobjdump nvidia-cuda-nvdisasm >/dev/null 2>&1 ||
      echo "sass-report.sh: cuobjdump not in the toolkit and not installable from PyPI: ptxas columns only" >&2
  fi
  CUOBJDUMP=$(ls $tools/nvidia/cu*/bin/cuobjdump 2>/dev/null | head -1 || true)
fi
# cuobjdump -sass runs nvdisasm: the one beside it
[ -n "$CUOBJDUMP" ] && export PATH="$(dirname "$CUOBJDUMP"):$PATH"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
flags=(-cubin -std=c++20 -O3 -Xptxas -v -I reference -I cuda)
for f in cuda/*.cu; do
  stem=$(basename "$f" .cu)
  arch=(-arch=sm_90)
  [ "$stem" = attention_v3_fwd ] && arch=(-arch=sm_90a -DCPLAB_HAVE_V3=1)
  "$NVCC" "${flags[@]}" "${arch[@]}" "$f" -o "$work/$stem.cubin" >"$work/$stem.ptxas.txt" 2>&1 || {
    cat "$work/$stem.ptxas.txt" >&2
    echo "sass-report.sh: nvcc failed on $f" >&2
    exit 1
  }
done
{
  echo "# SASS report: cuda/ kernels"
  echo
  echo "Made by \`scripts/sass-report.sh\` ($("$NVCC" --version | tail -1); cubins for sm_90, v3 for sm_90a;"
  echo "$( [ -n "$CUOBJDUMP" ] && "$CUOBJDUMP" --version | tail -1 || echo 'no cuobjdump')). Registers, spills, stack"
  echo "and shared memory are ptxas's; the loop columns count one iteration of each kernel's inner loop"
  echo "(the loop holding the most MMA instructions) in the SASS. LDSM (ldmatrix) and LDS are the loop's"
  echo "shared-memory loads (counted in \"memory\" too); \"(LDSM + LDS) / MMA\" is their number per tensor-core"
  echo "instruction. \"Score elements / thread\" is that iteration's MUFU.EX2 count minus the rows one"
  echo "thread holds (\"rows / thread\": one rescale exponential per row; 4 in v2 forward, whose warps own"
  echo "32 rows, 2 in v3 forward; 0 in a backward kernel, which recomputes P), each score"
  echo "needing one exponential. \"Softmax instr. / element\" divides the loop's MUFU, FFMA, other float"
  echo "and branch instructions by it; the last column all but MMA, memory and barriers (integer address"
  echo "arithmetic included). A kernel that runs its boundary (masked) tiles and its full tiles in loops"
  echo "of their own (v2 forward) is reported by the smaller loop of those with the most MMAs: the full"
  echo "tiles' steady state. Instruction counts, not cycles: see scripts/sass_report.py."
  echo
  python3 scripts/sass_report.py "$work" "${CUOBJDUMP:--}" $check
} > "$work/report.md" || { cat "$work/report.md"; exit 1; }
cat "$work/report.md"
if [ -n "$out" ]; then cp "$work/report.md" "$out"; fi
