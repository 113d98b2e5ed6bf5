#!/usr/bin/env python3
"""check_cli.py: `cplab check` end to end (run by ctest as `check_cli`).

Usage: /usr/bin/python3 check_cli.py PATH/TO/cplab SCRATCH_DIR [docs/check.md]

1. Outputs that `cplab run --out-dir` writes (float64 and float32 runs, and bfloat16 copies written
   as ml_dtypes saves them: '<V2' bytes, numpy having no bfloat16; bfloat16 inputs too) are
   "equivalent" (exit 0), in global order and as per-rank shards; packed sequences with padding too.
   With --precision (bf16 inputs, partials and merge) a run of that pipeline is equivalent within
   the bound it computes and 3x that bound planted in one head is not (the fixed bf16 tolerance
   passes it).
2. Faulty copies made with a few lines of numpy (dK and dV swapped; the public ring package's dK/dV
   mix-up, as rank shards; padding not zero; dK, dV reduced by mean over a KV group; LSE shards
   written [tokens, heads]) are "NOT equivalent" naming the fault (exit 1); --json
   carries the verdict and the full error map (output x rank x chunk x head).
3. Attention sinks: sinks.npy (or --sink-logits) and dsinks.npy; the sink counted on every rank and
   d s_h with the wrong sign named; --out FILE.png drawn by cplab-viz (when CPLAB_VIZ names it).
4. Bad input exits 2 with a message naming the file and the rule (missing file, wrong shape, NaN in
   an input, unsupported dtype, cu_seqlens not matching the tokens, ...), and nothing is written
   anywhere. NaN or inf in an output is evidence (issue 38): exit 1, mapped in the verdict and --json.
5. With docs/check.md: its worked example runs as written (bash, cplab and /usr/bin/python3 first
   on PATH) and prints the output the page quotes: every line but the time
   line, with the errors' digits masked (a last bit of float32 arithmetic may differ between CPUs;
   whether each is above its tolerance may not).
Needs numpy (Debian's python3-numpy, i.e. /usr/bin/python3).
"""
import json
import os
import shutil
import subprocess
import sys

import numpy as np

CPLAB, SCRATCH = sys.argv[1], sys.argv[2]
PAGE = sys.argv[3] if len(sys.argv) > 3 else None  # docs/check.md
shutil.rmtree(SCRATCH, ignore_errors=True)
os.makedirs(SCRATCH)
failures = []
S, H, HK, D, P = 64, 8, 2, 16, 4
SPEC = ["--mode", "p2p", "--cp", str(P), "--layout", "zigzag", "--causal"]


def path(*names):
    return os.path.join(SCRATCH, *names)


def run(*args):
    return subprocess.run([CPLAB, *args], capture_output=True, text=True, timeout=300)


def check(name, args, rc, first=None, needle=None):
    p = run("check", *args)
    line = p.stdout.split("\n", 1)[0]
    if p.returncode != rc or (first is not None and line != first) or (needle is not None and needle not in p.stderr):
        failures.append(f"{name}: cplab check {' '.join(args)}\n  exit {p.returncode} (want {rc}), first line {line!r}"
                        f" (want {first!r}), stderr {p.stderr.strip()!r} (want {needle!r})")
    return p


def to_bf16(x):
    """float values as bfloat16 bits (round to nearest even), as a '<V2' array: what np.save writes for ml_dtypes.bfloat16"""
    bits = np.asarray(x, dtype=np.float32).view(np.uint32).astype(np.uint64)
    b = ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16).astype(np.uint16)
    return b.view("V2")


def zigzag_indices(r, n=S, p=P):
    c = n // (2 * p)
    return list(range(r * c, (r + 1) * c)) + list(range((2 * p - 1 - r) * c, (2 * p - r) * c))


# ---- inputs, and correct outputs from cplab run ------------------------------------------------
rng = np.random.default_rng(21)
os.makedirs(path("in"))
inputs = {"q": (S, H, D), "k": (S, HK, D), "v": (S, HK, D), "do": (S, H, D)}
for name, shape in inputs.items():
    np.save(path("in", name + ".npy"), rng.uniform(-1, 1, shape))
