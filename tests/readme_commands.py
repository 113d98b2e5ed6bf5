#!/usr/bin/env python3
"""readme_commands.py: every `$ cplab ...` command the README and the manual (docs/*.md) show runs as
written and prints the first line the page quotes under it.

Usage: readme_commands.py SOURCE_DIR BIN_DIR...   (the pages: SOURCE_DIR/README.md and
SOURCE_DIR/docs/*.md; BIN_DIRs hold cplab / cplab-viz; they go first on PATH, as scripts/main.sh's
install into /usr/local/bin puts them there for a user)
The pages' commands are written for a user's shell after scripts/main.sh: `cplab` on PATH. A
command that fails, or whose first output line differs from the page's, fails the test with both.
The lessons' commands are checked by tutorials/check_lesson.py, `cplab check`'s worked example
(docs/check.md) by check_cli.py.
"""
import glob
import os
import subprocess
import sys

source, bins = sys.argv[1], sys.argv[2:]
env = dict(os.environ, PATH=os.pathsep.join(bins + [os.environ.get("PATH", "")]), OMP_NUM_THREADS="2")
pages = [os.path.join(source, "README.md")] + sorted(glob.glob(os.path.join(source, "docs", "*.md")))
failures, ran = [], 0
for page in pages:
    name = os.path.relpath(page, source)
    lines = open(page, encoding="utf-8").read().split("\n")
    for i, line in enumerate(lines):
        if not line.startswith("$ cplab"):
            continue
        cmd = line[2:].strip()
        expect = lines[i + 1].rstrip() if i + 1 < len(lines) else ""
        p = subprocess.run(cmd, shell=True, env=env, capture_output=True, text=True, timeout=300)
        ran += 1
        first = p.stdout.split("\n", 1)[0].rstrip()
        if p.returncode != 0:
            failures.append(f"{name} line {i + 1}: `{cmd}` exited {p.returncode}:\n{p.stderr.strip()}")
        elif first != expect:
            failures.append(f"{name} line {i + 1}: `{cmd}` prints\n  {first}\nbut the page quotes\n  {expect}")
if ran == 0:
    failures.append(f"{source}: no `$ cplab` command found in README.md or docs/*.md (the test would check nothing)")
for f in failures:
    print("FAIL:", f)
print(f"readme_commands: {ran} commands run from {len(pages)} pages, {len(failures)} failed")
sys.exit(1 if failures else 0)
