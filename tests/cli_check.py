#!/usr/bin/env python3
"""cli_check.py: end-to-end checks of the `cplab` command (run by ctest as `cli_checks`).

Usage: /usr/bin/python3 cli_check.py PATH/TO/cplab SCRATCH_DIR

1. Every bad input exits with status 2 and a message naming the rule it broke.
2. `--trace` files sum to the printed bytes, messages and FLOPs; `--chrome-trace` is trace-event JSON.
3. Q, K, V, dO written by NumPy are read by cplab, and the O, LSE, dQ, dK, dV it writes load in NumPy
   and equal an independent NumPy implementation of attention (float64 and float32).
4. --help works for the command and its subcommands; `cplab demo` passes.
Needs numpy (Debian's python3-numpy, i.e. /usr/bin/python3).
"""
import json
import os
import subprocess
import sys

import numpy as np

CPLAB, SCRATCH = sys.argv[1], sys.argv[2]
os.makedirs(SCRATCH, exist_ok=True)
failures = []


def run(*args):
    return subprocess.run([CPLAB, *args], capture_output=True, text=True, timeout=300)


def expect_error(args, needle):
    p = run(*args)
    if p.returncode != 2 or needle not in p.stderr:
        failures.append(f"{' '.join(args)}: expected exit 2 and '{needle}', got {p.returncode}: {p.stderr.strip()}")


def path(name):
    return os.path.join(SCRATCH, name)


# ---- 1. bad input -------------------------------------------------------------------------------
small = ["run", "--heads", "2", "--kv-heads", "1", "--head-dim", "4"]
expect_error(small + ["--seq", "1000", "--cp", "8", "--layout", "zigzag"], "seq 1000 is not a multiple of 2*cp = 16")
expect_error(small + ["--seq", "10", "--cp", "4", "--layout", "striped"], "seq 10 is not a multiple of cp = 4")
expect_error(small + ["--seq", "10", "--cp", "3", "--layout", "contiguous"], "seq 10 is not a multiple of cp = 3")
expect_error(["run", "--heads", "8", "--kv-heads", "3", "--seq", "64"], "kv-heads 3 does not divide heads 8")
expect_error(small + ["--cp", "0", "--seq", "64"], "cp 0 must be >= 1")
expect_error(small + ["--cp", "-2", "--seq", "64"], "cp -2 must be >= 1")
expect_error(["run", "--head-dim", "0", "--seq", "64"], "head-dim 0 must be >= 1")
expect_error(small + ["--seq", "64", "--layout", "diagonal"], "layout 'diagonal' is not one of")
expect_error(small + ["--seq", "64", "--mode", "a2a", "--cp", "4"], "heads 2 is not divisible by cp = 4")
expect_error(["run", "--heads", "8", "--kv-heads", "2", "--seq", "64", "--mode", "a2a", "--cp", "4"],
             "kv-heads 2 is not divisible by cp = 4 (the all-to-all splits the KV heads over ranks); pass --replicate-kv")
expect_error(["run", "--heads", "8", "--kv-heads", "8", "--seq", "64", "--mode", "a2a+p2p", "--cp", "8", "--hcp", "3,2"],
             "--hcp 3,2 multiplies to 6, not cp = 8 (ICP x OCP must equal cp)")
expect_error(["run", "--heads", "8", "--kv-heads", "8", "--seq", "64", "--mode", "a2a+p2p", "--cp", "8"],
             "a2a+p2p needs --hcp ICP,OCP")
expect_error(["run", "--seq", "64", "--mode", "p2p", "--hcp", "2,2"], "--hcp is only for --mode a2a+p2p")
expect_error(["run", "--mode", "p2p", "--cp", "3", "--cu-seqlens", "0,10,34,39"],
             "sequence 0 has length 10, not a multiple of 2*cp = 6 (zigzag splits every sequence into 2*cp equal chunks); pass --pad")
expect_error(["run", "--mode", "p2p", "--cp", "3", "--cu-seqlens", "0,10,10"], "cu_seqlens must strictly increase")
expect_error(["run", "--mode", "p2p", "--cp", "3", "--seq", "48", "--cu-seqlens", "0,12,36,42"], "seq 48 disagrees with the packed total 42 of cu_seqlens")
expect_error(["run", "--mode", "a2a+p2p", "--cp", "4", "--hcp", "2,2", "--heads", "4", "--kv-heads", "4",
              "--cu-seqlens", "0,16,32"], "not a2a+p2p")