files = ["--q", path("in", "q.npy"), "--k", path("in", "k.npy"), "--v", path("in", "v.npy"), "--do", path("in", "do.npy")]
for dtype, out in (("double", "out64"), ("float", "out32")):
    p = run("run", *SPEC, "--backward", "--dtype", dtype, *files, "--out-dir", path(out))
    if p.returncode != 0:
        sys.exit(f"cplab run --dtype {dtype} failed: {p.stderr}")
IN = ["--inputs", path("in")]
check("float64 equivalent", [*SPEC, *IN, "--outputs", path("out64")], 0, "equivalent")
check("float32 equivalent", [*SPEC, *IN, "--outputs", path("out32")], 0, "equivalent")

# bfloat16 copies of O, dQ, dK, dV (LSE stays float32, as kernels keep it)
os.makedirs(path("out_bf16"))
for name in ("o", "dq", "dk", "dv"):
    np.save(path("out_bf16", name + ".npy"), to_bf16(np.load(path("out32", name + ".npy"))))
shutil.copy(path("out32", "lse.npy"), path("out_bf16", "lse.npy"))
if np.load(path("out_bf16", "o.npy")).dtype.str not in ("|V2", "<V2"):
    failures.append("the bfloat16 test file is not a 2-byte void array")
check("bfloat16 equivalent", [*SPEC, *IN, "--outputs", path("out_bf16")], 0, "equivalent")
p = check("bfloat16 json", [*SPEC, *IN, "--outputs", path("out_bf16"), "--json"], 0)
j = json.loads(p.stdout)
if j["outputs"]["o"]["dtype"] != "bfloat16" or j["outputs"]["o"]["tolerance"] != 2e-2 or j["outputs"]["lse"]["tolerance"] != 1e-5:
    failures.append(f"bfloat16 json: outputs {j['outputs']}")

# bfloat16 inputs: cplab run reads them, and so does cplab check
os.makedirs(path("in_bf16"))
for name in inputs:
    np.save(path("in_bf16", name + ".npy"), to_bf16(np.load(path("in", name + ".npy"))))
bf_files = [x.replace(path("in"), path("in_bf16")) for x in files]
p = run("run", *SPEC, "--backward", *bf_files, "--out-dir", path("out_in_bf16"))
if p.returncode != 0:
    failures.append(f"cplab run on bfloat16 inputs failed: {p.stderr}")
check("bfloat16 inputs equivalent", [*SPEC, "--inputs", path("in_bf16"), "--outputs", path("out_in_bf16")], 0, "equivalent")

# --precision: the tolerance is the error of a correct bf16-merge ring at this cp on these inputs; a
# run of that pipeline (bf16 copies of O and the gradients) passes it, 3x its bound in one head fails
PREC = ["--precision", "inputs=bf16,accumulate=fp32,partials=bf16,merge=bf16"]
p = run("run", *SPEC, "--backward", *bf_files, *PREC, "--out-dir", path("out_prec32"))
if p.returncode != 0:
    failures.append(f"cplab run --precision failed: {p.stderr}")
os.makedirs(path("out_prec"))
for name in ("o", "dq", "dk", "dv"):
    np.save(path("out_prec", name + ".npy"), to_bf16(np.load(path("out_prec32", name + ".npy"))))
shutil.copy(path("out_prec32", "lse.npy"), path("out_prec", "lse.npy"))
PIN = [*SPEC, "--inputs", path("in_bf16"), *PREC]
p = check("--precision equivalent", [*PIN, "--outputs", path("out_prec"), "--json"], 0)
j = json.loads(p.stdout)
label = "a correct ring (inputs=bf16,accumulate=fp32,partials=bf16,merge=bf16) at cp 4"
if not j["verdict"].startswith(f"equivalent (within the error {label} has on these inputs: O ") or j["levels"][0]["name"] != label:
    failures.append(f"--precision equivalent: verdict {j['verdict']!r}, levels {j['levels']}")
bound = j["precision"]["bounds"]["o"]
shutil.copytree(path("out_prec"), path("out_prec_planted"))
o = np.load(path("out_prec32", "o.npy"))
o[:, 3, :] += 3 * bound * np.abs(np.load(path("out64", "o.npy"))).max()
np.save(path("out_prec_planted", "o.npy"), to_bf16(o))
p = check("--precision 3x the bound in one head", [*PIN, "--outputs", path("out_prec_planted")], 1)
if " x above" in p.stdout or "x above the error " + label not in p.stdout.split("\n", 1)[0]:
    failures.append(f"--precision planted: first line {p.stdout.splitlines()[:1]}")
