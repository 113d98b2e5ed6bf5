#!/usr/bin/env bash
# gpu-build-measure.sh: measure, on this machine, the configure and the build of exactly the targets
# scripts/gpu-results.sh builds on the GPU machine, in CPU seconds, and scale them to that machine.
#
#   bash scripts/gpu-build-measure.sh BUILD_DIR CORES CONFIGURE_ARGS... -- TARGETS...
#
# What it does: removes BUILD_DIR, configures it with CONFIGURE_ARGS (no ccache: every object is
# compiled), then builds TARGETS with `cmake --build BUILD_DIR -j $(nproc) --target ...`, all under
# /usr/bin/time (CPU = user + sys of every child process, which is what a busy machine does not
# inflate much, unlike the wall clock). Every compile and link job runs through a launcher
# (CMAKE_{CXX,CUDA}_COMPILER_LAUNCHER, CMAKE_{CXX,CUDA}_LINKER_LAUNCHER) that records its own CPU
# seconds, so the longest job is known. Prints markdown: the totals, the ten longest jobs, and the
# scaled figure from scripts/gpu_build_scale.py (its docstring states the scaling assumption).
# What it is not: a build for use (BUILD_DIR is throw-away), or a measurement of the GPU machine.
set -euo pipefail
cd "$(dirname "$0")/.."
[ $# -ge 3 ] || { echo "usage: $0 BUILD_DIR CORES CONFIGURE_ARGS... -- TARGETS..." >&2; exit 2; }
bdir=$1 cores=$2
shift 2
cfg=()
while [ $# -gt 0 ] && [ "$1" != -- ]; do cfg+=("$1"); shift; done
[ "${1:-}" = -- ] || { echo "gpu-build-measure: no '--' before the targets" >&2; exit 2; }
shift
[ $# -gt 0 ] || { echo "gpu-build-measure: no targets given" >&2; exit 2; }
targets=("$@")
[ -x /usr/bin/time ] || { echo "gpu-build-measure: needs /usr/bin/time (apt-get install time)" >&2; exit 2; }

rm -rf "$bdir"
mkdir -p "$bdir"
bdir=$(cd "$bdir" && pwd)
jobs=$bdir/jobs.tsv  # output file, user s, sys s, wall s: one line per compile or link job
launcher=$bdir/cpu-launcher.sh
cat >"$launcher" <<EOF
#!/bin/sh
# one compile or link job under /usr/bin/time, its CPU seconds appended to $jobs
out=unknown prev=""
for a in "\$@"; do [ "\$prev" = -o ] && out=\$a; prev=\$a; done
exec /usr/bin/time -a -o "$jobs" -f "\$out	%U	%S	%e" "\$@"
EOF
chmod +x "$launcher"
: >"$jobs"
export CCACHE_DISABLE=1
l=(-DCMAKE_CXX_COMPILER_LAUNCHER="$launcher" -DCMAKE_CUDA_COMPILER_LAUNCHER="$launcher"
   -DCMAKE_CXX_LINKER_LAUNCHER="$launcher" -DCMAKE_CUDA_LINKER_LAUNCHER="$launcher")
cfg_time=$bdir/configure.time build_time=$bdir/build.time
/usr/bin/time -o "$cfg_time" -f "%U %S %e" cmake -S . -B "$bdir" "${cfg[@]}" "${l[@]}" >"$bdir/configure.log" 2>&1 ||
  { tail -20 "$bdir/configure.log" >&2; exit 1; }
: >"$jobs"  # the configure's try-compiles do not go through the launcher, but be sure
/usr/bin/time -o "$build_time" -f "%U %S %e" cmake --build "$bdir" -j "$(nproc)" --target "${targets[@]}" \
  >"$bdir/build.log" 2>&1 || { tail -20 "$bdir/build.log" >&2; exit 1; }

read -r cu cs cw <"$cfg_time"
read -r bu bs bw <"$build_time"
echo "Measured on $(hostname), $(nproc) cores ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')),"
echo "$(date -u +%Y-%m-%dT%H:%M:%SZ), load average at the end: $(cut -d' ' -f1-3 /proc/loadavg) (other jobs were running)."
echo
echo "- configure: CPU $(awk -v u="$cu" -v s="$cs" 'BEGIN{printf "%.1f", u+s}') s (user $cu + sys $cs), wall $cw s"
echo "- build of ${targets[*]}: CPU $(awk -v u="$bu" -v s="$bs" 'BEGIN{printf "%.1f", u+s}') s (user $bu + sys $bs), wall $bw s (-j $(nproc), busy machine)"
echo "- jobs recorded by the launcher: $(wc -l <"$jobs") (compiles and links; static-library archiving is not wrapped)"
echo
python3 scripts/gpu_build_scale.py "$jobs" "$cores" "$(awk -v u="$bu" -v s="$bs" 'BEGIN{print u+s}')"