expect_error(["run", "--seq", "64", "--pad"], "--pad needs --cu-seqlens")
open(path("afile"), "w").close()
expect_error(["run", "--seq", "64", "--out-dir", path("afile")], "cannot create the directory")
expect_error(["run", "--seq", "64", "--trace", "/proc/nonexistent/t.json"], "cannot open for writing")
expect_error(["run", "--seq", "64", "--trace", ""], "--trace needs a value")
expect_error(["run", "--seq", "64", "--seed", "-1"], "seed -1 must be >= 0")
expect_error(["run", "--cp", "2", "--cu-seqlens", "0,8,"], "cu_seqlens entry '' is not an integer")
expect_error(["run", "--cp", "2", "--cu-seqlens", ""], "--cu-seqlens needs a value")
expect_error(["run", "--cp", "0", "--cu-seqlens", "0,8", "--pad"], "cp 0 must be >= 1")
expect_error(["run", "--cu-seqlens", "0,9223372036854775807", "--pad"], "is more than 2^40 tokens")
expect_error(["run", "--mode", "allgather", "--seq", "64", "--merge", "fold"], "--merge applies to the modes")
expect_error(["run", "--mode", "a2a+p2p", "--cp", "4", "--hcp", "4,4611686018427387905", "--seq", "64", "--heads", "4",
              "--kv-heads", "4"], "(ICP x OCP must equal cp)")
expect_error(["run", "--mode", "a2a+p2p", "--cp", "4", "--hcp", "2", "--seq", "64"], "must be two sizes ICP,OCP")
expect_error(["run", "--dtype", "float", "--scale", "1e300", "--seq", "64"], "overflows float arithmetic")
expect_error(["run", "--mode", "allgather", "--cp", "256", "--seq", "65536", "--heads", "1", "--kv-heads", "1"],
             "the limit is 16 GiB")
expect_error(["run", "--seq", "700000", "--cp", "1", "--heads", "1", "--kv-heads", "1", "--head-dim", "1",
              "--layout", "contiguous"], "pass --allow-long")
expect_error(["demo", "--seq", "7"], "seq 7 is not a multiple of 2*cp = 8")
expect_error(small + ["--seq", "64", "--mode", "ring"], "mode 'ring' is not one of")
expect_error(small + ["--seq", "64", "--dtype", "half"], "dtype 'half' is not one of")
expect_error(small + ["--seq", "64", "--merge", "online"], "merge 'online' is not one of")
expect_error(small + ["--seq", "64", "--cp", "abc"], "--cp")
expect_error(small + ["--seq", "64", "--do", path("x.npy")], "--do needs --backward")
expect_error(small + ["--seq", "600", "--cp", "300"], "cp 300 is more than the 256 ranks")
expect_error(["run", "--seq", "1048576", "--cp", "1", "--heads", "1", "--kv-heads", "1"], "pass --allow-long")

rng = np.random.default_rng(7)
S, H, HK, D, DV = 24, 4, 2, 8, 6
q = rng.uniform(-1, 1, (S, H, D))
k = rng.uniform(-1, 1, (S, HK, D))
v = rng.uniform(-1, 1, (S, HK, DV))
do = rng.uniform(-1, 1, (S, H, DV))
for name, arr in [("q", q), ("k", k), ("v", v), ("do", do)]:
    np.save(path(name + ".npy"), arr)
    np.save(path(name + "32.npy"), arr.astype(np.float32))
np.save(path("k_short.npy"), k[:12])
np.save(path("q2d.npy"), q[:, 0, :])
np.save(path("qint.npy"), (q * 10).astype(np.int32))
qnan = q.copy()
qnan[3, 1, 2] = np.nan
np.save(path("qnan.npy"), qnan)
with open(path("garbage.npy"), "wb") as f:
    f.write(b"this is not numpy at all")
