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
case("schedule_batch_size_negative", ["schedule", "--dist", "data/dcp/web_lognormal.json", "--batch-size", "-1"],
     needle="--batch-size -1 must be >= 0")
case("scale_huge", ["run", "--cp", "2", "--seq", "8", "--scale", "1e300"], needle="scale")

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

print(f"bad_input_check: {count} cases, {len(failures)} failed")
for f in failures:
    print("FAIL " + f)
sys.exit(1 if failures else 0)
