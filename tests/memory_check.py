#!/usr/bin/env python3
"""memory_check.py: the CPU reference's memory estimate against the measured peak RSS (ctest memory_estimate).

Usage: python3 memory_check.py PATH/TO/cplab

For each configuration, `cplab run ... --json` runs in a child process; its report's
memory_estimate.bytes (reference/run/memory_estimate.h, the number validate() holds against the
16 GiB limit) is compared with the child's peak RSS (wait4's ru_maxrss) minus the baseline of a
tiny run (the program, its libraries, OpenMP's threads: ~14 MiB). The estimate must be
  >= measured - baseline         (an estimate below the real peak would let a run past the limit)
  <= 1.5 x (measured - baseline) (an estimate far above it would refuse runs that fit)
The configurations cover every mode, forward and backward, float and double, GQA, --merge fold,
packed sequences and a 128-rank all-gather whose trace and messages dominate, each of 0.25-1 GiB.
Measured when written (2 threads, glibc 2.36): estimate / measured = 1.07 to 1.26.
Not run in the sanitizer build (ASan's shadow memory and redzones are no part of the estimate).
What it is not: a timing (no clock is read), or a check of runs above the limit (bad_input_check.py).
"""
import json
import os
import subprocess
import sys

CPLAB = sys.argv[1]
MIB = 1 << 20
BIG = ["--seq", "256", "--heads", "32", "--kv-heads", "32", "--head-dim", "256"]  # (S, h, d) double = 16 MiB
CONFIGS = [
    ["--mode", "p2p", "--cp", "4", *BIG],
    ["--mode", "p2p", "--cp", "4", *BIG, "--backward", "--dtype", "float"],
    ["--mode", "p2p", "--cp", "8", *BIG, "--backward", "--causal", "--merge", "fold"],
    ["--mode", "p2p", "--cp", "4", "--cu-seqlens", "0,41,100,250", "--pad", *BIG[2:], "--backward"],
    ["--mode", "allgather", "--cp", "4", *BIG, "--backward"],
    ["--mode", "allgather", "--cp", "128", "--seq", "512", "--heads", "256", "--kv-heads", "256", "--head-dim", "2"],
    ["--mode", "a2a", "--cp", "4", "--seq", "256", "--heads", "64", "--kv-heads", "8", "--head-dim", "256", "--backward"],
    ["--mode", "a2a+p2p", "--hcp", "2,2", "--cp", "4", *BIG, "--backward"],
]


def run(args):
    """(the report's memory estimate, the child's peak RSS in bytes); exits on a failed run"""
    p = subprocess.Popen([CPLAB, "run", *args, "--json"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    out, err = p.stdout.read(), p.stderr.read()
    _, status, ru = os.wait4(p.pid, 0)
    if os.waitstatus_to_exitcode(status) != 0:
        sys.exit(f"memory_check: cplab run {' '.join(args)} failed: {err.strip()}")
    return json.loads(out)["memory_estimate"], ru.ru_maxrss * 1024


baseline = run(["--cp", "2", "--seq", "8"])[1]
failures = []
for args in CONFIGS:
    est, rss = run(args)
    measured = rss - baseline
    ratio = est["bytes"] / measured
    line = (f"{' '.join(args):100s} estimate {est['bytes'] / MIB:7.1f} MiB ({est['phase']}), "
            f"measured {measured / MIB:7.1f} MiB, ratio {ratio:.2f}")
    print(line)
    if not 1.0 <= ratio <= 1.5:
        failures.append(line)
print(f"memory_check: {len(CONFIGS)} runs (baseline {baseline / MIB:.1f} MiB), {len(failures)} outside [1.0, 1.5]")
for f in failures:
    print("FAIL " + f)
sys.exit(1 if failures else 0)
