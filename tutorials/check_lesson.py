#!/usr/bin/env python3
"""check_lesson.py: run one tutorial program and check it (a ctest test per lesson).

What it checks:
  1. `PROGRAM` runs straight through (no arguments) and exits 0;
  2. every line of LESSON_DIR/expect.txt (blank lines and '#' comments aside) appears as a whole
     line of its output: the lesson's key numbers, asserted;
  3. every README block marked `<!-- output: step N -->` (the fenced block right after the marker)
     equals step N's output now (from its "== Step N:" header to the line before the next header),
     and `<!-- output: end -->` the closing "== See it, try it ==" section: the README's numbers are
     the program's, not retyped (regenerate them with make_readmes.py);
  4. `PROGRAM --interactive` with one Enter per step piped in prints a pause before every step but
     the first, and with stdin closed it still finishes (never waits forever);
  5. the lesson is listed in order in tutorials/README.md and in the project's README;
  6. every command the lesson ends with works: `cplab ...` runs with CPLAB and exits 0,
     `cplab-viz ...` builds one frame with CPLAB_VIZ (--bench-frames 1, no display needed) if given.
Usage: check_lesson.py PROGRAM LESSON_DIR CPLAB [CPLAB_VIZ]
What it is not: the lesson (the program prints everything; this only compares).
"""
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from lesson_output import sections  # noqa: E402

prog, lesson_dir, cplab = sys.argv[1], sys.argv[2], sys.argv[3]
cplab_viz = sys.argv[4] if len(sys.argv) > 4 else None
failures = []


def run(args, stdin=""):
    return subprocess.run([prog] + args, input=stdin, capture_output=True, text=True, timeout=300)


p = run([])
if p.returncode != 0:
    print(f"FAIL: {prog} exited {p.returncode}\n{p.stdout}\n{p.stderr}")
    sys.exit(1)
out = p.stdout
lines = set(l.rstrip() for l in out.splitlines())
expect = os.path.join(lesson_dir, "expect.txt")
for want in open(expect).read().splitlines():
    if want.strip() and not want.startswith("#") and want.rstrip() not in lines:
        failures.append(f"expected line not printed: {want!r}")

parts = sections(out)
readme = open(os.path.join(lesson_dir, "README.md")).read()
blocks = re.findall(r"<!-- output: (step \d+|end) -->\s*```text\n(.*?)```", readme, re.S)
if not blocks:
    failures.append("README.md quotes no program output (<!-- output: step N --> blocks)")
for which, text in blocks:
    key = "end" if which == "end" else int(which.split()[1])
    if key not in parts:
        failures.append(f"README quotes {which}, which the program does not print")
    elif text.strip("\n") != parts[key]:
        failures.append(f"README's {which} differs from the program's output (run tutorials/make_readmes.py)")

nsteps = len([k for k in parts if k != "end"])
p = run(["--interactive"], "\n" * (nsteps + 2))
pauses = p.stdout.count("[press Enter for step ")
if p.returncode != 0 or pauses != nsteps - 1:
    failures.append(f"--interactive with Enter piped: exit {p.returncode}, {pauses} pauses for {nsteps} steps")
p = run(["--interactive"], "")
if p.returncode != 0 or "== See it, try it ==" not in p.stdout:
    failures.append(f"--interactive with stdin closed: exit {p.returncode}, did not finish")

# the lesson is listed, in order, in tutorials/README.md and in the project's README
tut_dir = os.path.dirname(os.path.abspath(lesson_dir))
name = os.path.basename(os.path.abspath(lesson_dir))
for index_path, prefix in [(os.path.join(tut_dir, "README.md"), ""), (os.path.join(tut_dir, "..", "README.md"), "tutorials/")]:
    index = open(index_path).read()
    if prefix:  # the project README: its "## Tutorials" section (the map table links lessons too)
        start = index.find("## Tutorials")
        index = index[start:index.find("\n## ", start + 1)] if start >= 0 else ""
    at = index.find(f"({prefix}{name}/README.md)")
    if at < 0:
        failures.append(f"{os.path.relpath(index_path)} does not list {name}")
        continue
    earlier = [m.start() for m in re.finditer(r"\(" + prefix + r"(\d\d)_[a-z0-9_]+/README\.md\)", index) if m.group(1) < name[:2]]
    if any(e > at for e in earlier):
        failures.append(f"{os.path.relpath(index_path)} lists {name} before an earlier lesson")

import shlex
for line in parts.get("end", "").splitlines()[1:]:
    cmd = shlex.split(line.split("   (")[0].strip())
    if not cmd:
        continue
    if cmd[0] == "cplab":
        q = subprocess.run([cplab] + cmd[1:], capture_output=True, text=True, timeout=300)
    elif cmd[0] == "cplab-viz":
        if cplab_viz is None:
            continue
        q = subprocess.run([cplab_viz] + cmd[1:] + ["--bench-frames", "1"], capture_output=True, text=True, timeout=300)
    else:
        failures.append(f"the lesson ends with a command that is neither cplab nor cplab-viz: {line.strip()}")
        continue
    if q.returncode != 0:
        failures.append(f"`{line.strip()}` exits {q.returncode}: {q.stderr.strip()[:300]}")

if failures:
    print("\n".join("FAIL: " + f for f in failures))
    sys.exit(1)
print(f"{os.path.basename(lesson_dir)}: {nsteps} steps, {len(open(expect).read().split())} expected tokens, README blocks match")
