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
case("hcp_overflow", ["run", "--mode", "a2a+p2p", "--cp", "4", "--seq", "32", "--hcp", "4611686018427387904,4"],
     needle="size 4611686018427387904 is more than the 256 ranks cplab takes")
case("cp_huge_pad", ["run", "--cp", "4611686018427387904", "--cu-seqlens", "0,5", "--pad"],
     needle="cp 4611686018427387904 is more than the 256 ranks")
case("cp_huge_padded", ["run", "--cp", "2305843009213693952", "--cu-seqlens", "0,1,2,3", "--pad"],
     needle="cp 2305843009213693952 is more than the 256 ranks")
case("max_seqlen_overflow", ["schedule", "--lengths", "100,200", "--ranks", "8",
                             "--max-seqlen-per-rank", "4611686018427387904"],
     needle="max-seqlen-per-rank 4611686018427387904 is more than 2^40")
case("plan_gpus_per_node_huge", ["plan", "--gpus-per-node", "9223372036854775807"],
     needle="gpus-per-node 9223372036854775807 is more than 4096")
case("plan_gpus_sigfpe", ["plan", "--gpus", "9223372036854775806", "--gpus-per-node", "2"],
     needle="gpus 9223372036854775806 is more than 256")

# ---- 6. wrong status or message --------------------------------------------------------------------
case("unknown_command", ["rn"], needle="run")
case("misspelled_option", ["run", "--mdoe", "p2p"], needle="--mode")

# ---- 7. accepted silently --------------------------------------------------------------------------
case("seed_clamped", ["run", "--seed", "99999999999999999999999", "--cp", "2", "--seq", "8"], needle="--seed")
case("plan_seq_clamped", ["plan", "--seq", "9223372036854775808"], needle="--seq")
case("plan_tau_inf", ["plan", "--tau-us", "inf"], needle="--tau-us")
case("plan_tau_huge", ["plan", "--tau-us", "1e300"], needle="--tau-us 1e+300 must be in [0, 1000000]")
case("plan_tflops_tiny", ["plan", "--tflops", "1e-300"], needle="--tflops 1e-300 must be 0 (the preset) or in [0.001, 100000]")
case("schedule_batch_size_negative", ["schedule", "--dist", "data/dcp/web_lognormal.json", "--batch-size", "-1"],
     needle="--batch-size -1 must be >= 0")
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

# ---- 3, 6. cplab-viz: any exception ends as "cplab-viz: error: ..." and exit 2 (not abort, not CLI11's codes)
if VIZ:
    vizdir = path("a_directory")
    os.makedirs(vizdir, exist_ok=True)
    big_cp = path("trace_cp_2147483647.json")
    with open(big_cp, "w") as f:
        f.write('{"format": "cplab-trace", "version": 1, "cp": 2147483647, "events": []}')
    big_batch = path("dist_batch_1e12.json")
    with open(big_batch, "w") as f:
        f.write('{"name": "x", "lognormal_mixture": [{"weight": 1, "median": 1024, "sigma": 1}], '
                '"min": 128, "max": 32768, "batch_size": 1e12}')
    viz = dict(tool=VIZ, prefix="cplab-viz: error: ")
    bench = ["--bench-frames", "1"]
    case("viz_trace_directory", ["--view", "timeline", "--trace", vizdir] + bench, needle="directory", **viz)
    case("viz_check_no_report", ["--view", "check"] + bench, needle="--view check needs --check-report", **viz)
    case("viz_check_report_directory", ["--view", "check", "--check-report", vizdir] + bench, needle="directory", **viz)
    case("viz_check_report_other_view", ["--view", "ring", "--check-report", vizdir] + bench, needle="--check-report is for --view check", **viz)
    case("viz_dist_directory", ["--view", "scheduler", "--dist", vizdir] + bench, needle="directory", **viz)
    case("viz_schedule_json_directory", ["--view", "scheduler", "--schedule-json", vizdir] + bench, needle="directory", **viz)
    case("viz_trace_cp_huge", ["--view", "timeline", "--trace", big_cp] + bench, needle="cp", **viz)
    case("viz_dist_batch_huge", ["--view", "scheduler", "--dist", big_batch] + bench, needle="batch_size", **viz)
    case("viz_size_three_parts", ["--size", "1280x720x3"] + bench, needle="--size", **viz)
    case("viz_unknown_option", ["--veiw", "ring"] + bench, needle="--view", **viz)  # CLI11 exited 109 here
    case("viz_bad_number", ["--cp", "four"] + bench, needle="--cp", **viz)          # CLI11 exited 105 here
    case("viz_missing_value", ["--cp"], needle="--cp", **viz)
    # the timeline's model: cplab plan's presets and rules (plan/perf_options.h)
    tl = ["--view", "timeline", "--cp", "8", "--seq", "64"] + bench
    case("viz_link_unknown", tl + ["--link", "ethernet"], needle="link preset 'ethernet' is not one of: nvlink4, ib-ndr, pcie5, h800-nvlink, eth100", **viz)
    case("viz_link_and_intra", tl + ["--link", "eth100", "--intra", "nvlink4"], needle="excludes --link", **viz)
    case("viz_gpu_unknown", tl + ["--gpu", "b200"], needle="gpu preset 'b200' is not one of: h100, h200, h800", **viz)
    case("viz_gpus_per_node_zero", tl + ["--gpus-per-node", "0"], needle="gpus-per-node 0 must be >= 1", **viz)
    case("viz_tau_negative", tl + ["--tau-us", "-1"], needle="--tau-us -1 must be in [0, 1000000]", **viz)
    case("viz_cp_whole_nodes", ["--view", "timeline", "--cp", "12", "--seq", "96"] + bench,
         needle="cp 12 must fill whole nodes of gpus-per-node = 8", **viz)
    case("viz_cp_whole_nodes_ring", ["--view", "ring", "--cp", "12", "--seq", "96"] + bench, rc=0, **viz)  # only the timeline needs them
