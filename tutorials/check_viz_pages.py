#!/usr/bin/env python3
"""check_viz_pages.py: the lessons' cplab-viz pages (viz_pages.json) against the lesson programs.

What it checks, for every lesson (ctest `tutorial_viz_pages`, labels tutorial and viz):
  1. viz_pages.json lists the lessons of tutorials/ in order (folder, number), each titled as its
     README's heading and its program's first line, with 1 to 3 pages;
  2. every page's explanation is plain ASCII of a readable length, and every number it quotes is one
     the lesson prints: each entry of `numbers` and `lesson_only` is in the text and in the program's
     output, and so is every other number in the text (tests/test_viz_lessons.cpp checks that the
     view shows `numbers` and does not show `lesson_only`; the number rule is the same there);
  3. the program's closing cplab-viz commands are exactly the pages' (`cplab-viz --lesson N` first,
     then one per page with its title), so the printed commands and the app's pages cannot drift;
  4. with CPLAB_VIZ and PNG_CHECK: every printed cplab-viz command renders headless (--headless
     --out, under the X server this script runs in: ctest starts it with xvfb-run), and so does
     `cplab-viz --lesson N --page K` for every page, each PNG checked by png_check.
Usage: check_viz_pages.py VIZ_PAGES_JSON LESSON_BIN_DIR [CPLAB_VIZ PNG_CHECK OUT_DIR]
What it is not: check_lesson.py (each lesson's own output, README and commands).
"""
import json
import os
import re
import shlex
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from lesson_output import sections  # noqa: E402

pages_json, bin_dir = sys.argv[1], sys.argv[2]
cplab_viz, png_check, out_dir = (sys.argv[3:6] + [None, None, None])[:3]
here = os.path.dirname(os.path.abspath(__file__))
failures = []


def appears(text, number):
    """number occurs in text as a whole number (the rule of tests/test_viz_lessons.cpp): no digit,
    letter or '.' right before it (if it starts with a digit), none right after it (if it ends with
    one), except trailing zeros after a decimal point ("176.5" is in "176.50")."""
    for m in re.finditer(re.escape(number), text):
        a, e = m.start(), m.end()
        if number[0].isdigit() and a > 0 and (text[a - 1].isalnum() or text[a - 1] == "."):
            continue
        if not number[-1].isdigit() or e == len(text):
            return True
        point = "." in number
        if not point and text[e] == "." and e + 1 < len(text) and text[e + 1].isdigit():
            point, e = True, e + 1
        if point:
            while e < len(text) and text[e] == "0":
                e += 1
        if e == len(text) or not (text[e].isalnum() or (text[e] == "." and e + 1 < len(text) and text[e + 1].isdigit())):
            return True
    return False


# a number in an explanation: 576, 6.333, 1.11022e-16 (not the digits inside words such as a2a, s0, 8x4)
NUMBER = re.compile(r"(?<![\w.])\d+(?:\.\d+)?(?:e-?\d+)?(?![\w]|\.\d)")

data = json.load(open(pages_json))
lessons = data["lessons"]
dirs = sorted(d for d in os.listdir(here) if re.match(r"\d\d_", d) and os.path.exists(os.path.join(here, d, "lesson.cpp")))
if [l["dir"] for l in lessons] != dirs:
    failures.append(f"viz_pages.json lists {[l['dir'] for l in lessons]}, tutorials/ has {dirs}")
renders = 0
for i, l in enumerate(lessons):
    n, name = l["lesson"], l["dir"]
    if n != i + 1:
        failures.append(f"{name}: numbered {n}, listed {i + 1}th")
    heading = open(os.path.join(here, name, "README.md")).readline().rstrip("\n")
    if heading != "# " + l["title"]:
        failures.append(f"{name}: title {l['title']!r}, its README's heading {heading!r}")
    p = subprocess.run([os.path.join(bin_dir, name)], capture_output=True, text=True, timeout=300)
    if p.returncode != 0:
        failures.append(f"{name}: the program exits {p.returncode}: {p.stderr.strip()[:300]}")
        continue
    out = p.stdout
    if out.splitlines()[0] != l["title"]:
        failures.append(f"{name}: the program's title {out.splitlines()[0]!r} is not {l['title']!r}")
    if not 1 <= len(l["pages"]) <= 3:
        failures.append(f"{name}: {len(l['pages'])} pages (1 to 3)")
    expected = [f"cplab-viz --lesson {n}   (" + ("the view below" if len(l["pages"]) == 1 else "the views below") +
                " with explanations, in the app)"]
    for k, pg in enumerate(l["pages"], 1):
        where = f"{name} page {k}"
        text = " ".join(pg["text"])
        expected.append(f"cplab-viz {pg['args']}   ({pg['title']})")
        if not text.isascii() or not pg["title"].isascii():
            failures.append(f"{where}: title and text must be plain ASCII (ImGui's default font)")
        if not 150 <= len(text) <= 900:
            failures.append(f"{where}: the explanation has {len(text)} characters (150 to 900: 3 to 8 lines)")
        marked = pg.get("numbers", []) + pg.get("lesson_only", [])
        if set(pg.get("numbers", [])) & set(pg.get("lesson_only", [])):
            failures.append(f"{where}: a number is both shown and lesson_only")
        for num in marked:
            if not appears(text, num):
                failures.append(f"{where}: {num!r} is marked but not in the explanation")
            if not appears(out, num):
                failures.append(f"{where}: {num!r} is quoted but {name} does not print it")
        for m in NUMBER.finditer(text):
            if not appears(out, m.group()):
                failures.append(f"{where}: the explanation quotes {m.group()}, which {name} does not print")
    printed = [line.strip().split("   (")[0] for line in sections(out).get("end", "").splitlines()[1:]]
    printed_full = [line.strip() for line in sections(out).get("end", "").splitlines()[1:] if line.strip().startswith("cplab-viz")]
    if printed_full != expected:
        failures.append(f"{name}: prints the cplab-viz commands {printed_full}, viz_pages.json gives {expected}")
    if cplab_viz and png_check:
        runs = [shlex.split(c)[1:] for c in printed if c.startswith("cplab-viz ")]
        runs += [["--lesson", str(n), "--page", str(k)] for k in range(1, len(l["pages"]) + 1)]
        for args in runs:
            png = os.path.join(out_dir, f"lesson{n}_{renders}.png")
            renders += 1
            q = subprocess.run([cplab_viz] + args + ["--headless", "--size", "960x600", "--out", png],
                               capture_output=True, text=True, timeout=300)
            if q.returncode != 0:
                failures.append(f"`cplab-viz {' '.join(args)}` headless exits {q.returncode}: {q.stderr.strip()[:300]}")
                continue
            c = subprocess.run([png_check, png, "960", "600"], capture_output=True, text=True)
            if c.returncode != 0:
                failures.append(f"`cplab-viz {' '.join(args)}`: {c.stdout.strip()} {c.stderr.strip()}")

if failures:
    print("\n".join("FAIL: " + f for f in failures))
    sys.exit(1)
pages = sum(len(l["pages"]) for l in lessons)
print(f"viz_pages.json: {len(lessons)} lessons, {pages} pages: numbers printed by the lessons, commands as printed, "
      f"{renders} headless renders checked")