check("3x the bound in one head, fixed bf16 tolerance", [*SPEC, "--inputs", path("in_bf16"), "--outputs", path("out_prec_planted")], 0,
      "equivalent")

# per-rank shards (each rank's local zigzag order) of the float64 outputs
out = {n: np.load(path("out64", n + ".npy")) for n in ("o", "lse", "dq", "dk", "dv")}
for r in range(P):
    os.makedirs(path("shards", f"rank{r}"))
    for n, x in out.items():
        # (a column slice is Fortran-ordered: cplab reads C order only, as its message says)
        np.save(path("shards", f"rank{r}", n + ".npy"), np.ascontiguousarray(x[:, zigzag_indices(r)]) if n == "lse" else x[zigzag_indices(r)])
check("rank shards equivalent", [*SPEC, *IN, "--outputs", path("shards")], 0, "equivalent")
# shards cut as contiguous slices while --layout says zigzag
n = S // P
for r in range(P):
    os.makedirs(path("shards_contiguous", f"rank{r}"))
    for name, x in out.items():
        piece = np.ascontiguousarray(x[:, r * n:(r + 1) * n]) if name == "lse" else x[r * n:(r + 1) * n]
        np.save(path("shards_contiguous", f"rank{r}", name + ".npy"), piece)
check("shards in contiguous order", [*SPEC, *IN, "--outputs", path("shards_contiguous")], 1,
      "NOT equivalent: tokens out of order: the rank{r} shards hold the contiguous layout's tokens, not the zigzag layout's (--layout)"
      " (these outputs are correct for --layout contiguous)")

# ---- faults made with numpy --------------------------------------------------------------------
shutil.copytree(path("out64"), path("swapped"))
np.save(path("swapped", "dk.npy"), out["dv"])
np.save(path("swapped", "dv.npy"), out["dk"])
check("dK, dV swapped", [*SPEC, *IN, "--outputs", path("swapped")], 1, "NOT equivalent: dK and dV swapped")
# issue 38: dK, dV reduced by mean over each KV group's 4 query heads (a factor 1/4), and each rank's
# LSE shard written [tokens, heads] but saved as (heads, tokens)
shutil.copytree(path("out64"), path("group_mean"))
np.save(path("group_mean", "dk.npy"), out["dk"] / 4)
np.save(path("group_mean", "dv.npy"), out["dv"] / 4)
check("dK, dV mean over the KV group", [*SPEC, *IN, "--outputs", path("group_mean")], 1,
      "NOT equivalent: dK and dV off by a constant factor 0.25 (= 1/4: a KV group's gradient reduced by mean over its 4 query heads "
      "instead of sum; or 1/cp = 1/4: the ranks' parts averaged over cp = 4 instead of summed (a reduce with op AVG))")
for r in range(P):
    os.makedirs(path("lse_transposed", f"rank{r}"))
    for name, x in out.items():
        piece = x[:, zigzag_indices(r)].T.reshape(H, -1) if name == "lse" else x[zigzag_indices(r)]  # (n, H) read as (H, n)
        np.save(path("lse_transposed", f"rank{r}", name + ".npy"), np.ascontiguousarray(piece))
check("LSE shards transposed", [*SPEC, *IN, "--outputs", path("lse_transposed")], 1,
      "NOT equivalent: LSE written as [tokens, heads] and read as (heads, seq / cp): a transposed buffer read flat")

# the public ring package's bug, as the ranks would save it: dK_r = (dK + dV)_r, dV_r = (dK + dV)_{r+1}
s = out["dk"] + out["dv"]
for r in range(P):
    np.save(path("shards", f"rank{r}", "dk.npy"), s[zigzag_indices(r)])
    np.save(path("shards", f"rank{r}", "dv.npy"), s[zigzag_indices((r + 1) % P)])