# ---- B. outputs written whole (i19-outputs) --------------------------------------------------------
# Every output is written to a temporary file in its folder and renamed when the run succeeded: after
# any failed run an existing output file is byte-identical, and no ".cplab-tmp-" file is left.
KNOWN = b"known bytes of an existing output\n"
OUT = path("outputs")


def npy_f8(shape):
    """a valid little-endian float64 .npy of zeros (no NumPy needed)"""
    dims = "".join(f"{d}, " for d in shape) if len(shape) == 1 else ", ".join(map(str, shape))
    header = "{'descr': '<f8', 'fortran_order': False, 'shape': (" + dims + "), }"
    header += " " * ((64 - (10 + len(header) + 1) % 64) % 64) + "\n"
    n = 1
    for d in shape:
        n *= d
    return b"\x93NUMPY\x01\x00" + len(header).to_bytes(2, "little") + header.encode() + bytes(8 * n)


def known(*names):
    """files under OUT holding KNOWN (folders made as needed); their paths"""
    paths = [os.path.join(OUT, n) for n in names]
    for f in paths:
        os.makedirs(os.path.dirname(f), exist_ok=True)
        with open(f, "wb") as fh:
            fh.write(KNOWN)
    return paths


def no_temp_files(name, folders):
    for d in folders:
        left = [x for x in os.listdir(d) if ".cplab-tmp-" in x]
        if left:
            failures.append(f"[{name}] temporary files left in {d}: {left}")


def kept(name, argv, files, needle="", rc=2):
    """a failing run (exit rc, needle in its message) after which every file in files still holds KNOWN"""
    case(name, argv, rc=rc, needle=needle)
    for f in files:
        with open(f, "rb") as fh:
            got = fh.read()
        if got != KNOWN:
            failures.append(f"[{name}] {f} changed by the failed run: {len(got)} bytes, starting {got[:40]!r}")
    no_temp_files(name, {os.path.dirname(f) for f in files})


os.makedirs(OUT, exist_ok=True)
with open(os.path.join(OUT, "bad.npy"), "wb") as fh:
    fh.write(b"not an npy file")
with open(os.path.join(OUT, "do_1d.npy"), "wb") as fh:
    fh.write(npy_f8([8]))
BAD_DO = os.path.join(OUT, "bad.npy")
SMALL = ["run", "--cp", "2", "--seq", "8"]

t, c = known("t.json", "c.json")
kept("out_bad_do_keeps_traces", [*SMALL, "--backward", "--do", BAD_DO, "--trace", t, "--chrome-trace", c], [t, c],
     needle="bad magic")
(x,) = known("do_and_trace.json")
kept("out_do_is_trace", [*SMALL, "--backward", "--do", x, "--trace", x], [x], needle="is the same file as the --do input")
t, c = known("t.json", "c.json")
kept("out_trace_is_chrome_trace", [*SMALL, "--trace", t, "--chrome-trace", os.path.join(OUT, ".", "t.json")], [t],
     needle="each output needs its own file")
d = os.path.join(OUT, "dir")
files = known("dir/o.npy", "dir/lse.npy", "dir/dq.npy", "dir/t.json")
kept("out_dir_failed_run", [*SMALL, "--backward", "--do", os.path.join(OUT, "do_1d.npy"), "--out-dir", d,
                            "--trace", os.path.join(d, "t.json")], files, needle="must be 3-d")
# an output that is an input: refused before anything is written, the input unchanged
(q,) = known("in/o.npy")
with open(q, "wb") as fh:
    fh.write(npy_f8([8, 1, 8]))
with open(q, "rb") as fh:
    q_bytes = fh.read()
case("out_dir_output_is_input", [*SMALL, "--q", q, "--k", q, "--v", q, "--out-dir", os.path.dirname(q)],
     needle=f"--out-dir {q} is the same file as the --q input")
case("out_trace_is_input", [*SMALL, "--q", q, "--k", q, "--v", q, "--trace", os.path.join(OUT, "in", "..", "in", "o.npy")],
     needle="is the same file as the --q input")
with open(q, "rb") as fh:
    if fh.read() != q_bytes:
        failures.append(f"[out_dir_output_is_input] the --q input {q} changed")
kept("out_trace_is_directory", [*SMALL, "--trace", d, "--out-dir", d], files, needle="is a directory")
kept("out_trace_missing_folder", [*SMALL, "--trace", os.path.join(OUT, "no", "t.json"), "--out-dir", d], files,
     needle="does not exist")
if os.path.exists("/dev/full"):
    kept("out_trace_dev_full", [*SMALL, "--trace", "/dev/full", "--out-dir", d], files,
         needle="--trace /dev/full: cannot write (No space left on device)")
    kept("out_plan_only_dev_full", [*SMALL, "--plan-only", "--chrome-trace", "/dev/full", "--trace", files[3]],
         [files[3]], needle="No space left on device")
    if not os.path.exists("/dev/full") or os.path.isfile("/dev/full"):
        failures.append("[out_trace_dev_full] /dev/full is no longer a device")
# a run that succeeds still writes every output (replacing the old bytes) and leaves no temporary file
ok = os.path.join(OUT, "ok", "new")
t, c = known("ok/t.json", "ok/c.json")
case("out_success_writes_all", [*SMALL, "--backward", "--out-dir", ok, "--trace", t, "--chrome-trace", c], rc=0)
for f in [t, c] + [os.path.join(ok, n) for n in ("o.npy", "lse.npy", "dq.npy", "dk.npy", "dv.npy")]:
    if not os.path.isfile(f) or open(f, "rb").read(6) in (b"", KNOWN[:6]):
        failures.append(f"[out_success_writes_all] {f} was not written")
