#!/usr/bin/env python3
"""bad_input_check.py: issue 19's reproducers, each a named case (ctest `bad_input`).

Usage: python3 bad_input_check.py PATH/TO/cplab SCRATCH_DIR [PATH/TO/cplab-viz-args]

Every case runs one command and expects either a clear error (exit 2, stderr "cplab: error: ..."
containing the needle) or a correct result (exit 0); in both cases stderr must hold no sanitizer
report (the ASan/UBSan build runs this too: that is where a wrapped integer is caught).
The third argument is the viz argument checker (viz/cli: cplab-viz's own option and file parsing,
without a window), which the sanitizer build has even though it has no cplab-viz.
What it is not: the fuzz test (tests/fuzz/), or cli_check.py's checks of correct results.
"""
import os
import subprocess
import sys

CPLAB, SCRATCH = sys.argv[1], sys.argv[2]
VIZ = sys.argv[3] if len(sys.argv) > 3 else None
os.makedirs(SCRATCH, exist_ok=True)
failures = []
count = 0
SANITIZER = ("runtime error:", "AddressSanitizer", "LeakSanitizer", "UndefinedBehaviorSanitizer")


def path(name):
    return os.path.join(SCRATCH, name)


def case(name, argv, rc=2, needle="", prefix="cplab: error: ", tool=None, timeout=120):
    """run tool (cplab by default) with argv; expect exit rc, and for rc 2 stderr starting with
    prefix and containing needle; never a sanitizer report"""
    global count
    count += 1
    exe = tool or CPLAB
    try:
        p = subprocess.run([exe, *argv], capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        failures.append(f"[{name}] timed out after {timeout} s: {' '.join(argv)}")
        return None
    why = []
    if p.returncode != rc:
        why.append(f"exit {p.returncode}, expected {rc}")
    if any(s in p.stderr for s in SANITIZER):
        why.append("sanitizer report")
    if rc == 2 and not p.stderr.startswith(prefix):
        why.append(f"stderr does not start with '{prefix}'")
    if needle and needle not in p.stderr:
        why.append(f"stderr lacks '{needle}'")
    if why:
        failures.append(f"[{name}] {'; '.join(why)}\n    $ {os.path.basename(exe)} {' '.join(argv)}\n    "
                        + p.stderr.strip().replace("\n", "\n    ")[:2000])
    return p


# ---- 1. signed overflow before the range checks ----------------------------------------------------
case("hcp_overflow", ["run", "--mode", "a2a+p2p", "--cp", "4", "--seq", "32", "--hcp", "4611686018427387904,4"])
case("cp_huge_pad", ["run", "--cp", "4611686018427387904", "--cu-seqlens", "0,5", "--pad"])
case("cp_huge_padded", ["run", "--cp", "2305843009213693952", "--cu-seqlens", "0,1,2,3", "--pad"])
case("max_seqlen_overflow", ["schedule", "--lengths", "100,200", "--ranks", "8",
                             "--max-seqlen-per-rank", "4611686018427387904"])
case("plan_gpus_per_node_huge", ["plan", "--gpus-per-node", "9223372036854775807"])
case("plan_gpus_sigfpe", ["plan", "--gpus", "9223372036854775806", "--gpus-per-node", "2"])

# ---- 6. wrong status or message --------------------------------------------------------------------
case("unknown_command", ["rn"], needle="run")
case("misspelled_option", ["run", "--mdoe", "p2p"], needle="--mode")

# ---- 7. accepted silently --------------------------------------------------------------------------
case("seed_clamped", ["run", "--seed", "99999999999999999999999", "--cp", "2", "--seq", "8"], needle="--seed")
case("plan_seq_clamped", ["plan", "--seq", "9223372036854775808"], needle="--seq")
case("plan_tau_inf", ["plan", "--tau-us", "inf"], needle="--tau-us")
case("schedule_batch_size_negative", ["schedule", "--dist", "data/dcp/web_lognormal.json", "--batch-size", "-1"],
     needle="--batch-size")
case("scale_huge", ["run", "--cp", "2", "--seq", "8", "--scale", "1e300"],
     needle="scale 1e+300 is above 1e+30, the largest softmax scale the CPU reference checks")

# ---- C. memory, .npy and overflow (i19-memory) -----------------------------------------------------
# .npy inputs are checked header first (shape, zero dimensions, sizes agreeing, the run's memory)
# before any data is read: the huge sparse files below must be refused with a small peak RSS.
import numpy as np  # noqa: E402  (/usr/bin/python3: Debian's python3-numpy)


def case_rss(name, argv, needle, max_mib, rc=2):
    """case(), and the command's peak RSS (wait4) must stay under max_mib: refused before allocating"""
    global count
    count += 1
    p = subprocess.Popen([CPLAB, *argv], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    err = p.stderr.read()
    _, status, ru = os.wait4(p.pid, 0)  # reaped here, with its resource usage
    code = p.returncode = os.waitstatus_to_exitcode(status)
    why = []
    if code != rc:
        why.append(f"exit {code}, expected {rc}")
    if any(s in err for s in SANITIZER):
        why.append("sanitizer report")
    if needle not in err:
        why.append(f"stderr lacks '{needle}'")
    if ru.ru_maxrss / 1024 > max_mib:
        why.append(f"peak RSS {ru.ru_maxrss / 1024:.0f} MiB > {max_mib} MiB: memory was allocated before the refusal")
    if why:
        failures.append(f"[{name}] {'; '.join(why)}\n    $ cplab {' '.join(argv)}\n    " + err.strip()[:2000])


def sparse_npy(name, shape, data_bytes):
    """a float32 .npy whose header claims shape, truncated (sparse) to data_bytes of data"""
    f = path(name)
    with open(f, "wb") as out:
        np.lib.format.write_array_header_1_0(out, {"descr": "<f4", "fortran_order": False, "shape": shape})
    os.truncate(f, os.path.getsize(f) + data_bytes)
    return f


rng = np.random.default_rng(19)
qkv = {n: rng.uniform(-1, 1, (8, h, 64)) for n, h in (("q", 2), ("k", 1), ("v", 1))}
for n, x in qkv.items():
    np.save(path(f"c_{n}.npy"), x)
np.save(path("c_q_d0.npy"), np.zeros((8, 2, 0)))
np.save(path("c_v_d0.npy"), np.zeros((8, 1, 0)))
np.save(path("c_q_1e308.npy"), np.full((8, 2, 64), 1e308))
np.save(path("c_k_ones.npy"), np.ones((8, 1, 64)))
np.save(path("c_q_1e39.npy"), np.full((8, 2, 64), 1e39))
np.save(path("c_v_3e38.npy"), np.full((8, 1, 64), 3e38))
QKV = lambda q="c_q", k="c_k", v="c_v": ["--q", path(q + ".npy"), "--k", path(k + ".npy"), "--v", path(v + ".npy")]
run2 = ["run", "--cp", "2"]

case("npy_q_last_dim_0", [*run2, *QKV(q="c_q_d0")], needle="Q has shape (8, 2, 0) with a zero dimension")
case("npy_v_last_dim_0", [*run2, *QKV(v="c_v_d0")], needle="V has shape (8, 1, 0) with a zero dimension")
GiB = 1 << 30
huge = sparse_npy("c_q_huge.npy", (1 << 20, 4, 64), GiB)  # 1 GiB of zeros that take no disk
case_rss("npy_huge_sparse_seq_mismatch", [*run2, "--q", huge, "--k", path("c_k.npy"), "--v", path("c_v.npy")],
         needle="K has seq 8 but 1048576 was given or read elsewhere", max_mib=100)
hk, hv = sparse_npy("c_k_huge.npy", (1 << 20, 4, 64), GiB), sparse_npy("c_v_huge.npy", (1 << 20, 4, 64), GiB)
case_rss("npy_huge_sparse_memory", [*run2, "--q", huge, "--k", hk, "--v", hv],
         needle="GiB in the CPU reference at its peak", max_mib=100)
case("npy_q_1e308", [*run2, *QKV(q="c_q_1e308", k="c_k_ones")],
     needle="the dense reference overflows: its LSE is -inf at head 0, token 0")
case("npy_q_1e39_float", [*run2, "--dtype", "float", *QKV(q="c_q_1e39")], needle="outside float's range")
case("npy_v_3e38_float_overflow", [*run2, "--dtype", "float", *QKV(v="c_v_3e38")], rc=1,
     needle="the CP run's O holds a NaN or an infinity where the dense reference is finite")


# a run just over the 16 GiB limit (found with --plan-only, which reports the estimate and computes
# nothing) is refused before it allocates
def estimate(seq):
    p = subprocess.run([CPLAB, "run", "--plan-only", "--json", "--cp", "8", "--seq", str(seq), "--heads", "16",
                        "--kv-heads", "16", "--head-dim", "128"], capture_output=True, text=True)
    import json
    return json.loads(p.stdout)["memory_estimate"]["bytes"] if p.returncode == 0 else None


lo, hi = 16, 1 << 12  # in units of 2*cp = 16 tokens: seq 256 (~0.1 GiB) .. 65536 (~20 GiB)
if estimate(16 * lo) is not None and estimate(16 * hi) is not None:
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if estimate(16 * mid) <= 16 * GiB else (lo, mid)
    over = estimate(16 * hi)
    if not 16 * GiB < over < 16.1 * GiB:
        failures.append(f"[memory_just_over] the smallest seq over the limit estimates {over / GiB:.3f} GiB")
    case_rss("memory_just_over", ["run", "--cp", "8", "--seq", str(16 * hi), "--heads", "16", "--kv-heads", "16",
                                  "--head-dim", "128", "--allow-long"], needle="the limit is 16 GiB", max_mib=100)
else:
    failures.append("[memory_just_over] cplab run --plan-only --json gave no estimate")

print(f"bad_input_check: {count} cases, {len(failures)} failed")
for f in failures:
    print("FAIL " + f)
sys.exit(1 if failures else 0)