ring = "NOT equivalent: dK and dV mixed up as in a ring backward: dK = dK + dV of the same rank, dV = dK + dV of rank r+1"
check("ring mix-up", [*SPEC, *IN, "--outputs", path("shards")], 1, ring)
p = check("ring mix-up json", [*SPEC, *IN, "--outputs", path("shards"), "--json"], 1)
j = json.loads(p.stdout)
m = j["error_map"]
if j["verdict"] != ring or j["equivalent"] or j["diagnosis"][0]["id"] != "dkv:ring_mixup" or not j["diagnosis"][0]["explains"]:
    failures.append(f"ring mix-up json: verdict {j['verdict']!r}, first {j['diagnosis'][0]}")
if m["ranks"] != P or m["chunks_per_rank"] != 2 or len(m["outputs"]["dk"]["values"]) != P or \
        any(len(c) != 2 or any(len(hh) != HK for hh in c) for c in m["outputs"]["dk"]["values"]) or \
        len(m["outputs"]["o"]["values"][0][0]) != H or m["chunk_labels"][1] != ["chunk 1", "chunk 6"]:
    failures.append(f"ring mix-up json: error map shape {m['ranks']} x {m['chunks_per_rank']}, labels {m['chunk_labels']}")
if max(max(max(c) for c in r) for r in m["outputs"]["dk"]["values"]) <= 1e-10 or \
        max(max(max(c) for c in r) for r in m["outputs"]["o"]["values"]) > 1e-10:
    failures.append("ring mix-up json: the error map does not put the error in dK only")

# packed sequences with padding, and padding that is not zero
PACK = ["--mode", "p2p", "--cp", "2", "--layout", "zigzag", "--causal", "--cu-seqlens", "0,10,34,39", "--pad"]
os.makedirs(path("in_packed"))
for name, shape in inputs.items():
    np.save(path("in_packed", name + ".npy"), rng.uniform(-1, 1, (44,) + shape[1:]))
pk_files = [x.replace(path("in"), path("in_packed")) for x in files]
p = run("run", *PACK, "--backward", *pk_files, "--out-dir", path("out_packed"))
if p.returncode != 0:
    failures.append(f"cplab run packed failed: {p.stderr}")
check("packed equivalent", [*PACK, "--inputs", path("in_packed"), "--outputs", path("out_packed")], 0, "equivalent")
shutil.copytree(path("out_packed"), path("padding"))
o = np.load(path("padding", "o.npy"))
o[10:12] = 0.5  # tokens 10, 11: the padding of sequence 0 (10 real tokens padded to 12)
np.save(path("padding", "o.npy"), o)
check("padding not zero", [*PACK, "--inputs", path("in_packed"), "--outputs", path("padding")], 1,
      "NOT equivalent: padding tokens hold non-zero outputs (every real token is right; padding must give O = 0 and zero gradients)")

# ---- bad input: exit 2, the file and the rule named, nothing written ---------------------------
def bad(name, folder, edit, needle, extra=(), inputs_dir=None):
    d = path("bad_" + name)
    shutil.copytree(path(folder), d)
    edit(d)
    before = sorted(os.walk(SCRATCH))
    check("bad input: " + name, [*SPEC, "--inputs", inputs_dir or path("in"), "--outputs", d, *extra], 2, "", needle)
    if sorted(os.walk(SCRATCH)) != before:
        failures.append(f"bad input {name}: cplab check wrote something")


bad("missing_o", "out64", lambda d: os.remove(os.path.join(d, "o.npy")), "o.npy is missing")
bad("missing_dv", "out64", lambda d: os.remove(os.path.join(d, "dv.npy")),
    "dv.npy is missing: the gradients dq.npy, dk.npy and dv.npy are checked all three together")
bad("wrong_shape", "out64", lambda d: np.save(os.path.join(d, "dk.npy"), np.zeros((S, HK, D - 1))),
    "dk.npy: has shape (64, 2, 15) but the spec needs (64, 2, 16) = (seq, kv-heads, head-dim)")
bad("lse_shape", "out64", lambda d: np.save(os.path.join(d, "lse.npy"), np.zeros((S, H))),
    "lse.npy: has shape (64, 8) but the spec needs (8, 64) = (heads, seq)")


