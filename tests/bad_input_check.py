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
case("scale_huge", ["run", "--cp", "2", "--seq", "8", "--scale", "1e300"], needle="scale")

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
    case("viz_dist_directory", ["--view", "scheduler", "--dist", vizdir] + bench, needle="directory", **viz)
    case("viz_schedule_json_directory", ["--view", "scheduler", "--schedule-json", vizdir] + bench, needle="directory", **viz)
    case("viz_trace_cp_huge", ["--view", "timeline", "--trace", big_cp] + bench, needle="cp", **viz)
    case("viz_dist_batch_huge", ["--view", "scheduler", "--dist", big_batch] + bench, needle="batch_size", **viz)
    case("viz_size_three_parts", ["--size", "1280x720x3"] + bench, needle="--size", **viz)
    case("viz_unknown_option", ["--veiw", "ring"] + bench, needle="--view", **viz)  # CLI11 exited 109 here
    case("viz_bad_number", ["--cp", "four"] + bench, needle="--cp", **viz)          # CLI11 exited 105 here
    case("viz_missing_value", ["--cp"], needle="--cp", **viz)

print(f"bad_input_check: {count} cases, {len(failures)} failed")
for f in failures:
    print("FAIL " + f)
sys.exit(1 if failures else 0)