no_temp_files("out_success_writes_all", [os.path.dirname(t), ok])
# ---- A. arithmetic and JSON (i19-arith) ---------------------------------------------------------------
# sizes refused before anything is derived from them
case("cu_seqlens_negative_wrap", ["run", "--cp", "4", "--cu-seqlens", "0,5,-9223372036854775808", "--pad"],
     needle="cu_seqlens must strictly increase (sequence 1 would end at -9223372036854775808)")
case("cu_seqlens_huge", ["run", "--cp", "4", "--cu-seqlens", "0,9223372036854775807", "--pad"],
     needle="cu_seqlens total 9223372036854775807 is more than 2^40 tokens")
case("hcp_huge_outer", ["run", "--mode", "a2a+p2p", "--cp", "4", "--seq", "32", "--hcp", "4,4611686018427387905"],
     needle="size 4611686018427387905 is more than the 256 ranks")
case("run_head_dim_huge", ["run", "--cp", "2", "--seq", "8", "--head-dim", "9223372036854775807"],
     needle="head-dim 9223372036854775807 is more than 65536")
case("run_kv_heads_huge", ["run", "--cp", "2", "--seq", "8", "--heads", "4611686018427387904",
                           "--kv-heads", "4611686018427387904"], needle="heads 4611686018427387904 is more than 65536")
case("run_seq_huge", ["run", "--cp", "2", "--seq", "9223372036854775806", "--plan-only"],
     needle="seq 9223372036854775806 is more than 2^40 tokens")
case("schedule_ranks_huge", ["schedule", "--lengths", "100", "--ranks", "4611686018427387904"],
     needle="ranks 4611686018427387904 is more than 4096")
case("schedule_lengths_huge", ["schedule", "--lengths", "9223372036854775807,1", "--ranks", "8"],
     needle="sample 0 has length 9223372036854775807, more than ranks x max-seqlen-per-rank = 8 x 4096 = 32768")
case("schedule_dist_max_seqlen_huge", ["schedule", "--dist", "data/dcp/web_lognormal.json",
                                       "--max-seqlen-per-rank", "4611686018427387904"],
     needle="max-seqlen-per-rank 4611686018427387904 is more than 2^40")
case("plan_seq_huge", ["plan", "--seq", "4611686018427387904"], needle="seq 4611686018427387904 is more than 1099511627776")
case("plan_heads_huge", ["plan", "--heads", "4611686018427387904", "--kv-heads", "1"],
     needle="heads 4611686018427387904 is more than 65536")
case("plan_gpus_zero", ["plan", "--gpus", "0"], needle="gpus 0 must be >= 1")
case("plan_gpus_300", ["plan", "--gpus", "512", "--gpus-per-node", "8"], needle="gpus 512 is more than 256")
# unbounded memory: a batch's size is bounded before it is drawn
case("schedule_batch_size_huge", ["schedule", "--dist", "data/dcp/web_lognormal.json", "--batch-size", "9223372036854775807"],
     needle="--batch-size 9223372036854775807 is more than the 1000000 samples a DCP batch may hold")
case("schedule_batch_size_ranks", ["schedule", "--dist", "data/dcp/web_lognormal.json", "--batch-size", "8192",
                                   "--ranks", "4096"],
     needle="--batch-size 8192 on 4096 ranks is more than 2^24 (rank, sample) pairs")
case("schedule_batches_huge", ["schedule", "--dist", "data/dcp/web_lognormal.json", "--batches", "9223372036854775807"],
     needle="batches 9223372036854775807 must be in [1, 100000]")
case("schedule_seed_negative", ["schedule", "--dist", "data/dcp/web_lognormal.json", "--seed", "-1"],
     needle="seed -1 must be >= 0")


# JSON files: wrong types and non-integers refused with the file and the field named
def write(name, text):
    with open(path(name), "w") as f:
        f.write(text)
    return path(name)


def dist(name, fields, parts='[{"weight": 1, "median": 1024, "sigma": 1}]'):
    return write(name, '{"name": "t", "lognormal_mixture": %s, %s}' % (parts, fields))


d = dist("dist_fraction.json", '"min": 1.5, "max": 2.5')
case("dist_min_fraction", ["schedule", "--dist", d], needle=d + ": min = 1.5 is not an integer")
d = dist("dist_max_1e30.json", '"min": 1, "max": 1e30')
case("dist_max_1e30", ["schedule", "--dist", d], needle=d + ": max = 1e+30 is not an integer")
d = dist("dist_batch_huge.json", '"min": 1, "max": 100, "batch_size": 9223372036854775807')
case("dist_batch_size_huge", ["schedule", "--dist", d],
     needle=d + ": batch_size = 9223372036854775807 is out of range: it must be an integer in [1, 1000000]")
d = dist("dist_weight_string.json", '"min": 1, "max": 100', '[{"weight": "1", "median": 1024, "sigma": 1}]')
case("dist_weight_string", ["schedule", "--dist", d],
     needle=d + ": lognormal_mixture[0].weight is a JSON string, not a number")
d = write("dist_not_object.json", "[1, 2]")
case("dist_not_object", ["schedule", "--dist", d], needle=d + ": not a cplab length distribution")
os.makedirs(path("a_directory"), exist_ok=True)
case("dist_directory", ["schedule", "--dist", path("a_directory")],
     needle=path("a_directory") + ": is a directory, not a file")