# NaN / inf in an OUTPUT is evidence, not bad input (issue 38): exit 1, the map in the verdict and --json
def output_with(name, edit, first, json_nonfinite):
    d = path("nonfinite_" + name)
    shutil.copytree(path("out64"), d)
    edit(d)
    check("output holds " + name, [*SPEC, *IN, "--outputs", d], 1, first)
    p = check("output holds " + name + " --json", [*SPEC, *IN, "--outputs", d, "--json"], 1)
    j = json.loads(p.stdout)
    if j["verdict"] != first or j["nonfinite"] != json_nonfinite:
        failures.append(f"output holds {name} --json: verdict {j['verdict']!r}, nonfinite {j['nonfinite']!r}")


def nan(d):
    x = np.load(os.path.join(d, "o.npy"))
    x[3, 2, 1] = np.nan  # token 3: zigzag cp 4, seq 64: rank 0's first chunk (global chunk 0)
    np.save(os.path.join(d, "o.npy"), x)


output_with("nan", nan, "NOT equivalent: O holds 1 NaN (rank 0, chunk 0, head 2); the finite values are equivalent",
            ["O holds 1 NaN (rank 0, chunk 0, head 2)"])
output_with("inf", lambda d: np.save(os.path.join(d, "dq.npy"), np.full((S, H, D), np.inf)),
            "NOT equivalent: dQ holds 8,192 +inf (ranks 0-3, chunks 0-7, heads 0-7); the finite values are equivalent",
            ["dQ holds 8,192 +inf (ranks 0-3, chunks 0-7, heads 0-7)"])
# NaN in an INPUT is still bad input: exit 2, the file, the element and the rule named
os.makedirs(path("in_nan"))
for name in inputs:
    shutil.copy(path("in", name + ".npy"), path("in_nan", name + ".npy"))
qn = np.load(path("in", "q.npy"))
qn[5, 1, 0] = np.nan
np.save(path("in_nan", "q.npy"), qn)
bad("input_nan", "out64", lambda d: None,
    "q.npy: element [5, 1, 0] is NaN; cplab check compares finite values only (NaN and infinities are refused)",
    inputs_dir=path("in_nan"))
bad("int_dtype", "out64", lambda d: np.save(os.path.join(d, "o.npy"), np.zeros((S, H, D), dtype=np.int32)),
    "o.npy: dtype '<i4' is not supported (need float16 '<f2', bfloat16 '<V2' as ml_dtypes saves it, float32 '<f4' or float64 '<f8')")
bad("shard_missing", "shards", lambda d: os.remove(os.path.join(d, "rank2", "o.npy")),
    "rank2/o.npy is missing: per-rank shards need one file per rank 0-3 (cp 4)")
bad("shard_extra_rank", "shards", lambda d: shutil.copytree(os.path.join(d, "rank0"), os.path.join(d, "rank4")),
    "rank4 exists but cp is 4 (ranks 0-3)")
bad("global_and_shards", "shards", lambda d: shutil.copy(path("out64", "o.npy"), os.path.join(d, "o.npy")),
    "both exist: give O either in global order or as per-rank shards, not both")
bad("tolerance_zero", "out64", lambda d: None, "--tolerance 0 must be in (0, 1)", ["--tolerance", "0"])
# inputs
os.makedirs(path("in_no_do"))
for name in ("q", "k", "v"):
    shutil.copy(path("in", name + ".npy"), path("in_no_do", name + ".npy"))
bad("gradients_without_do", "out64", lambda d: None, "do.npy is missing: the gradients in", inputs_dir=path("in_no_do"))
os.makedirs(path("in_no_v"))
shutil.copy(path("in", "q.npy"), path("in_no_v", "q.npy"))
shutil.copy(path("in", "k.npy"), path("in_no_v", "k.npy"))
bad("missing_v", "out64", lambda d: None, "v.npy is missing: --inputs needs q.npy, k.npy and v.npy", inputs_dir=path("in_no_v"))
check("heads disagree", [*SPEC, "--heads", "4", *IN, "--outputs", path("out64")], 2, "", "q.npy: Q has heads 8 but 4 was given")
check("cu_seqlens not the tokens", [*PACK, *IN, "--outputs", path("out64")], 2, "",
      "q.npy has 64 tokens but --cu-seqlens 0,10,34,39 with --pad packs 44 (padded): the files must hold the packed tokens")
check("seq not a multiple", ["--mode", "p2p", "--cp", "3", "--layout", "zigzag", *IN, "--outputs", path("out64")], 2, "",
      "seq 64 is not a multiple of 2*cp = 6")
