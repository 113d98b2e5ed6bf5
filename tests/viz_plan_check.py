#!/usr/bin/env python3
"""viz_plan_check.py: cplab-viz's timeline prints the numbers `cplab plan` prints for the same run
(run by ctest as `viz_plan_exposed`).

Usage: viz_plan_check.py PATH/TO/cplab PATH/TO/cplab-viz SCRATCH_DIR

The run of issue 20's "communication you can see": p2p (zigzag) on 8 GPUs of one node, 131072
tokens, 32 query and 32 KV heads of dim 128 (MHA, Llama 2 7B's attention), causal, forward +
backward. For each link preset (`--link L` for cplab-viz; `--intra L --inter L` for cplab plan):
the exposed communication, forward and backward times in the title of the headless render
(printed after the PNG) equal plan --json's "p2p zigzag" row at plan's printed precision (ms, 3
decimals), and the notes name the presets. NVLink hides the transfers (exposed 0.000 ms), 100 GbE
does not. Needs xvfb-run (the headless render needs an X server).
"""
import json
import os
import re
import subprocess
import sys

CPLAB, VIZ, SCRATCH = sys.argv[1], sys.argv[2], sys.argv[3]
os.makedirs(SCRATCH, exist_ok=True)
failures = []
RUN = ["--seq", "131072", "--heads", "32", "--kv-heads", "32", "--head-dim", "128"]

for link in ["nvlink4", "eth100"]:
    plan = subprocess.run([CPLAB, "plan", *RUN, "--gpus", "8", "--gpus-per-node", "8", "--intra", link, "--inter", link, "--json"],
                          capture_output=True, text=True, timeout=300)
    if plan.returncode != 0:
        failures.append(f"{link}: cplab plan exit {plan.returncode}: {plan.stderr}")
        continue
    j = json.loads(plan.stdout)
    row = next((o for o in j["options"] if o["label"] == "p2p zigzag"), None)
    if row is None or not row["valid"]:
        failures.append(f"{link}: cplab plan has no valid 'p2p zigzag' row")
        continue
    png = os.path.join(SCRATCH, f"timeline_{link}.png")
    viz = subprocess.run(["xvfb-run", "-a", "-s", "-screen 0 1024x700x24", VIZ, "--headless", "--size", "960x600", "--out", png,
                          "--view", "timeline", "--mode", "p2p", "--cp", "8", *RUN, "--link", link],
                         capture_output=True, text=True, timeout=300)
    if viz.returncode != 0:
        failures.append(f"{link}: cplab-viz exit {viz.returncode}: {viz.stderr}")
        continue
    m = re.search(r"exposed communication (\d+\.\d{3}) ms \(red\), forward (\d+\.\d{3}) ms, backward (\d+\.\d{3}) ms", viz.stdout)
    if not m:
        failures.append(f"{link}: cplab-viz printed no modelled title:\n{viz.stdout}")
        continue
    for what, got, key in zip(["exposed", "forward", "backward"], m.groups(), ["exposed_comm_ms", "fwd_ms", "bwd_ms"]):
        want = f"{row[key]:.3f}"
        if got != want:
            failures.append(f"{link}: cplab-viz's {what} time {got} ms != cplab plan's {want} ms")
    for needle in [f"intra-node {link} ", f"inter-node {link} ", "8 GPUs per node", "h100 ", "2 bytes per element"]:
        if needle not in viz.stdout:
            failures.append(f"{link}: cplab-viz's notes lack '{needle}':\n{viz.stdout}")
    a = j["assumptions"]
    if a["intra_node"]["name"] != link or a["inter_node"]["name"] != link or a["bytes_per_element"] != 2:
        failures.append(f"{link}: cplab plan's assumptions are not this run's: {a}")
    exposed = float(m.group(1))
    if (link == "nvlink4") != (exposed == 0):
        failures.append(f"{link}: exposed communication {exposed} ms (expected none on nvlink4, some on eth100)")
    print(f"{link}: cplab-viz exposed {m.group(1)} ms, forward {m.group(2)} ms, backward {m.group(3)} ms; "
          f"cplab plan {row['exposed_comm_ms']:.3f} / {row['fwd_ms']:.3f} / {row['bwd_ms']:.3f} ms")

if failures:
    print("\n".join(["FAIL: " + f for f in failures]))
    sys.exit(1)
print("viz_plan_check: cplab-viz's timeline prints cplab plan's exposed, forward and backward times for both links")