c = write("calib_string.json", '[{"pass": "fwd", "causal": true, "s": "4096", "tflops": 300}]')
case("calibration_string", ["plan", "--calibration", c],
     needle="calibration file '" + c + "': row 0: s is a JSON string, not a number")
c = write("calib_causal.json", '{"rows": [{"pass": "bwd", "causal": 1, "s": 4096, "tflops": 300}]}')
case("calibration_causal_number", ["plan", "--calibration", c],
     needle="calibration file '" + c + "': row 0: causal is a JSON number, not true or false")
case("calibration_directory", ["plan", "--calibration", path("a_directory")],
     needle=path("a_directory") + ": is a directory, not a file")

# ---- issue 22: --window, --chunk, --sinks, --sink-logits (the rules named, exit 2) --------------------
w2 = ["run", "--cp", "2", "--seq", "16", "--heads", "2", "--kv-heads", "1", "--head-dim", "4"]
case("window_zero", [*w2, "--causal", "--window", "0"],
     needle="--window 0 must be in [1, 2147483647] (with --causal query i sees key j iff i - W < j <= i")
case("window_negative", [*w2, "--window", "-5"], needle="--window -5 must be in [1, 2147483647]")
case("window_above_int", [*w2, "--causal", "--window", "2147483648"], needle="--window 2147483648 must be in [1, 2147483647]")
case("window_not_a_number", [*w2, "--window", "4k"], needle="--window")
case("chunk_zero", [*w2, "--causal", "--chunk", "0"], needle="--chunk 0 must be in [1, 2147483647]")
case("chunk_without_causal", [*w2, "--chunk", "4"], needle="--chunk needs --causal")
case("window_and_chunk", [*w2, "--causal", "--window", "4", "--chunk", "4"],
     needle="--window and --chunk cannot both be given: a run has one mask rule")
case("plan_window_zero", ["plan", "--window", "0"], needle="--window 0 must be in [1, 2147483647]")
case("plan_chunk_no_causal", ["plan", "--chunk", "512", "--no-causal"], needle="--chunk needs --causal")
# issue 37: cplab plan for an inference step (--kv-cache P --seq T) and its docs table (--infer-table)
INFER = ["plan", "--heads", "16", "--head-dim", "128"]  # the 405B slice of docs/plan.md; each case adds the rest
case("plan_kv_cache_seq_zero", [*INFER, "--kv-cache", "100", "--seq", "0"], needle="seq (T, the new tokens) 0 must be >= 1")
case("plan_kv_cache_total_huge", [*INFER, "--kv-cache", "1099511627776", "--seq", "1"],
     needle="kv-cache + seq = 1099511627777 tokens is more than 1099511627776")
case("plan_kv_cache_gpus_zero", [*INFER, "--kv-cache", "100", "--seq", "10", "--gpus", "0"], needle="gpus 0 must be >= 1")
case("plan_kv_cache_gpus_huge", [*INFER, "--kv-cache", "100", "--seq", "10", "--gpus", "512"], needle="gpus 512 is more than 256")
case("plan_kv_cache_whole_nodes", [*INFER, "--kv-cache", "100", "--seq", "10", "--gpus", "12", "--gpus-per-node", "8"],
     needle="gpus 12 must fill whole nodes of gpus-per-node = 8")
case("plan_kv_cache_gpus_per_node_zero", [*INFER, "--kv-cache", "10", "--seq", "10", "--gpus-per-node", "0"],
     needle="gpus-per-node 0 must be >= 1")  # was a SIGFPE (gpus % 0) before the rule came first
case("plan_kv_cache_heads_zero", [*INFER, "--kv-cache", "100", "--seq", "10", "--kv-heads", "0"], needle="kv-heads 0 must be >= 1")
case("plan_kv_cache_window_zero", [*INFER, "--kv-cache", "100", "--seq", "10", "--window", "0"],
     needle="--window 0 must be in [1, 2147483647]")
case("plan_kv_cache_tau_huge", [*INFER, "--kv-cache", "100", "--seq", "10", "--tau-us", "1e300"],
     needle="--tau-us 1e+300 must be in [0, 1000000]")
case("plan_infer_table_with_kv_cache", [*INFER, "--infer-table", "--kv-cache", "100"],
     needle="--infer-table sets T and P itself (T/(T+P) from 0.1% to 100% of --seq tokens): drop --kv-cache")
case("plan_infer_table_json", [*INFER, "--infer-table", "--json"], needle="--infer-table prints a markdown table: drop --json")
case("plan_infer_table_seq_huge", [*INFER, "--infer-table", "--seq", "1099511627777"],
     needle="--infer-table: --seq 1099511627777 (the context T + P) must be in [1, 1099511627776 = 2^40]")
case("plan_kv_cache_negative", [*INFER, "--kv-cache", "-5", "--seq", "10"], needle="--kv-cache -5 must be >= 0")
case("plan_kv_cache_two_lengths", [*INFER, "--kv-cache", "100,200", "--seq", "10"],
     needle="--kv-cache lists 2 cache lengths but there are 1 requests")
case("plan_kv_cache_text", [*INFER, "--kv-cache", "abc", "--seq", "10"], needle="--kv-cache entry 'abc' is not an integer")
case("plan_kv_cache_empty", [*INFER, "--kv-cache", "", "--seq", "10"], needle="--kv-cache is empty")
case("plan_kv_cache_layout_bad", [*INFER, "--kv-cache", "10", "--seq", "10", "--cache-layout", "foo"],
     needle="cache layout 'foo' is not one of: zigzag, interleaved")
