#!/usr/bin/env python3
"""cpu_bench_check.py: cplab-cpu-bench at tiny sizes: exit 0, a row per mode x dtype in the table and
the JSON (positive GFLOP/s, a peak, a ratio), every check within tolerance; the inference rows
(issue 37: pass-KV and pass-Q over a KV cache) the same; bad input exits 2 naming the rule. Usage: cpu_bench_check.py CPLAB_CPU_BENCH WORK_DIR
What it is not: a timing test (no number is compared with a time or a speed; only their presence).
"""
import json
import os
import subprocess
import sys

bench, work = sys.argv[1], sys.argv[2]
os.makedirs(work, exist_ok=True)
failures = []
tiny = ["--seq", "64", "--cp", "4", "--hcp", "2,2", "--heads", "4", "--kv-heads", "2", "--head-dim", "8",
        "--check-seq", "32", "--peak-size", "64", "--reps", "1", "--peak-reps", "1",
        "--kv-cache", "37", "--infer-seq", "6", "--check-kv-cache", "7", "--check-infer-seq", "5"]
out_json = os.path.join(work, "cpu.json")
p = subprocess.run([bench] + tiny + ["--json", out_json], capture_output=True, text=True, timeout=300)
if p.returncode != 0:
    failures.append(f"tiny run exited {p.returncode}: {p.stderr.strip()}")
else:
    modes = ["p2p", "allgather", "a2a", "a2a+p2p 2x2"]
    for line in ["machine: ", "products: ", "double GEMM peak: ", "float GEMM peak: "]:
        if line not in p.stdout:
            failures.append(f"the output lacks '{line}'")
    rows = [l.split() for l in p.stdout.splitlines() if l.split()[:1] and l.split()[0] in ("p2p", "allgather", "a2a", "a2a+p2p")]
    if len([r for r in rows if r[-1] == "ok"]) != 2 * len(modes):
        failures.append(f"expected {2 * len(modes)} checks 'ok':\n{p.stdout}")
    j = json.load(open(out_json))
    # a mode's label may end with " (kv xF)": KV heads repeated for its all-to-all
    if [(r["mode"].split(" (")[0], r["dtype"]) for r in j["rows"]] != [(m, d) for d in ("double", "float") for m in modes]:
        failures.append(f"JSON rows: {[(r['mode'], r['dtype']) for r in j['rows']]}")
    for r in j["rows"]:
        if not (r["fwd_gflops"] > 0 and r["bwd_gflops"] > 0 and r["peak_before"] > 0 and r["ratio_all"] > 0):
            failures.append(f"JSON row without positive figures: {r}")
    if not all(c["pass"] for c in j["checks"]) or len(j["checks"]) != 2 * len(modes):
        failures.append(f"JSON checks: {j['checks']}")
    # the inference rows: pass-KV and pass-Q per dtype, timed beside the peak and checked against dense
    variants = ["pass-KV (p2p)", "pass-Q"]
    if "inference (issue 37): T = 6 new tokens over a KV cache of P = 37" not in p.stdout:
        failures.append("the output lacks the inference table's heading")
    checked = [l for l in p.stdout.splitlines() if l.strip().startswith(("pass-KV (p2p)", "pass-Q"))]
    if len([l for l in checked if l.split()[-1] == "ok"]) != 2 * len(variants):
        failures.append(f"expected {2 * len(variants)} inference checks 'ok':\n{p.stdout}")
    if [(r["variant"], r["dtype"]) for r in j.get("infer_rows", [])] != [(v, d) for d in ("double", "float") for v in variants]:
        failures.append(f"JSON infer_rows: {j.get('infer_rows')}")
    for r in j.get("infer_rows", []):
        if not (r["fwd_gflops"] > 0 and r["peak_best"] > 0 and r["ratio_fwd"] > 0 and r["kv_cache"] == 37):
            failures.append(f"JSON inference row without positive figures: {r}")
    ic = j.get("infer_checks", [])
    if len(ic) != 2 * len(variants) or not all(c["pass"] for c in ic):
        failures.append(f"JSON infer_checks: {ic}")
    for key in ("cpu", "gemm", "cpu_simd", "build_simd", "omp_threads"):
        if key not in j["machine"]:
            failures.append(f"JSON machine lacks {key}")
bad = [(["--dtype", "half"], "--dtype 'half' must be double or float"),
       (["--reps", "0"], "--reps and --peak-reps must be >= 1"),
       (["--modes", "ring"], "ring"),
       (["--seq", "100", "--cp", "8"], "100"),
       (["--peak-size", "9000"], "--peak-size must be in [64, 8192]"),
       (["--infer-modes", "a2a"], "mode 'a2a' is not an inference mode"),
       (["--kv-cache", "-1"], "--kv-cache -1 must be >= 0")]
for args, words in bad:
    q = subprocess.run([bench] + args, capture_output=True, text=True, timeout=60)
    if q.returncode != 2 or "cplab-cpu-bench: error:" not in q.stderr or words not in q.stderr:
        failures.append(f"{args}: exit {q.returncode}, stderr {q.stderr.strip()!r} (want exit 2 naming {words!r})")
for f in failures:
    print("FAIL:", f)
print(f"cpu_bench_check: {len(failures)} failed")
sys.exit(1 if failures else 0)