npy = ["--cp", "2", "--layout", "zigzag"]
expect_error(["run", *npy, "--q", path("garbage.npy"), "--k", path("k.npy"), "--v", path("v.npy")], "not a .npy file")
expect_error(["run", *npy, "--q", path("q.npy"), "--k", path("k_short.npy"), "--v", path("v.npy")], "has seq 12")
expect_error(["run", *npy, "--q", path("q2d.npy"), "--k", path("k.npy"), "--v", path("v.npy")], "must be 3-d")
expect_error(["run", *npy, "--q", path("qint.npy"), "--k", path("k.npy"), "--v", path("v.npy")], "is not supported")
expect_error(["run", *npy, "--q", path("qnan.npy"), "--k", path("k.npy"), "--v", path("v.npy")], "is not finite")
expect_error(["run", *npy, "--q", path("missing.npy"), "--k", path("k.npy"), "--v", path("v.npy")], "missing.npy")
expect_error(["run", *npy, "--q", path("q.npy")], "--q, --k and --v must be given together")
expect_error(["run", *npy, "--seq", "48", "--q", path("q.npy"), "--k", path("k.npy"), "--v", path("v.npy")], "has seq 24")
expect_error(["run", "--cp", "5", "--q", path("q.npy"), "--k", path("k.npy"), "--v", path("v.npy")],
             "seq 24 is not a multiple of 2*cp = 10")

# ---- 2. trace sums ------------------------------------------------------------------------------
p = run("run", "--mode", "p2p", "--cp", "4", "--seq", "64", "--heads", "4", "--kv-heads", "2", "--head-dim", "8",
        "--causal", "--layout", "zigzag", "--backward", "--json", "--trace", path("t.json"),
        "--chrome-trace", path("chrome.json"))
if p.returncode != 0:
    failures.append(f"trace run failed: {p.stderr}")
else:
    rep = json.loads(p.stdout)
    tr = json.load(open(path("t.json")))
    cp = rep["cp"]
    bytes_ = [0] * cp
    msgs = [0] * cp
    flops = [0] * cp
    for e in tr["events"]:
        if e["kind"] == "send":
            bytes_[e["rank"]] += e["bytes"]
            msgs[e["rank"]] += 1
        elif e["kind"] == "tile":
            flops[e["rank"]] += e["flops"]
    if bytes_ != rep["bytes_sent_per_rank"]:
        failures.append(f"trace bytes {bytes_} != printed {rep['bytes_sent_per_rank']}")
    if msgs != rep["messages_per_rank"] or sum(msgs) != rep["messages"]:
        failures.append(f"trace messages {msgs} != printed {rep['messages_per_rank']}")
    if flops != rep["flops_per_rank"]:
        failures.append(f"trace flops {flops} != printed {rep['flops_per_rank']}")
    for key in ["mode", "cp", "layout", "errors", "flops_per_rank", "work_ratio", "bytes_sent_per_rank", "messages",
                "seconds"]:
        if key not in rep:
            failures.append(f"--json lacks '{key}'")
    if not all(rep["errors"][x] <= 1e-10 for x in ["o", "lse", "dq", "dk", "dv"]):
        failures.append(f"errors too large: {rep['errors']}")
    ch = json.load(open(path("chrome.json")))
    if not any(e.get("ph") == "X" and e.get("cat") == "tile" for e in ch["traceEvents"]):
        failures.append("chrome trace has no tile slices")


# ---- 3. .npy in and out, against an independent NumPy attention ---------------------------------
def numpy_attention(q, k, v, do, causal, scale):
    s, h, d = q.shape
    g = h // k.shape[1]
    kk = np.repeat(k, g, axis=1)  # (s, h, d): fine here, this is the test's own oracle
    vv = np.repeat(v, g, axis=1)
    logits = np.einsum("qhd,khd->hqk", q, kk) * scale
    if causal:
        logits = np.where(np.tril(np.ones((s, s), bool))[None], logits, -np.inf)
    m = logits.max(-1, keepdims=True)
    p = np.exp(logits - m)
    l = p.sum(-1, keepdims=True)
    lse = (m + np.log(l))[..., 0]  # (h, s)
    p = p / l
    o = np.einsum("hqk,khe->qhe", p, vv)
    dvv = np.einsum("hqk,qhe->khe", p, do)
    dp = np.einsum("qhe,khe->hqk", do, vv)
    delta = np.einsum("qhe,qhe->hq", do, o)[..., None]
    ds = p * (dp - delta)
    dq = np.einsum("hqk,khd->qhd", ds, kk) * scale
    dkk = np.einsum("hqk,qhd->khd", ds, q) * scale
    fold = lambda x: x.reshape(s, k.shape[1], g, x.shape[-1]).sum(2)
    return o, lse, dq, fold(dkk), fold(dvv)