case("plan_kv_cache_rows_bound", [*INFER, "--kv-cache", "100000000", "--seq", "100000000", "--gpus", "8"],
     needle="planning this step walks N x (2T + P) = 2.4e+09 token rows, more than the inference planner's")
case("plan_cache_layout_alone", ["plan", "--cache-layout", "interleaved"],
     needle="--cache-layout needs --kv-cache (an inference step) or --infer-table")
np.save(path("sinks_2d.npy"), np.zeros((2, 1)))
np.save(path("sinks_3.npy"), np.zeros(3))
np.save(path("sinks_nan.npy"), np.array([0.5, np.nan]))
np.save(path("sinks_int.npy"), np.array([1, 2], dtype=np.int64))
np.save(path("sinks_ok.npy"), np.array([0.5, -1.0]))
case("sink_logits_2d", [*w2, "--sink-logits", path("sinks_2d.npy")],
     needle=path("sinks_2d.npy") + ": sink logits must be 1-d, shape (heads,), got shape (2, 1)")
case("sink_logits_wrong_count", [*w2, "--sink-logits", path("sinks_3.npy")],
     needle="--sink-logits holds 3 values but heads is 2 (one learnable logit per query head: shape (heads,))")
case("sink_logits_nan", [*w2, "--sink-logits", path("sinks_nan.npy")],
     needle="--sink-logits value 1 is NaN (every sink logit must be a finite number)")
case("sink_logits_int_dtype", [*w2, "--sink-logits", path("sinks_int.npy")], needle=path("sinks_int.npy"))
case("sink_logits_missing", [*w2, "--sink-logits", path("no_such_sinks.npy")], needle=path("no_such_sinks.npy"))
case("sink_logits_directory", [*w2, "--sink-logits", path("a_directory")], needle="directory")
case("sink_logits_ok", [*w2, "--causal", "--window", "3", "--backward", "--sink-logits", path("sinks_ok.npy")], rc=0)

# ---- issue 39: silent acceptances, streams, messages (the rules named, exit 2) -----------------------------
case("repeated_option", ["run", "--cp", "2", "--seq", "8", "--seq", "16"],
     needle="--seq of 'run' is given more than once: each option takes one value")
case("repeated_flag_ok", ["run", "--cp", "2", "--seq", "8", "--causal", "--causal"], rc=0)
np.save(path("sinks_empty.npy"), np.zeros(0))
case("sink_logits_empty", [*w2, "--sink-logits", path("sinks_empty.npy")],
     needle=path("sinks_empty.npy") + ": holds no sink logits, shape (0,)")
case("schedule_dist_scheduler_unknown", ["schedule", "--dist", "data/dcp/web_lognormal.json", "--scheduler", "zz"],
     needle="--scheduler 'zz' is not one of: megatron, cplab")
case("schedule_dist_scheduler_given", ["schedule", "--dist", "data/dcp/web_lognormal.json", "--scheduler", "cplab"],
     needle="--scheduler is for one batch (--lengths): --dist compares both schedulers")
d = dist("dist_sigma_huge.json", '"min": 1, "max": 100', '[{"weight": 1, "median": 1024, "sigma": 1e300}]')
case("dist_sigma_huge", ["schedule", "--dist", d], needle=d + ": lognormal_mixture[0].sigma = 1")  # 1.0000000000000001e+300
case("dist_sigma_huge_rule", ["schedule", "--dist", d], needle="is out of range: it must be in [0, 10]")
d = dist("dist_median_huge.json", '"min": 1, "max": 100', '[{"weight": 1, "median": 1e300, "sigma": 1}]')
case("dist_median_huge", ["schedule", "--dist", d], needle="median = 1.0000000000000001e+300 is out of range: it must be in [0, 4503599627370496]")
# cplab check: shard folders of other ranks, paths that cannot be looked at, .npy files that are not files
CI, CO = path("c39_in"), path("c39_out")
os.makedirs(CI, exist_ok=True)
for n, h in (("q", 2), ("k", 1), ("v", 1)):
    np.save(os.path.join(CI, n + ".npy"), rng.uniform(-1, 1, (16, h, 8)))
