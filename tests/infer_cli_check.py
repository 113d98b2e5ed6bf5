#!/usr/bin/env python3
"""infer_cli_check.py: `cplab run --kv-cache` and `cplab check --kv-cache` end to end (ctest
`cli_checks_infer`; issue 37).

Usage: /usr/bin/python3 infer_cli_check.py PATH/TO/cplab SCRATCH_DIR [docs/inference.md]

1. --help of run and check lists --kv-cache, --cache-layout and the inference modes.
2. Every variant (p2p = pass-KV, pass-q, decode-pass-q, decode-ag) x cache layout, on small steps
   (one request, packed requests with their own P, a window, sinks, GQA, uneven T), in double:
   the --json report's errors of O and LSE are below 1e-12, its per-rank bytes and messages equal
   the --trace file's sums, and --plan-only's per-rank figures equal the computed run's.
3. .npy in and out: q.npy (T, h, d), k.npy and v.npy (P+T, hk, ...) written by NumPy; cplab's o.npy
   (T, h, dv) and lse.npy (h, T) equal an independent NumPy attention with the offset P.
4. cplab check --kv-cache: cplab run's outputs are "equivalent"; O made by NumPy with the new
   tokens' positions taken from 0 is named first ("positions taken from 0 instead of P").
5. docs/inference.md's worked example runs and prints the verdicts, spec and error lines it quotes.
Needs numpy (Debian's python3-numpy, i.e. /usr/bin/python3).
What it is not: the bad-input cases (bad_input_check.py's issue-37 section) or the fault table
(tests/test_check_infer.cpp).
"""
import json
import os
import subprocess
import sys

import numpy as np

CPLAB, SCRATCH = sys.argv[1], sys.argv[2]
DOC = sys.argv[3] if len(sys.argv) > 3 else None  # docs/inference.md: its worked example is run
os.makedirs(SCRATCH, exist_ok=True)
failures = []
MODES = ["p2p", "pass-q", "decode-pass-q", "decode-ag"]


def run(*args):
    return subprocess.run([CPLAB, *args], capture_output=True, text=True, timeout=300)


def path(*names):
    return os.path.join(SCRATCH, *names)


def fail(msg):
    failures.append(msg)


# ---- 1. --help ------------------------------------------------------------------------------------
for sub in ("run", "check"):
    p = run(sub, "--help")
    for needle in ("--kv-cache", "--cache-layout", "pass-q", "decode-pass-q", "decode-ag"):
        if p.returncode != 0 or needle not in p.stdout:
            fail(f"cplab {sub} --help: exit {p.returncode}, lacks '{needle}'")

# ---- 2. every variant x cache layout: errors, trace sums, plan-only -----------------------------------
small = ["--heads", "4", "--kv-heads", "2", "--head-dim", "8", "--causal"]
cases = [  # (name, extra args); --seq is T, --cu-seqlens packs the requests' new tokens
    ("one request P 37 T 5", ["--cp", "4", "--kv-cache", "37", "--seq", "5"]),
    ("full prefill P 0 T 9", ["--cp", "3", "--kv-cache", "0", "--seq", "9"]),
    ("decode T 1 P 1000", ["--cp", "4", "--kv-cache", "1000", "--seq", "1"]),
    ("packed P 7,0,20 T 3,8,1", ["--cp", "4", "--kv-cache", "7,0,20", "--cu-seqlens", "0,3,11,12"]),
    ("window 6 P 30 T 7", ["--cp", "2", "--kv-cache", "30", "--seq", "7", "--window", "6"]),
    ("sinks P 12 T 6", ["--cp", "3", "--kv-cache", "12", "--seq", "6", "--sinks"]),
]
checked = 0
for mode in MODES:
    for cache in ("zigzag", "interleaved"):
        for name, extra in cases:
            args = ["run", "--mode", mode, "--cache-layout", cache, *small, *extra]
            tr = path(f"trace_{mode}_{cache}_{len(name)}.json")
            p = run(*args, "--json", "--trace", tr)
            label = f"{mode} cache {cache} {name}"
            checked += 1
            if p.returncode != 0:
                fail(f"{label}: exit {p.returncode}: {p.stderr.strip()[:400]}")
                continue
            j = json.loads(p.stdout)
            errs = j.get("errors", {})
            for key in ("o", "lse"):
                e = errs.get(key)
                if e is None or not e < 1e-12:
                    fail(f"{label}: error of {key} {e}, expected < 1e-12")
            t = json.load(open(tr))
            sent = [0] * t["cp"]
            msgs = [0] * t["cp"]
            for ev in t["events"]:
                if ev["kind"] == "send":
                    sent[ev["rank"]] += ev["bytes"]
                    msgs[ev["rank"]] += 1
            if sent != j["bytes_sent_per_rank"] or msgs != j["messages_per_rank"]:
                fail(f"{label}: trace sums {sent} / {msgs} differ from the report's {j['bytes_sent_per_rank']} / {j['messages_per_rank']}")
            q = run(*args, "--json", "--plan-only")
            if q.returncode != 0:
                fail(f"{label} --plan-only: exit {q.returncode}: {q.stderr.strip()[:400]}")
                continue
            pj = json.loads(q.stdout)
            for key in ("bytes_sent_per_rank", "messages_per_rank", "flops_per_rank"):
                if pj.get(key) != j.get(key):
                    fail(f"{label}: --plan-only {key} {pj.get(key)} differs from the run's {j.get(key)}")