for suffix, dtype, tol in [("", np.float64, 1e-12), ("32", np.float32, 2e-5)]:
    out = path("out" + suffix)
    p = run("run", "--cp", "3", "--layout", "striped", "--causal", "--backward", "--dtype",
            "double" if dtype == np.float64 else "float", "--q", path(f"q{suffix}.npy"), "--k", path(f"k{suffix}.npy"),
            "--v", path(f"v{suffix}.npy"), "--do", path(f"do{suffix}.npy"), "--out-dir", out, "--json")
    if p.returncode != 0:
        failures.append(f"npy run ({dtype.__name__}) failed: {p.stderr}")
        continue
    rep = json.loads(p.stdout)
    if (rep["seq"], rep["heads"], rep["kv_heads"], rep["head_dim"], rep["v_head_dim"]) != (S, H, HK, D, DV):
        failures.append(f"sizes not taken from the .npy files: {rep}")
    x = [a.astype(dtype).astype(np.float64) for a in (q, k, v, do)]
    ref = numpy_attention(*x, True, 1 / np.sqrt(D))
    for name, r in zip(["o", "lse", "dq", "dk", "dv"], ref):
        a = np.load(os.path.join(out, name + ".npy"))
        if a.dtype != dtype or a.shape != r.shape:
            failures.append(f"{name}.npy: dtype {a.dtype} shape {a.shape}, expected {dtype.__name__} {r.shape}")
            continue
        err = np.abs(a - r).max() / np.abs(r).max()
        if not err <= tol:
            failures.append(f"{name}.npy ({dtype.__name__}) differs from NumPy's attention: {err:.3e} > {tol}")

# ---- 4. layout: TE's THD example (docs/sources.md) ------------------------------------------------
p = run("layout", "--cp", "3", "--cu-seqlens", "0,12,36,42", "--json")
seed = [[0, 1, 10, 11, 12, 13, 14, 15, 32, 33, 34, 35, 36, 41],
        [2, 3, 8, 9, 16, 17, 18, 19, 28, 29, 30, 31, 37, 40],
        [4, 5, 6, 7, 20, 21, 22, 23, 24, 25, 26, 27, 38, 39]]
if p.returncode != 0 or [r["indices"] for r in json.loads(p.stdout)["ranks"]] != seed:
    failures.append(f"cplab layout does not print TE's lists: {p.stdout}{p.stderr}")
positions = [[0, 1, 10, 11, 0, 1, 2, 3, 20, 21, 22, 23, 0, 5], [2, 3, 8, 9, 4, 5, 6, 7, 16, 17, 18, 19, 1, 4],
             [4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 2, 3]]
if p.returncode == 0 and [r["positions"] for r in json.loads(p.stdout)["ranks"]] != positions:
    failures.append("cplab layout: RoPE positions differ from TE's")
expect_error(["layout", "--cp", "3", "--cu-seqlens", "0,10,34,39"], "pass --pad")

# ---- 5. schedule: Megatron v1 on the 8-sample DCP example -----------------------------------------
seed_dcp = ["schedule", "--ranks", "8", "--max-seqlen-per-rank", "4096", "--lengths", "32768,16384,8192,4096,4096,4096,4096,2048"]
p = run(*seed_dcp, "--scheduler", "megatron", "--json")
if p.returncode != 0:
    failures.append(f"cplab schedule failed: {p.stderr}")
else:
    r = json.loads(p.stdout)
    got = [[(g["ranks"], g["samples"], g["load"]) for g in rnd] for rnd in r["rounds"]]
    want = [[(list(range(8)), [0], 128.0)],
            [([0, 1, 2, 3], [1], 64.0), ([4, 5], [2], 32.0), ([6], [3, 5, 7], 36.0), ([7], [4, 6], 32.0)]]
    if got != want or r["makespan"] != 192.0 or not r["aligned"]:
        failures.append(f"megatron v1 placement differs from docs/sources.md's: {got}")
p = run(*seed_dcp, "--scheduler", "cplab", "--json")
# the bound is bisected to a relative 1e-9 (kRelTol in core/util.h)
if p.returncode != 0 or abs(json.loads(p.stdout)["ratio"] - 1.0) > 2e-9:
    failures.append(f"cplab scheduler does not reach the lower bound on the 8-sample example: {p.stdout}{p.stderr}")
# cplab under the overhead cost: re-checked here from the JSON alone, with the cost formula of
# reference/dcp/dcp_cost.h written out again: every sample once, aligned groups, no rank in two groups
# at once, loads and makespan as the model says, never below the lower bound, process groups listed
def t_overhead(L, c, a=0.5, alpha=0.2, beta=0.3, o=1.0):
    lk = L / 1024.0
    return (a * lk + lk * lk) / c + (c - 1) * (alpha + max(0.0, beta * lk / c - lk * lk / (c * c))) + (o if c > 1 else 0.0)