chk = ["check", "--cp", "4", "--inputs", CI, "--outputs", CO]
if case("check39_outputs", ["run", "--cp", "4", "--seq", "16", "--heads", "2", "--kv-heads", "1", "--head-dim", "8",
                            "--q", os.path.join(CI, "q.npy"), "--k", os.path.join(CI, "k.npy"), "--v", os.path.join(CI, "v.npy"),
                            "--out-dir", CO], rc=0) is not None:
    for r in (5, 7):
        os.makedirs(os.path.join(CO, f"rank{r}"), exist_ok=True)
    case("check_shard_rank_above_cp", chk, needle="rank7 exists but cp is 4 (ranks 0-3)")
    for r in (5, 7):
        os.rmdir(os.path.join(CO, f"rank{r}"))
    os.makedirs(os.path.join(CO, "rank4"), exist_ok=True)
    np.save(os.path.join(CO, "rank4", "dsinks.npy"), np.zeros(2))
    case("check_rank4_dsinks", chk, needle="rank4 exists but cp is 4 (ranks 0-3)")
    os.remove(os.path.join(CO, "rank4", "dsinks.npy"))
    os.rmdir(os.path.join(CO, "rank4"))
    case("check_ok_again", chk, rc=0)
    bad_o = path("c39_bad_o")
    os.makedirs(bad_o, exist_ok=True)
    o_npy = os.path.join(bad_o, "o.npy")
    os.makedirs(o_npy, exist_ok=True)
    case("check_o_directory", ["check", "--cp", "4", "--inputs", CI, "--outputs", bad_o], needle="o.npy: cannot open file: it is a directory")
    os.rmdir(o_npy)
    os.mkfifo(o_npy)
    case("check_o_fifo", ["check", "--cp", "4", "--inputs", CI, "--outputs", bad_o], needle="o.npy: cannot open file: it is not a regular file")
    os.remove(o_npy)
    os.symlink("o.npy", o_npy)  # a link to itself
    case("check_o_symlink_loop", ["check", "--cp", "4", "--inputs", CI, "--outputs", bad_o],
         needle="o.npy: cannot look at it (Too many levels of symbolic links)")
    os.remove(o_npy)
    loop = path("c39_loop")
    if not os.path.islink(loop):
        os.symlink(loop, loop)
    case("check_outputs_symlink_loop", ["check", "--cp", "4", "--inputs", CI, "--outputs", loop],
         needle="cannot use it as a folder (Too many levels of symbolic links)")
    if os.geteuid() != 0:  # root reads a mode-000 file: the case needs a user
        with open(o_npy, "wb") as fh:
            fh.write(open(os.path.join(CO, "o.npy"), "rb").read())
        os.chmod(o_npy, 0)
        case("check_o_mode_000", ["check", "--cp", "4", "--inputs", CI, "--outputs", bad_o], needle="Permission denied")
        os.chmod(o_npy, 0o644)
        os.remove(o_npy)
    # a standard output that cannot be written is no success
    if os.path.exists("/dev/full"):
        with open("/dev/full", "w") as full:
            for name, argv in (("run_stdout_dev_full", ["run", "--cp", "2", "--seq", "8"]), ("check_stdout_dev_full", chk),
                               ("check_json_stdout_dev_full", chk + ["--json"])):
                count += 1
                p = subprocess.run([CPLAB, *argv], stdout=full, stderr=subprocess.PIPE, text=True, timeout=120)
                if p.returncode != 2 or "cannot write to standard output" not in p.stderr:
                    failures.append(f"[{name}] exit {p.returncode}, stderr {p.stderr.strip()[:300]!r}: expected exit 2 "
                                    "naming standard output")
    # TMPDIR that does not exist: named, before any picture (needs cplab-viz and a display or xvfb-run)
    if VIZ:
        count += 1
        p = subprocess.run([CPLAB, *chk, "--out", path("c39.png")], capture_output=True, text=True, timeout=120,
                           env=dict(os.environ, TMPDIR=path("no_such_tmp"), CPLAB_VIZ=VIZ))
        if "xvfb-run" not in p.stderr and (p.returncode != 2 or "set TMPDIR to a folder that exists" not in p.stderr
                                           or "filesystem error" in p.stderr):
            failures.append(f"[check_out_tmpdir_missing] exit {p.returncode}: {p.stderr.strip()[:300]}")
if VIZ:
    viz = dict(tool=VIZ, prefix="cplab-viz: error: ")
    for opt, val, rule in (("--step", "2147483648", "[0, 2147483647]"), ("--frames", "2147483648", "[1, 1000]"),
                           ("--bench-frames", "2147483648", "[1, 100000]"), ("--bench-frames", "0", "[1, 100000]")):
        case(f"viz_int_range{opt}_{val}", [opt, val], needle=f"{opt}: value {val} is out of range: it must be in {rule}", **viz)
    case("viz_lesson_huge", ["--lesson", "2147483648"], needle="--lesson: value 2147483648 is not a lesson: there are", **viz)
    case("viz_page_huge", ["--lesson", "1", "--page", "2147483648"], needle="--page: value 2147483648 is not a page", **viz)
    case("viz_zoom_from_huge", ["--view", "ownership", "--cp", "4", "--seq", "32", "--zoom-from", "2147483648", "--bench-frames", "1"],
         needle="--zoom-from 2147483648 must be in [0, 31]", **viz)
    case("viz_repeated_option", ["--cp", "4", "--cp", "8", "--bench-frames", "1"], needle="--cp is given more than once", **viz)
    case("viz_bench_frames_too_long", ["--view", "ring", "--cp", "64", "--seq", "1048576", "--bench-frames", "100000"],
         needle="more than the 60 s a frame benchmark may take", timeout=300, **viz)
    import json  # noqa: E402
    rep = {"verdict": "NOT equivalent", "where": [], "error_map": {"ranks": 2, "chunks_per_rank": 1,
           "chunk_labels": [["a"], ["b"]], "outputs": {"o": {"heads": 2, "tolerance": 1e-10, "values": [[[0, 1]], [[1, 0]]]}}}}
    def report(name, r):
        with open(path(name), "w") as fh:
            json.dump(r, fh)
        return path(name)
    bench = ["--view", "check", "--bench-frames", "1", "--check-report"]
    case("viz_check_explains_type", bench + [report("r_explains.json", dict(rep, diagnosis=[{"name": "x", "explains": "yes"}]))],
         needle="diagnosis[0].explains is a JSON string, not true or false", **viz)
    case("viz_check_verdict_type", bench + [report("r_verdict.json", dict(rep, verdict=3))],
         needle="it needs 'verdict' and 'error_map'", **viz)
    r = json.loads(json.dumps(rep))
    r["error_map"]["chunk_labels"][0][0] = "x" * 1000
    case("viz_check_label_long", bench + [report("r_label.json", r)], needle="chunk_labels[0][0] is 1000 bytes, more than the 200", **viz)
    r = json.loads(json.dumps(rep))
    r["error_map"].update(ranks=256, chunks_per_rank=64, chunk_labels=[])
    r["error_map"]["outputs"]["o"] = {"heads": 64, "tolerance": 1e-10, "values": [[[0.0] * 64] * 64] * 256}
    # traces bounded before they are drawn: the file's size before it is read, the events before they are parsed
    big_trace = path("trace_129mb.json")
    with open(big_trace, "wb") as fh:
        fh.truncate((129 << 20))  # sparse: no disk
    case("viz_trace_too_large", ["--view", "timeline", "--trace", big_trace, "--bench-frames", "1"],
         needle="-byte limit for this kind of file", **viz)
    many = path("trace_many_events.json")
    with open(many, "w") as fh:
        fh.write('{"format": "cplab-trace", "version": 1, "cp": 2, "events": [' + ",".join(["{}"] * ((1 << 19) + 1)) + "]}")
    case("viz_trace_too_many_events", ["--view", "timeline", "--trace", many, "--bench-frames", "1"],
         needle="524289 events, more than the 524288 cplab-viz draws in seconds", **viz)
    case("viz_check_cells_limit", bench + [report("r_cells.json", r)], needle="more than the 524288 the check view draws", **viz)