# the human summary names what it checked
p = run("run", "--mode", "pass-q", *small, "--cp", "4", "--kv-cache", "100", "--seq", "6")
for needle in ("error vs dense attention with the offset", "what travelled:", "memory estimate:",
               "equal the trace on every rank", "Mq = 2"):
    if p.returncode != 0 or needle not in p.stdout:
        fail(f"pass-q human summary lacks '{needle}' (exit {p.returncode}): {p.stdout[:600]} {p.stderr[:300]}")


# ---- 3. .npy in and out against NumPy ----------------------------------------------------------------
def numpy_infer(q, k, v, P, T, scale, causal=True):
    """attention of the new tokens, request after request, new token t at position P_b + t"""
    h, hk = q.shape[1], k.shape[1]
    o = np.zeros((q.shape[0], h, v.shape[2]))
    lse = np.zeros((h, q.shape[0]))
    qo = ko = 0
    for Pb, Tb in zip(P, T):
        for t in range(Tb):
            pos = Pb + t
            keys = np.arange(Pb + Tb)
            vis = keys <= pos if causal else np.ones_like(keys, dtype=bool)
            for a in range(h):
                s = scale * (k[ko + keys[vis], a // (h // hk)] @ q[qo + t, a])
                m = s.max()
                w = np.exp(s - m)
                o[qo + t, a] = (w[:, None] * v[ko + keys[vis], a // (h // hk)]).sum(0) / w.sum()
                lse[a, qo + t] = m + np.log(w.sum())
        qo += Tb
        ko += Pb + Tb
    return o, lse


rng = np.random.default_rng(37)
P, T, h, hk, d = [19, 4], [5, 3], 4, 2, 8
IN = path("npy_in")
os.makedirs(IN, exist_ok=True)
q = rng.uniform(-1, 1, (sum(T), h, d))
k = rng.uniform(-1, 1, (sum(P) + sum(T), hk, d))
v = rng.uniform(-1, 1, (sum(P) + sum(T), hk, d))
for n, x in (("q", q), ("k", k), ("v", v)):
    np.save(os.path.join(IN, n + ".npy"), x)
o_ref, lse_ref = numpy_infer(q, k, v, P, T, 1 / np.sqrt(d))
inputs = ["--q", os.path.join(IN, "q.npy"), "--k", os.path.join(IN, "k.npy"), "--v", os.path.join(IN, "v.npy")]
for mode in MODES:
    out = path("npy_out_" + mode)
    p = run("run", "--mode", mode, "--cp", "3", "--kv-cache", "19,4", "--cu-seqlens", "0,5,8", "--causal", *inputs, "--out-dir", out)
    if p.returncode != 0:
        fail(f"npy {mode}: exit {p.returncode}: {p.stderr.strip()[:400]}")
        continue
    o, lse = np.load(os.path.join(out, "o.npy")), np.load(os.path.join(out, "lse.npy"))
    if o.shape != o_ref.shape or lse.shape != lse_ref.shape:
        fail(f"npy {mode}: shapes {o.shape} {lse.shape}, expected {o_ref.shape} {lse_ref.shape}")
        continue
    eo, el = np.abs(o - o_ref).max(), np.abs(lse - lse_ref).max()
    if not (eo < 1e-12 and el < 1e-12):
        fail(f"npy {mode}: |O - numpy| {eo:.2e}, |LSE - numpy| {el:.2e}")

# ---- 4. cplab check --kv-cache --------------------------------------------------------------------
out = path("npy_out_pass-q")
chk = ["check", "--mode", "pass-q", "--cp", "3", "--kv-cache", "19,4", "--cu-seqlens", "0,5,8", "--causal",
       "--inputs", IN, "--outputs", out]
p = run(*chk)
if p.returncode != 0 or not p.stdout.startswith("equivalent\n"):
    fail(f"check of cplab run's outputs: exit {p.returncode}, first line {p.stdout[:80]!r} {p.stderr[:300]}")
# float32 outputs of a float run: equivalent at float32's tolerance
out32 = path("npy_out_f32")
p = run("run", "--mode", "decode-ag", "--cp", "3", "--kv-cache", "19,4", "--cu-seqlens", "0,5,8", "--causal", "--dtype", "float",
        *inputs, "--out-dir", out32)
if p.returncode != 0 or np.load(os.path.join(out32, "o.npy")).dtype != np.float32:
    fail(f"float run: exit {p.returncode} {p.stderr[:300]}")
else:
    p = run("check", "--mode", "decode-ag", "--cp", "3", "--kv-cache", "19,4", "--cu-seqlens", "0,5,8", "--causal",
            "--inputs", IN, "--outputs", out32)
    if p.returncode != 0 or not p.stdout.startswith("equivalent\n") or "(float32)" not in p.stdout:
        fail(f"check of float32 outputs: exit {p.returncode}, {p.stdout[:400]!r}")
# the new tokens' positions taken from 0 (the offset forgotten): O and LSE from NumPy with P = 0 positions
bad = path("from_zero")
os.makedirs(bad, exist_ok=True)
o0 = np.zeros_like(o_ref)
l0 = np.zeros_like(lse_ref)
qo = ko = 0
for Pb, Tb in zip(P, T):
    for t in range(Tb):
        keys = np.arange(t + 1)  # positions 0..t: the first t+1 keys of the request
        for a in range(h):
            s = (k[ko + keys, a // (h // hk)] @ q[qo + t, a]) / np.sqrt(d)
            w = np.exp(s - s.max())
            o0[qo + t, a] = (w[:, None] * v[ko + keys, a // (h // hk)]).sum(0) / w.sum()
            l0[a, qo + t] = s.max() + np.log(w.sum())
    qo += Tb
    ko += Pb + Tb
np.save(os.path.join(bad, "o.npy"), o0)
np.save(os.path.join(bad, "lse.npy"), l0)
p = run(*chk[:-1], bad)
first = "NOT equivalent: the new tokens' positions taken from 0 instead of P"
if p.returncode != 1 or not p.stdout.startswith(first):
    fail(f"check of positions-from-0 outputs: exit {p.returncode}, first line {p.stdout.splitlines()[:1]}, expected '{first}...'")
# O alone (no lse.npy): the same fault, from O
bad_o = path("from_zero_o_only")
os.makedirs(bad_o, exist_ok=True)
np.save(os.path.join(bad_o, "o.npy"), o0)
p = run(*chk[:-1], bad_o)
if p.returncode != 1 or not p.stdout.startswith(first):
    fail(f"check of positions-from-0 O alone: exit {p.returncode}, first line {p.stdout.splitlines()[:1]}")
p = run(*chk[:-1], bad, "--json")
try:
    j = json.loads(p.stdout)
    if j["diagnosis"][0]["id"] != "positions_from_zero" or j["spec"].get("kv_cache") != [19, 4]:
        fail(f"check --json: first hypothesis {j['diagnosis'][0]['id']}, spec {j['spec']}")
except (ValueError, KeyError, IndexError) as e:
    fail(f"check --json: {e}: {p.stdout[:300]} {p.stderr[:300]}")

# ---- 5. docs/inference.md's worked example: its script prints the lines the page quotes ---------------
if DOC:
    text = open(DOC, encoding="utf-8").read()
    part = text[text.index("## `cplab check --kv-cache`"):]
    script = part[part.index("```sh\n") + 6:]
    script = script[:script.index("```")]
    printed = part[part.index("prints (the first line"):]
    printed = printed[printed.index("```\n") + 4:]
    printed = printed[:printed.index("```")].split("\n")
    work = path("doc_example")
    os.makedirs(work, exist_ok=True)
    env = dict(os.environ, PATH=os.pathsep.join([os.path.dirname(os.path.abspath(CPLAB)), os.path.dirname(sys.executable),
                                                 os.environ.get("PATH", "")]))
    p = subprocess.run(["bash", "-e", "-c", script], cwd=work, env=env, capture_output=True, text=True, timeout=300)
    got = p.stdout.split("\n")
    # the verdicts, the spec line and the error lines are exact; times and the rest may differ
    for i in (0, 1, 3, 8, 9):
        if i >= len(got) or got[i] != printed[i]:
            fail(f"docs/inference.md's example, line {i + 1}: printed {got[i] if i < len(got) else None!r}, "
                 f"the page quotes {printed[i]!r} (exit {p.returncode}: {p.stderr.strip()[:300]})")

print(f"infer_cli_check: {checked} runs of every variant x cache layout, {len(MODES)} .npy runs; {len(failures)} failure(s)")
for f in failures:
    print("FAIL " + f)
sys.exit(1 if failures else 0)
