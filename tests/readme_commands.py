#!/usr/bin/env python3
"""readme_commands.py: every `$ cplab ...` command the README shows runs as written and prints the
first line the README quotes under it.

Usage: readme_commands.py README.md BIN_DIR...   (BIN_DIRs hold cplab / cplab-viz; they go first on
PATH, as scripts/main.sh's install into /usr/local/bin puts them there for a user)
The README's commands are written for a user's shell after scripts/main.sh: `cplab` on PATH. A
command that fails, or whose first output line differs from the README's, fails the test with both.
The lessons' commands are checked by tutorials/check_lesson.py.
"""
import os
import subprocess
import sys

readme, bins = sys.argv[1], sys.argv[2:]
env = dict(os.environ, PATH=os.pathsep.join(bins + [os.environ.get("PATH", "")]), OMP_NUM_THREADS="2")
lines = open(readme, encoding="utf-8").read().split("\n")
failures, ran = [], 0
for i, line in enumerate(lines):
    if not line.startswith("$ cplab"):
        continue
    cmd = line[2:].strip()
    expect = lines[i + 1].rstrip() if i + 1 < len(lines) else ""
    p = subprocess.run(cmd, shell=True, env=env, capture_output=True, text=True, timeout=300)
    ran += 1
    first = p.stdout.split("\n", 1)[0].rstrip()
    if p.returncode != 0:
        failures.append(f"README line {i + 1}: `{cmd}` exited {p.returncode}:\n{p.stderr.strip()}")
    elif first != expect:
        failures.append(f"README line {i + 1}: `{cmd}` prints\n  {first}\nbut the README quotes\n  {expect}")
if ran == 0:
    failures.append(f"{readme}: no `$ cplab` command found (the test would check nothing)")
for f in failures:
    print("FAIL:", f)
print(f"readme_commands: {ran} commands run, {len(failures)} failed")
sys.exit(1 if failures else 0)