# ---- issue 37: inference (--kv-cache): every rule named, exit 2, nothing written ------------------------
inf = ["run", "--cp", "2", "--heads", "2", "--kv-heads", "1", "--head-dim", "8", "--seq", "5"]
NOT_MADE = path("infer_not_made")


def infer_case(name, argv, needle, out=True):
    """a bad inference command line: exit 2 naming the rule, and its --out-dir never created"""
    case(name, argv + (["--out-dir", NOT_MADE] if out else []), needle=needle)
    if os.path.exists(NOT_MADE):
        failures.append(f"[{name}] wrote {NOT_MADE}")


infer_case("kv_cache_negative", [*inf, "--kv-cache", "-3"], needle="--kv-cache -3 must be >= 0 (cached tokens; 0: a full prefill)")
infer_case("kv_cache_list_length", [*inf, "--kv-cache", "4,5"], needle="--kv-cache lists 2 cache lengths but there are 1 requests")
infer_case("kv_cache_list_length_packed", [*inf[:-2], "--cu-seqlens", "0,2,5", "--kv-cache", "1,2,3"], needle="--kv-cache lists 3 cache lengths but there are 2 requests")
infer_case("kv_cache_empty", [*inf, "--kv-cache", ""], needle="--kv-cache needs a value")
infer_case("kv_cache_backward", [*inf, "--kv-cache", "8", "--backward"],
           needle="--backward cannot go with --kv-cache: an inference step has no backward")
for m in ("allgather", "a2a", "a2a+p2p"):
    infer_case(f"kv_cache_training_mode_{m}", [*inf, "--kv-cache", "8", "--mode", m],
               needle=f"--mode {m} is a training mode and cannot take a KV cache (--kv-cache)")
infer_case("kv_cache_unknown_mode", [*inf, "--kv-cache", "8", "--mode", "pass-kv"], needle="pass-kv")
infer_case("kv_cache_merge_fold", [*inf, "--kv-cache", "8", "--merge", "fold"], needle="--merge fold cannot go with --kv-cache")
infer_case("kv_cache_hcp", [*inf, "--kv-cache", "8", "--hcp", "1,2"], needle="--hcp is for --mode a2a+p2p (training); it cannot go with --kv-cache")
infer_case("kv_cache_replicate_kv", [*inf, "--kv-cache", "8", "--replicate-kv"], needle="--replicate-kv is for the all-to-all of a2a")
infer_case("kv_cache_pad", [*inf[:-2], "--cu-seqlens", "0,2,5", "--kv-cache", "8", "--pad"], needle="--pad cannot go with --kv-cache")
for m in ("pass-q", "decode-pass-q", "decode-ag"):
    infer_case(f"infer_mode_without_kv_cache_{m}", [*inf, "--mode", m],
               needle=f"--mode {m} is an inference mode: give --kv-cache P (0 for a full prefill)")
infer_case("cache_layout_without_kv_cache", [*inf, "--cache-layout", "interleaved"], needle="--cache-layout is for an inference step")
infer_case("cache_layout_unknown", [*inf, "--kv-cache", "8", "--cache-layout", "striped"], needle="striped")
infer_case("decode_with_layout", [*inf, "--kv-cache", "8", "--mode", "decode-ag", "--layout", "zigzag"],
           needle="--layout cannot go with --mode decode-ag: the decode variants place the new tokens round-robin")
infer_case("kv_cache_seq_disagrees", [*inf, "--cu-seqlens", "0,2,7", "--kv-cache", "8"], needle="--seq 5 disagrees with the 7 new tokens")
infer_case("kv_cache_do", [*inf, "--kv-cache", "8", "--do", path("none.npy")], needle="--do cannot go with --kv-cache")
# .npy inputs whose shapes disagree: the expected shapes named
ID = path("infer_npy")
os.makedirs(ID, exist_ok=True)
np.save(os.path.join(ID, "q.npy"), rng.uniform(-1, 1, (5, 2, 8)))
np.save(os.path.join(ID, "k.npy"), rng.uniform(-1, 1, (5, 1, 8)))  # the new tokens only: the cache is missing
np.save(os.path.join(ID, "v.npy"), rng.uniform(-1, 1, (13, 1, 8)))
np.save(os.path.join(ID, "k13.npy"), rng.uniform(-1, 1, (13, 1, 8)))
np.save(os.path.join(ID, "k_heads.npy"), rng.uniform(-1, 1, (13, 3, 8)))
npy = ["run", "--cp", "2", "--kv-cache", "8", "--q", os.path.join(ID, "q.npy"), "--v", os.path.join(ID, "v.npy")]
infer_case("infer_npy_k_rows", [*npy, "--k", os.path.join(ID, "k.npy")], needle="K holds 5 tokens but the step has P + T = 13")
infer_case("infer_npy_k_rows_shapes", [*npy, "--k", os.path.join(ID, "k.npy")], needle="q.npy must be (T, heads, head-dim) = (5, 2, 8), k.npy (P+T, kv-heads, head-dim) = (13, 1, 8)")
infer_case("infer_npy_q_vs_seq", [*npy, "--k", os.path.join(ID, "k13.npy"), "--seq", "4"], needle="Q holds 5 new tokens but the step has T = 4")
infer_case("infer_npy_kv_heads", [*npy, "--k", os.path.join(ID, "k_heads.npy")], needle="heads")
case("infer_npy_ok", [*npy, "--k", os.path.join(ID, "k13.npy"), "--mode", "pass-q"], rc=0)
# cplab check --kv-cache: its files' rules
CO37 = path("infer_check_out")
os.makedirs(CO37, exist_ok=True)
np.save(os.path.join(CO37, "o.npy"), rng.uniform(-1, 1, (5, 2, 8)))
IC = path("infer_check_in")
os.makedirs(IC, exist_ok=True)
for n, shape in (("q", (5, 2, 8)), ("k", (13, 1, 8)), ("v", (13, 1, 8))):
    np.save(os.path.join(IC, n + ".npy"), rng.uniform(-1, 1, shape))
