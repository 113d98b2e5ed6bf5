#!/usr/bin/env python3
"""viz_scene_check.py: cplab-viz --headless --scene-json, end to end, for the four false pictures of
issue 20: the JSON written beside the PNG shows exactly the tiles of `cplab run --plan-only --trace`
at that step, each tile's coloured cells equal the pairs the reference counted, and the a2a
transposes go the right way. Then three inference steps (issue 37, --kv-cache) against the
definitions written out here: the mask's pairs, the all-to-all's partials, the decode owners.

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


# issue 37: an inference step (--kv-cache), end to end, against the definitions written out here (not
# the reference's code): the T x (P+T) mask's pairs counted from the rule, the all-to-all's partials
# sized from their rows, the decode layout's owners from position mod cp
def scene(name, args):
    png, js = os.path.join(out, name + ".png"), os.path.join(out, name + ".scene.json")
    subprocess.run(["xvfb-run", "-a", viz, "--headless", *args, "--out", png, "--scene-json", js], check=True, capture_output=True)
    return json.load(open(js))


def spans_list(spans):
    return [b + i * st for b, c, st in spans for i in range(c)]


before = failures
P, T, W = [24, 40], [8, 12], 5  # two requests; causal with a window of 5
s = scene("infer_masks", ["--view", "masks", "--kv-cache", "24,40", "--cu-seqlens", "0,8,20", "--cp", "4", "--mode", "pass-q",
                          "--window", str(W)])
want = sum(1 for p, t in zip(P, T) for i in range(p, p + t) for j in range(p + t) if j <= i and i - W < j)
mask = [x for x in s["tiles"] if x["panel"] == "mask"]
if len(mask) != 1 or mask[0]["pairs"] != want or abs(mask[0]["drawn_pairs"] - want) > 1e-3:
    fail("infer_masks", f"the mask panel shows {[(x['pairs'], x['drawn_pairs']) for x in mask]}, the rule gives {want} pairs")
tiles = [x for x in s["tiles"] if x["panel"] == "tiles"]
if sum(x["pairs"] for x in tiles) != want or any(abs(x["drawn_pairs"] - x["pairs"]) > 1e-3 for x in tiles):
    fail("infer_masks", f"the tiles cover {sum(x['pairs'] for x in tiles)} pairs, the rule gives {want}")
if failures == before:
    print(f"ok infer_masks: {want} pairs in the mask and in {len(tiles)} tiles")

before = failures  # pass-Q's closing all-to-all: every rank sends each owner its 2 rows of partials (8 heads x (64 + 1) floats)
s = scene("infer_a2a", ["--view", "ring", "--kv-cache", "24", "--seq", "8", "--cp", "4", "--mode", "pass-q", "--step", "4"])
msgs = sorted((m["sender"], m["receiver"], m["op"], m["bytes"]) for m in s["messages"])
want = sorted((r, j, "all_to_all", 2 * 8 * 65 * 4) for r in range(4) for j in range(4) if r != j)
if msgs != want:
    fail("infer_a2a", f"messages drawn {msgs[:3]}... are not the 12 partials of {2 * 8 * 65 * 4} bytes")
if s["tiles"]:
    fail("infer_a2a", "the all-to-all step draws tiles")
if failures == before:
    print(f"ok infer_a2a: {len(msgs)} messages of {2 * 8 * 65 * 4} bytes")

before = failures  # decode: cache token p of a request on rank p mod 4, its new token (position P) on rank P mod 4
P = [40, 41, 42, 43]
s = scene("infer_decode", ["--view", "ownership", "--kv-cache", "40,41,42,43", "--cu-seqlens", "0,1,2,3,4", "--cp", "4",
                           "--mode", "decode-ag", "--cache-layout", "interleaved"])
koff = [sum(p + 1 for p in P[:b]) for b in range(len(P))]
for rec in s["tokens"]:
    r = rec["rank"]
    if rec["layout"] == "cache":
        want = [koff[b] + p for b in range(len(P)) for p in range(P[b]) if p % 4 == r]
    else:
        want = [koff[b] + P[b] for b in range(len(P)) if P[b] % 4 == r]
    if spans_list(rec["spans"]) != want:
        fail("infer_decode", f"rank {r}'s {rec['layout']} tokens {spans_list(rec['spans'])[:6]}... are not {want[:6]}...")
if len(s["tokens"]) != 8:
    fail("infer_decode", f"{len(s['tokens'])} token records, 8 expected (cache and new per rank)")
if failures == before:
    print("ok infer_decode: every rank's cache and new tokens by position mod cp")
sys.exit(1 if failures else 0)
