#!/usr/bin/env python3
"""make_readmes.py: refresh the program output quoted in every lesson's README.

Usage: make_readmes.py BUILD_DIR [LESSON ...]   (BUILD_DIR/tutorials/<lesson> are the programs)
Rewrites the fenced block after each `<!-- output: step N -->` / `<!-- output: end -->` marker with
that section of the program's output (check_lesson.py explains the sections). Prose is untouched:
write numbers in prose only where they are quoted from these blocks.
"""
import os
import re
import subprocess
import sys

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, here)
from lesson_output import sections  # noqa: E402
build = sys.argv[1]
names = sys.argv[2:] or sorted(d for d in os.listdir(here) if re.match(r"\d\d_", d))
for name in names:
    prog = os.path.join(build, "tutorials", name)
    out = subprocess.run([prog], capture_output=True, text=True, check=True).stdout
    parts = {str(k): v for k, v in sections(out).items()}
    path = os.path.join(here, name, "README.md")
    text = open(path).read()

    def fill(m):
        which = m.group(1)
        key = "end" if which == "end" else which.split()[1]
        if key not in parts:
            raise SystemExit(f"{name}: README quotes {which}, which the program does not print")
        return f"<!-- output: {which} -->\n```text\n{parts[key]}\n```"

    new = re.sub(r"<!-- output: (step \d+|end) -->\s*```text\n.*?```", fill, text, flags=re.S)
    if new != text:
        open(path, "w").write(new)
        print(f"{name}: README updated")
