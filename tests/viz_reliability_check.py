#!/usr/bin/env python3
"""viz_reliability_check.py: issue 39's cases of cplab-viz's pictures (ctest `viz_reliability`, under xvfb-run).

Usage: xvfb-run -a python3 viz_reliability_check.py PATH/TO/cplab PATH/TO/cplab-viz SCRATCH_DIR

- the worst genuine report (8 tokens, 8,192 heads, every other head of O wrong: a "where" line of
  20,000 characters) and a report with 10 MB lines render without an ImGui abort, in seconds;
  `cplab check --json --out r.png` on those files prints pure JSON (cplab-viz's lines on stderr);
- the PNG and --scene-json's file commit together: --scene-json /dev/full leaves an existing PNG as it
  was; a PNG that cannot be written reads "cplab-viz: error:";
- a standard output that cannot be written (/dev/full) is exit 2 naming it, for cplab-viz --headless and
  cplab check.
Every case: never a signal, never a sanitizer report.
"""
import json
import os
import subprocess
import sys
import time

import numpy as np  # /usr/bin/python3: Debian's python3-numpy

CPLAB, VIZ, SCRATCH = sys.argv[1], sys.argv[2], sys.argv[3]
os.makedirs(SCRATCH, exist_ok=True)
failures = []
count = 0


def path(*p):
    return os.path.join(SCRATCH, *p)


def run(name, argv, rc, needle="", stdout=None, timeout=120, env=None):
    global count
    count += 1
    t0 = time.monotonic()
    try:
        p = subprocess.run(argv, stdout=stdout if stdout is not None else subprocess.PIPE, stderr=subprocess.PIPE,
                           text=True, timeout=timeout, env=env)
    except subprocess.TimeoutExpired:
        failures.append(f"[{name}] timed out after {timeout} s")
        return None
    why = []
    if p.returncode != rc:
        why.append(f"exit {p.returncode}, expected {rc}")
    if needle and needle not in p.stderr:
        why.append(f"stderr lacks {needle!r}")
    if "Assertion" in p.stderr or "runtime error:" in p.stderr or "Sanitizer" in p.stderr:
        why.append("an assertion or sanitizer report")
    if why:
        failures.append(f"[{name}] {'; '.join(why)} ({time.monotonic() - t0:.1f} s)\n    $ {' '.join(argv)[:300]}\n    "
                        + p.stderr.strip()[-1500:].replace("\n", "\n    "))
    return p


def is_png(f):
    with open(f, "rb") as fh:
        return fh.read(8) == b"\x89PNG\r\n\x1a\n"


# ---- the worst genuine report: 8 tokens, 8192 heads, every other head of O wrong --------------------------
IN, OUT = path("in"), path("out")
os.makedirs(IN, exist_ok=True)
rng = np.random.default_rng(39)
S, H, D = 8, 8192, 1
for n in "qkv":
    np.save(os.path.join(IN, n + ".npy"), rng.uniform(-1, 1, (S, H, D)))
run("make_outputs", [CPLAB, "run", "--cp", "2", "--seq", str(S), "--heads", str(H), "--kv-heads", str(H), "--head-dim",
                     str(D), *sum((["--" + n, os.path.join(IN, n + ".npy")] for n in "qkv"), []), "--out-dir", OUT], rc=0)
o = np.load(os.path.join(OUT, "o.npy"))
o[:, ::2, :] += 1.0
np.save(os.path.join(OUT, "o.npy"), o)
png = path("worst.png")
env = dict(os.environ, CPLAB_VIZ=VIZ)
p = run("check_json_out_worst", [CPLAB, "check", "--cp", "2", "--inputs", IN, "--outputs", OUT, "--json", "--out", png], rc=1,
        env=env)
if p is not None:
    try:
        report = json.loads(p.stdout)
        if max(len(w) for w in report["where"]) < 16384:
            failures.append("[check_json_out_worst] the report's longest 'where' line is shorter than ImGui's 16383-byte limit: "
                            "the case no longer tests it")
    except json.JSONDecodeError as e:
        failures.append(f"[check_json_out_worst] stdout is not pure JSON ({e}): {p.stdout[-300:]!r}")
    if not os.path.isfile(png) or not is_png(png):
        failures.append(f"[check_json_out_worst] {png} was not written")
    with open(path("worst.json"), "w") as fh:
        fh.write(p.stdout)

# ---- 10 MB lines everywhere a report holds text ----------------------------------------------------------
if os.path.isfile(path("worst.json")):
    with open(path("worst.json")) as fh:
        r = json.load(fh)
    big = "x" * (10 << 20)
    r["where"] = [big, "\u00e9" * (5 << 20)]  # 10 MB of two-byte characters: cut at a character boundary
    r["outputs_dir"] = big
    r["verdict"] = "NOT equivalent: " + big
    with open(path("big.json"), "w", encoding="utf-8") as fh:  # 40 MB: within the 64 MB a report may have
        json.dump(r, fh, ensure_ascii=False)
    t0 = time.monotonic()
    run("viz_10mb_lines", [VIZ, "--headless", "--controls", "--view", "check", "--check-report", path("big.json"),
                           "--out", path("big.png")], rc=0, stdout=subprocess.DEVNULL)
    if time.monotonic() - t0 > 60:
        failures.append(f"[viz_10mb_lines] took {time.monotonic() - t0:.0f} s")

# ---- the PNG and the scene JSON commit together ------------------------------------------------------------
OLD = b"an existing picture\n"
kept = path("kept.png")
with open(kept, "wb") as fh:
    fh.write(OLD)
if os.path.exists("/dev/full"):
    run("scene_json_dev_full_keeps_png", [VIZ, "--headless", "--view", "ring", "--out", kept, "--scene-json", "/dev/full"],
        rc=2, needle="cplab-viz: error: --scene-json /dev/full: cannot write (No space left on device)")
    with open(kept, "rb") as fh:
        if fh.read() != OLD:
            failures.append("[scene_json_dev_full_keeps_png] the PNG was replaced although --scene-json failed")
    run("png_dev_full", [VIZ, "--headless", "--view", "ring", "--out", "/dev/full"], rc=2,
        needle="cplab-viz: error: --out /dev/full: cannot write (No space left on device)")
    with open("/dev/full", "w") as full:
        run("viz_stdout_dev_full", [VIZ, "--headless", "--view", "ring", "--out", path("s.png")], rc=2, stdout=full,
            needle="cplab-viz: error: cannot write to standard output")
        run("check_out_stdout_dev_full", [CPLAB, "check", "--cp", "2", "--inputs", IN, "--outputs", OUT, "--out",
                                          path("c.png")], rc=2, stdout=full, env=env,
            needle="cplab: error: cannot write to standard output")
run("png_and_scene_json", [VIZ, "--headless", "--view", "ring", "--out", path("both.png"), "--scene-json", path("both.json")],
    rc=0)
if not (os.path.isfile(path("both.png")) and os.path.isfile(path("both.json"))):
    failures.append("[png_and_scene_json] the PNG or the scene JSON was not written")
left = [n for n in os.listdir(SCRATCH) if ".cplab-tmp-" in n]
if left:
    failures.append(f"temporary files left in {SCRATCH}: {left}")

print(f"viz_reliability_check: {count} cases, {len(failures)} failed")
for f in failures:
    print("FAIL " + f)
sys.exit(1 if failures else 0)