seed_lengths = [32768, 16384, 8192, 4096, 4096, 4096, 4096, 2048]
for sched in ["cplab", "megatron"]:
    p = run(*seed_dcp, "--scheduler", sched, "--cost", "overhead", "--json")
    if p.returncode != 0:
        failures.append(f"cplab schedule --cost overhead failed: {p.stderr}")
        continue
    r = json.loads(p.stdout)
    seen, total, problems = [], 0.0, []
    for rnd in r["rounds"]:
        busy = {}
        end = 0.0
        for g in rnd:
            c, ranks = g["cp"], g["ranks"]
            if c & (c - 1) or ranks != list(range(ranks[0], ranks[0] + c)) or ranks[0] % c:
                problems.append(f"unaligned group {ranks}")
            load = sum(t_overhead(seed_lengths[i], c) for i in g["samples"])
            if abs(load - g["load"]) > 1e-9 * max(1.0, load):
                problems.append(f"load {g['load']} != {load}")
            seen += g["samples"]
            for q in ranks:
                busy.setdefault(q, []).append((g["begin"], g["begin"] + load))
            end = max(end, g["begin"] + load)
        for q, iv in busy.items():
            iv.sort()
            if any(b0 < e0 - 1e-9 for (_, e0), (b0, _) in zip(iv, iv[1:])):
                problems.append(f"rank {q} runs two groups at once")
        total += end
    if sorted(seen) != list(range(8)):
        problems.append(f"samples scheduled {sorted(seen)}")
    if abs(total - r["makespan"]) > 1e-9 * total or r["makespan"] < r["lower_bound"] - 1e-9:
        problems.append(f"makespan {r['makespan']} vs recomputed {total}, bound {r['lower_bound']}")
    used = {pg["cp"]: pg["used_starts"] for pg in r["process_groups"]}
    want_used = {}
    for rnd in r["rounds"]:
        for g in rnd:
            want_used.setdefault(g["cp"], set()).add(g["ranks"][0])
    if any(sorted(want_used.get(c, [])) != u for c, u in used.items()) or len(r["process_groups"]) != 4:
        problems.append(f"process groups {r['process_groups']}")
    if problems:
        failures.append(f"schedule --scheduler {sched} --cost overhead: " + "; ".join(problems))
p = run("schedule", "--dist", os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "data", "dcp", "web_lognormal.json"), "--batches", "20", "--ranks", "16", "--cost", "overhead")
if p.returncode != 0 or not all(k in p.stdout for k in ["megatron", "cplab", "ratio mean", "speedup vs static"]):
    failures.append(f"schedule --dist: {p.stdout}{p.stderr}")
# batches run side by side on OpenMP threads: every figure but the times is the same with 1 thread and 3
dist_args = [CPLAB, "schedule", "--dist", os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "data", "dcp", "code_longtail.json"),
             "--batches", "40", "--ranks", "64", "--max-seqlen-per-rank", "8192", "--cost", "overhead", "--json"]
by_threads = {}
for t in ("1", "3"):
    q = subprocess.run(dist_args, capture_output=True, text=True, timeout=300, env={**os.environ, "OMP_NUM_THREADS": t})
    if q.returncode != 0:
        failures.append(f"schedule --dist with OMP_NUM_THREADS={t}: {q.stderr}")
        continue
    j = json.loads(q.stdout)
    if j["threads"] != int(t):
        failures.append(f"schedule --dist with OMP_NUM_THREADS={t} says threads = {j['threads']}")
    for part in ("megatron", "cplab"):
        j[part].pop("seconds")
    by_threads[t] = {k: j[k] for k in ("megatron", "cplab", "cplab_worse_than_megatron")}
if len(by_threads) == 2 and by_threads["1"] != by_threads["3"]:
    failures.append(f"schedule --dist depends on the thread count: {by_threads}")
expect_error(["schedule", "--ranks", "6", "--lengths", "100"], "ranks 6 is not a power of two")
expect_error(["schedule", "--ranks", "8", "--max-seqlen-per-rank", "4096", "--lengths", "40000"], "more than ranks x max-seqlen-per-rank")
expect_error(["schedule", "--lengths", "100,-5"], "sample 1 has length -5")
expect_error(["schedule", "--dist", path("missing.json")], "cannot open the distribution file")
expect_error(["schedule"], "give --lengths")

