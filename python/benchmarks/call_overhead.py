"""call_overhead.py: what calling the reference from Python costs, against the C++ call itself.

Run: python python/benchmarks/call_overhead.py [--seq 8192 --cp 8 --repeats 3 --json FILE]

Case: an 8K-token, cp 8 ring (p2p, zigzag, causal), 8 heads (kv 2), head dim 64, forward and
backward, in double, from NumPy float64 inputs (used in place). Baseline: the C++ call the binding
makes (app/embedded.h run_embedded: the command line's parsing and rules, the CP run and the dense
oracle), timed around it in C++. Overhead = Python wall time of cplab.run - that: the keyword
arguments, the array checks, the worker thread, the result object and its JSON report. The outputs are checked in
the same run (errors against dense attention below 1e-10). FLOPs: the report's dense_flops (the
attention itself; the CP run and the oracle each do that much). Hardware: printed from
/proc/cpuinfo and cplab.gemm_backend().
What it is not: a benchmark of the attention (bench/cpu/ is).
"""
import argparse
import json
import platform
import time

import numpy as np

import cplab


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seq", type=int, default=8192)
    ap.add_argument("--cp", type=int, default=8)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--json", help="also write the rows as JSON here")
    a = ap.parse_args()
    rng = np.random.default_rng(0)
    h, hk, d = 8, 2, 64
    q, k, v = rng.uniform(-1, 1, (a.seq, h, d)), rng.uniform(-1, 1, (a.seq, hk, d)), rng.uniform(-1, 1, (a.seq, hk, d))
    do = rng.uniform(-1, 1, (a.seq, h, d))
    cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), platform.processor())
    print(f"hardware: {cpu}; products: {cplab.gemm_backend()}")
    print(f"case: p2p zigzag causal, seq {a.seq}, cp {a.cp}, heads {h} (kv {hk}), head dim {d}, forward + backward, double\n")
    print(f"{'repeat':>6} {'python s':>10} {'c++ s':>10} {'overhead s':>11} {'overhead %':>11} {'max error':>10}")
    rows = []
    for i in range(a.repeats):
        t0 = time.perf_counter()
        r = cplab.run(q, k, v, do, mode="p2p", layout="zigzag", causal=True, cp=a.cp, backward=True)
        wall = time.perf_counter() - t0
        inner = r._r.call_seconds
        err = max(e for e in r.errors.values() if e is not None)
        assert err < 1e-10, err
        rows.append({"python_s": wall, "cpp_s": inner, "overhead_s": wall - inner, "overhead_pct": 100 * (wall - inner) / inner,
                     "max_error": err, "dense_flops": r.report["dense_flops"]})
        x = rows[-1]
        print(f"{i:>6} {wall:>10.3f} {inner:>10.3f} {x['overhead_s']:>11.3f} {x['overhead_pct']:>10.2f}% {err:>10.1e}")
    best = min(rows, key=lambda x: x["python_s"])
    print(f"\nbest of {a.repeats}: overhead {best['overhead_s'] * 1000:.1f} ms = {best['overhead_pct']:.2f}% of the C++ call "
          f"(goal: under 5%)")
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"cpu": cpu, "products": cplab.gemm_backend(), "seq": a.seq, "cp": a.cp, "rows": rows}, f, indent=2)


if __name__ == "__main__":
    main()