chk37 = ["check", "--cp", "2", "--causal", "--mode", "pass-q", "--kv-cache", "8", "--inputs", IC, "--outputs", CO37]
case("infer_check_kv_rows", ["check", "--cp", "2", "--causal", "--kv-cache", "9", "--inputs", IC, "--outputs", CO37],
     needle="k.npy: has shape (13, 1, 8) but the spec needs (14, 1, 8)")
np.save(os.path.join(IC, "do.npy"), rng.uniform(-1, 1, (5, 2, 8)))
case("infer_check_do", chk37, needle="do.npy exists but an inference step (--kv-cache) has no backward")
os.remove(os.path.join(IC, "do.npy"))
np.save(os.path.join(CO37, "lse.npy"), rng.uniform(-1, 1, (5, 2)))
case("infer_check_lse_shape", chk37, needle="lse.npy: has shape (5, 2) but the spec needs (2, 5)")
os.remove(os.path.join(CO37, "lse.npy"))
case("infer_check_pass_q_without_kv_cache", ["check", "--mode", "pass-q", "--inputs", IC, "--outputs", CO37],
     needle="--mode pass-q is an inference mode: give --kv-cache P")
case("infer_check_runs", chk37, rc=1)  # random O: not equivalent, but a check was made

# --precision (run/precision.h): its stages and the modes whose ring it rounds
pr = ["run", "--cp", "2", "--seq", "64", "--precision"]
case("precision_empty", [*pr, ""], needle="--precision needs stages")
case("precision_stage", [*pr, "outputs=bf16"], needle="unknown stage 'outputs'")
case("precision_dtype", [*pr, "merge=fp8"], needle="merge=fp8: the dtype must be one of fp32, fp16, bf16")
case("precision_twice", [*pr, "merge=bf16,merge=fp32"], needle="merge is given twice")
case("precision_mode", [*pr, "partials=bf16", "--mode", "allgather"], needle="modes p2p and a2a+p2p, not allgather")
case("precision_fold", [*pr, "merge=bf16", "--merge", "fold"], needle="--merge fold sums the partials once")
case("precision_dtype_disagree", [*pr, "accumulate=fp32", "--dtype", "double"], needle="disagree")
case("precision_kv_cache", ["run", "--cp", "2", "--kv-cache", "8", "--seq", "4", "--precision", "inputs=bf16"],
     needle="--precision is not modelled for inference steps")
case("precision_ok", [*pr, "inputs=bf16,accumulate=fp32,partials=bf16,merge=bf16", "--causal", "--backward"], rc=0)

# cplab check --precision (check/pipeline_bound.h): its rules before any file is read
PI, PO = path("c38p_in"), path("c38p_out")
os.makedirs(PI, exist_ok=True)
for n, h in (("q", 2), ("k", 1), ("v", 1)):
    np.save(os.path.join(PI, n + ".npy"), rng.uniform(-1, 1, (16, h, 8)))
chkp = ["check", "--cp", "2", "--causal", "--inputs", PI, "--outputs", PO, "--precision"]
if case("check_precision_outputs", ["run", "--cp", "2", "--causal", "--seq", "16", "--heads", "2", "--kv-heads", "1", "--head-dim", "8",
                                    "--q", os.path.join(PI, "q.npy"), "--k", os.path.join(PI, "k.npy"), "--v", os.path.join(PI, "v.npy"),
                                    "--out-dir", PO], rc=0) is not None:
    case("check_precision_malformed", [*chkp, "merge=fp8"], needle="merge=fp8: the dtype must be one of fp32, fp16, bf16")
    case("check_precision_tolerance", [*chkp, "inputs=bf16", "--tolerance", "1e-3"],
         needle="--precision and --tolerance exclude each other")
    case("check_precision_mode", [*chkp, "partials=bf16", "--mode", "allgather"], needle="modes p2p and a2a+p2p, not allgather")
    case("check_precision_kv_cache", ["check", "--cp", "2", "--causal", "--mode", "pass-q", "--kv-cache", "8", "--inputs", IC,
                                      "--outputs", CO37, "--precision", "inputs=bf16"], needle="--precision is not modelled for inference steps")
    case("check_precision_ok", [*chkp, "inputs=bf16,accumulate=fp32,partials=bf16,merge=bf16"], rc=0)

print(f"bad_input_check: {count} cases, {len(failures)} failed")
for f in failures:
    print("FAIL " + f)
sys.exit(1 if failures else 0)
