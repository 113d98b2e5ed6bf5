#!/usr/bin/env python3
"""viz_scene_check.py: cplab-viz --headless --scene-json, end to end, for the four false pictures of
issue 20: the JSON written beside the PNG shows exactly the tiles of `cplab run --plan-only --trace`
at that step, each tile's coloured cells equal the pairs the reference counted, and the a2a
transposes go the right way.

Usage: viz_scene_check.py CPLAB CPLAB_VIZ OUT_DIR   (needs xvfb-run; exit 1 on the first failure)
"""
import json
import os
import subprocess
import sys

cplab, viz, out = sys.argv[1:4]
os.makedirs(out, exist_ok=True)
RUN = ["--cp", "4", "--heads", "8", "--kv-heads", "4", "--head-dim", "16", "--causal", "--backward", "--dtype", "double"]
cases = [  # name, run options, view, phase, step
    ("striped_ring_step3", ["--layout", "striped", "--seq", "32"], "ring", "fwd", 3),
    ("packed_ring_step1", ["--cu-seqlens", "0,12,36,42", "--pad"], "ring", "fwd", 1),
    ("packed_masks", ["--cu-seqlens", "0,12,36,42", "--pad"], "masks", "fwd", 0),
    ("a2a_masks", ["--mode", "a2a", "--seq", "32"], "masks", "fwd", 0),
    ("hcp_masks", ["--mode", "a2a+p2p", "--hcp", "2,2", "--seq", "32"], "masks", "fwd", 0),
    ("a2a_output", ["--mode", "a2a", "--seq", "32"], "ring", "fwd", 2),
]
failures = 0


def fail(name, msg):
    global failures
    failures += 1
    print(f"FAIL {name}: {msg}")


for name, opts, view, phase, step in cases:
    before = failures
    trace = os.path.join(out, name + ".trace.json")
    subprocess.run([cplab, "run", *RUN, *opts, "--plan-only", "--trace", trace], check=True, capture_output=True)
    png, scene = os.path.join(out, name + ".png"), os.path.join(out, name + ".scene.json")
    args = [viz, "--headless", "--view", view, *RUN, *opts, "--out", png, "--scene-json", scene]
    if view == "ring":
        args += ["--phase", phase, "--step", str(step)]
    subprocess.run(["xvfb-run", "-a", *args], check=True, capture_output=True)
    s = json.load(open(scene))
    t = json.load(open(trace))
    want = sorted((e["rank"], e["peer"], json.dumps(e["rows"]), json.dumps(e["cols"]), e["mask"])
                  for e in t["events"] if e["kind"] == "tile" and e["phase"] == phase and (view == "masks" or e["step"] == step))
    panels = {p["name"] for p in s["panels"]}
    for prefix in (["matrix"] if view == "ring" else ["rank order", "tile kinds"]):
        got = sorted((x["rank"], x["peer"], json.dumps(x["rows"]), json.dumps(x["cols"]), x["mask"])
                     for x in s["tiles"] if x["panel"].startswith(prefix))
        if got != want:
            fail(name, f"panel '{prefix}': the tiles drawn are not the trace's ({len(got)} drawn, {len(want)} in the trace)")
    for x in s["tiles"]:
        if abs(x["drawn_pairs"] - x["pairs"]) > 1e-3 * max(1, x["pairs"]):
            fail(name, f"rank {x['rank']} x KV of {x['peer']} in '{x['panel']}': {x['drawn_pairs']:.3f} cells coloured, {x['pairs']} visible pairs")
    if name == "a2a_output" and panels != {"heads split (before)", "tokens split (after)"}:
        fail(name, f"the output all-to-all is drawn as {sorted(panels)}")
    sends = sorted((e["rank"], e["peer"], e["tensor"], e["bytes"]) for e in t["events"]
                   if e["kind"] == "send" and e["phase"] == phase and e["step"] == step) if view == "ring" else []
    drawn = sorted((m["sender"], m["receiver"], m["tensor"], m["bytes"]) for m in s["messages"])
    if drawn != sends:
        fail(name, f"messages drawn {drawn[:3]}... are not the trace's sends {sends[:3]}...")
    if failures == before:
        print(f"ok {name}: {len(s['tiles'])} tiles, {len(s['messages'])} messages")
sys.exit(1 if failures else 0)