# ---- 5b. --plan-only: the same per-rank figures as the computed run, and it says nothing was computed
for extra in (["--mode", "p2p", "--layout", "zigzag"], ["--mode", "a2a", "--layout", "striped"],
              ["--mode", "allgather", "--cu-seqlens", "0,12,36,42", "--pad"]):
    base = ["run", "--cp", "2", "--heads", "4", "--kv-heads", "2", "--head-dim", "8", "--causal", "--backward", "--json"]
    if "--cu-seqlens" not in extra:
        base += ["--seq", "64"]
    if "a2a" in extra:
        base[base.index("--kv-heads") + 1] = "4"
    real, planned = run(*base, *extra), run(*base, *extra, "--plan-only")
    if real.returncode != 0 or planned.returncode != 0:
        failures.append(f"--plan-only {extra}: exit {real.returncode} / {planned.returncode}: {real.stderr}{planned.stderr}")
        continue
    a, b = json.loads(real.stdout), json.loads(planned.stdout)
    for key in ("flops_fwd_per_rank", "flops_bwd_per_rank", "bytes_sent_per_rank", "bytes_recv_per_rank", "dense_flops"):
        if a[key] != b[key]:
            failures.append(f"--plan-only {extra}: {key} {b[key]} != the computed run's {a[key]}")
    if b.get("planned") is not True:
        failures.append(f"--plan-only {extra}: the JSON does not say planned: true")
p = run("run", "--cp", "2", "--seq", "64", "--plan-only")
if p.returncode != 0 or "PLANNED ONLY" not in p.stdout:
    failures.append(f"--plan-only: exit {p.returncode}, no 'PLANNED ONLY' line\n{p.stdout}{p.stderr}")
expect_error(["run", "--cp", "2", "--seq", "64", "--plan-only", "--out-dir", path("x")], "--out-dir cannot go with --plan-only")

# ---- 5b. cplab plan ------------------------------------------------------------------------------
llama = ["plan", "--seq", "131072", "--heads", "32", "--kv-heads", "8", "--head-dim", "128"]
for gpus, want in [("8", "p2p zigzag"), ("32", "a2a+p2p 8x4")]:
    p = run(*llama, "--gpus", gpus, "--gpus-per-node", "8", "--json")
    if p.returncode != 0:
        failures.append(f"plan --gpus {gpus}: exit {p.returncode}\n{p.stderr}")
        continue
    r = json.loads(p.stdout)
    valid = [o for o in r["options"] if o["valid"]]
    if r["recommended"] != want or r["recommended"] != valid[0]["label"] or any(
            a["total_ms"] > b["total_ms"] for a, b in zip(valid, valid[1:])) or "nvlink4" not in json.dumps(r["assumptions"]):
        failures.append(f"plan --gpus {gpus}: recommended {r['recommended']} (expected {want}), options not sorted, or assumptions missing")
p = run(*llama, "--gpus", "16", "--gpus-per-node", "8")
if p.returncode != 0 or "recommended:" not in p.stdout or "assumptions" not in p.stdout:
    failures.append(f"plan (text): exit {p.returncode}\n{p.stdout}{p.stderr}")
expect_error(["plan", "--gpus", "12", "--gpus-per-node", "8"], "gpus 12 must fill whole nodes of gpus-per-node = 8")
expect_error(["plan", "--gpu", "b200"], "gpu preset 'b200' is not one of: h100, h200, h800")
expect_error(["plan", "--calibration", path("missing.json")], "cannot be read")

# ---- 6. help and demo ---------------------------------------------------------------------------
for args, needle in [(["--help"], "layout"), (["run", "--help"], "--hcp"), (["demo", "--help"], "--cp"),
                     (["layout", "--help"], "--cu-seqlens")]:
    p = run(*args)
    if p.returncode != 0 or needle not in p.stdout:
        failures.append(f"cplab {' '.join(args)}: exit {p.returncode}, '{needle}' not in output")
p = run("demo")
if p.returncode != 0 or "FAILED" in p.stdout or p.stdout.count(" ok\n") != 10 or "skipped" in p.stdout:
    failures.append(f"cplab demo: exit {p.returncode}\n{p.stdout}{p.stderr}")

if failures:
    print("\n".join("FAIL: " + f for f in failures))
    sys.exit(1)
print("cli_check: all checks passed")