check("no --outputs", [*SPEC, *IN], 2, "", "--outputs is required")
check("outputs not a folder", [*SPEC, *IN, "--outputs", path("in", "q.npy")], 2, "", "q.npy: not a directory")
p = run("check", "--help")
if p.returncode != 0 or "Exit status: 0 equivalent, 1 not equivalent, 2 bad input" not in p.stdout:
    failures.append(f"cplab check --help: exit {p.returncode}")

# ---- attention sinks: sinks.npy among the inputs, dsinks.npy among the outputs --------------------
os.makedirs(path("in_sinks"))
for name in inputs:
    shutil.copy(path("in", name + ".npy"), path("in_sinks", name + ".npy"))
sinks = rng.uniform(-1, 1, H)
np.save(path("in_sinks", "sinks.npy"), sinks)
p = run("run", *SPEC, "--backward", *files, "--sink-logits", path("in_sinks", "sinks.npy"), "--out-dir", path("out_sinks"))
if p.returncode != 0 or not os.path.exists(path("out_sinks", "dsinks.npy")):
    sys.exit(f"cplab run --sink-logits failed: {p.stderr}")
IN_S = ["--inputs", path("in_sinks")]
check("sinks equivalent", [*SPEC, "--sinks", *IN_S, "--outputs", path("out_sinks")], 0, "equivalent")
check("sinks from --sink-logits", [*SPEC, "--sink-logits", path("in_sinks", "sinks.npy"), *IN, "--outputs", path("out_sinks")], 0,
      "equivalent")
# the sink added on every rank: LSE_P = logaddexp(L, s + log P) with L the LSE without the sink, O scaled to match
os.makedirs(path("sink_per_rank"))
o, lse = np.load(path("out_sinks", "o.npy")), np.load(path("out_sinks", "lse.npy"))  # (S, H, D), (H, S)
L = lse + np.log1p(-np.exp(sinks[:, None] - lse))
lse_p = np.logaddexp(L, sinks[:, None] + np.log(P))
np.save(path("sink_per_rank", "o.npy"), o * np.exp(lse - lse_p).T[:, :, None])
np.save(path("sink_per_rank", "lse.npy"), lse_p)
check("sink on every rank", [*SPEC, "--sinks", *IN_S, "--outputs", path("sink_per_rank")], 1,
      "NOT equivalent: attention sink counted on every rank: cp = 4 times per row instead of once (each rank added exp(s_h) "
      "to its result before they were combined)")
# the same with O alone (no LSE): each token's count is then read off O's size
os.makedirs(path("sink_per_rank_o"))
shutil.copy(path("sink_per_rank", "o.npy"), path("sink_per_rank_o", "o.npy"))
check("sink on every rank, O only", [*SPEC, "--sinks", *IN_S, "--outputs", path("sink_per_rank_o")], 1,
      "NOT equivalent: attention sink counted on every rank: cp = 4 times per row instead of once (each rank added exp(s_h) "
      "to its result before they were combined)")
shutil.copytree(path("out_sinks"), path("dsinks_sign"))
np.save(path("dsinks_sign", "dsinks.npy"), -np.load(path("out_sinks", "dsinks.npy")))
check("d s_h wrong sign", [*SPEC, "--sinks", *IN_S, "--outputs", path("dsinks_sign")], 1,
      "NOT equivalent: d s_h with the wrong sign (+sum exp(s_h - LSE) (dO . O) instead of -)")
p = check("sinks json", [*SPEC, "--sinks", *IN_S, "--outputs", path("dsinks_sign"), "--json"], 1)
j = json.loads(p.stdout)
if j["dsinks"]["ok"] or not j["dsinks"]["fault"] or len(j["sink_logits"]) != H:
    failures.append(f"sinks json: dsinks {j.get('dsinks')}, sink_logits {j.get('sink_logits')}")
# bad input around sinks
check("sinks.npy without --sinks", [*SPEC, *IN_S, "--outputs", path("out64")], 2, "",
      "sinks.npy exists but --sinks was not given")
check("--sinks without sinks.npy", [*SPEC, "--sinks", *IN, "--outputs", path("out64")], 2, "",
      "sinks.npy is missing: --sinks needs the sink logits")
check("dsinks.npy without --sinks", [*SPEC, *IN, "--outputs", path("out_sinks")], 2, "", "dsinks.npy exists but --sinks was not given")
os.makedirs(path("in_sinks_bad"))
for name in inputs:
    shutil.copy(path("in", name + ".npy"), path("in_sinks_bad", name + ".npy"))
np.save(path("in_sinks_bad", "sinks.npy"), np.zeros(H + 1))
check("sinks.npy of the wrong shape", [*SPEC, "--sinks", "--inputs", path("in_sinks_bad"), "--outputs", path("out_sinks")], 2, "",
      "sinks.npy: holds 9 sink logits but q.npy has 8 heads")
np.save(path("in_sinks_bad", "sinks.npy"), np.array([0, 0, np.nan, 0, 0, 0, 0, 0.0]))
check("sinks.npy NaN", [*SPEC, "--sinks", "--inputs", path("in_sinks_bad"), "--outputs", path("out_sinks")], 2, "",
      "sinks.npy: element [2] is NaN")
bad("dsinks_nan", "out_sinks", lambda d: np.save(os.path.join(d, "dsinks.npy"), np.array([0, 1, np.nan, 0, 0, 0, 0, 0.0])),
    "dsinks.npy: element [2] is NaN", ["--sinks"], inputs_dir=path("in_sinks"))
bad("dsinks_shape", "out_sinks", lambda d: np.save(os.path.join(d, "dsinks.npy"), np.zeros((H, 1))),
    "dsinks.npy: has shape (8, 1) but the spec needs", ["--sinks"], inputs_dir=path("in_sinks"))

# ---- --out FILE.png: the heat map drawn by cplab-viz ----------------------------------------------
bad("out_not_png", "out64", lambda d: None, "--out " + path("report.txt") + ": the picture is a PNG file", ["--out", path("report.txt")])
VIZ = os.environ.get("CPLAB_VIZ")
if VIZ:
    png = path("report.png")
    p = check("--out report.png", [*SPEC, *IN, "--outputs", path("swapped"), "--out", png], 1, "NOT equivalent: dK and dV swapped")
    with open(png, "rb") as f:
        head = f.read(24)
    if head[:8] != b"\x89PNG\r\n\x1a\n" or int.from_bytes(head[16:20], "big") != 1200 or int.from_bytes(head[20:24], "big") != 680:
        failures.append(f"--out report.png: not a 1200x680 PNG ({head[:24]!r})")
    if "picture: " + png not in p.stdout:
        failures.append("--out report.png: the report does not name the picture")
else:
    print("check_cli: --out FILE.png not run: no cplab-viz in this build (CPLAB_VIZ unset)")

# ---- docs/check.md's worked example ----------------------------------------------------------------
if PAGE:
    import re
    text = open(PAGE, encoding="utf-8").read()
    section = text[text.index("# `cplab check`: find the bug"):]
    m = re.search(r"```sh\n(.*?)```.*?```\n(.*?)```", section, re.S)
    script, quoted = m.group(1), m.group(2)
    os.makedirs(path("readme"))
    env = dict(os.environ, PATH=os.pathsep.join([os.path.dirname(os.path.abspath(CPLAB)), "/usr/bin", os.environ.get("PATH", "")]))
    p = subprocess.run(["bash", "-e", "-c", script], cwd=path("readme"), env=env, capture_output=True, text=True, timeout=600)
    def lines(t):
        return [re.sub(r"\d\.\de[+-]\d+", "#", x) for x in t.rstrip("\n").split("\n") if not x.startswith("time: ")]
    if lines(p.stdout) != lines(quoted):
        diff = [f"  page: {a!r}\n  got:  {b!r}" for a, b in zip(lines(quoted), lines(p.stdout)) if a != b][:3]
        failures.append(f"{os.path.basename(PAGE)}'s example (exit {p.returncode}, stderr {p.stderr.strip()!r}) prints other lines than quoted:\n" +
                        "\n".join(diff) + f"\n  ({len(lines(quoted))} lines quoted, {len(lines(p.stdout))} printed)")

for f in failures:
    print("FAIL:", f)
print(f"check_cli: {len(failures)} failure(s)")
sys.exit(1 if failures else 0)
