#!/usr/bin/env python3
"""docs_check.py: every link in the README, the manual and the lessons resolves, and nothing in the
tree cites a document a reader of the repository cannot open.

Usage: docs_check.py SOURCE_DIR
1. Links: README.md, docs/*.md, tutorials/README.md, tutorials/*/README.md and the other folders'
   READMEs. Every relative link or image `[text](path)` / `[text](path#anchor)` / `[text](#anchor)`
   outside code must name a file or folder that exists, and an anchor must be a heading of the target
   page as GitHub writes it (lower case, punctuation dropped, spaces to '-', '-1' for a repeat).
   External links (http, https, mailto) are not fetched: no network. A link to the browser build's
   page, site/index.html?lesson=N&page=K (site/ is built by scripts/web.sh, not in the tree), must
   name a page tutorials/viz_pages.json has, and every lesson's README links to its own first page.
2. Citations: no source, doc, script or data file (outside .ci/ and the build folders) cites the
   private notes or seeds the project was started from (the word "notes" before a section number, "seed"
   before a three-digit number, the notes' file names, the folder beside the checkout that holds
   them). Cite the public source or docs/sources.md instead.
3. Counts: every "N lessons" (digits or a word, "16 step-by-step lessons", "Sixteen lessons") in
   README.md and tutorials/README.md is the number of lesson folders (tutorials/NN_*/).
What it is not: a check of the commands the pages quote (readme_commands.py, check_cli.py and the
lessons' check_lesson.py run those).
"""
import glob
import os
import re
import sys

root = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), ".."))
failures = []


# ---- 1. links ---------------------------------------------------------------------------------------
def slug(heading):
    """GitHub's anchor for a heading: its text without markdown, lower case, punctuation dropped."""
    t = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # links and images: their text
    t = t.replace("`", "").replace("*", "")
    t = re.sub(r"<[^>]+>", "", t).strip().lower()
    t = "".join(c for c in t if c.isalnum() or c in "-_ ")
    return t.replace(" ", "-")


def prose(text):
    """The text outside fenced code blocks, line by line (line numbers kept), code spans blanked."""
    out, fence = [], None
    for line in text.split("\n"):
        m = re.match(r"\s*(```+|~~~+)", line)
        if m:
            if fence is None:
                fence = m.group(1)[:3]
            elif m.group(1).startswith(fence):
                fence = None
            out.append("")
            continue
        out.append("" if fence else re.sub(r"`[^`]*`", lambda c: " " * len(c.group(0)), line))
    return out


anchor_cache = {}


def anchors(path):
    if path not in anchor_cache:
        seen, result = {}, set()
        for line in headings(path):
            s = slug(line)
            n = seen.get(s, 0)
            seen[s] = n + 1
            result.add(s if n == 0 else f"{s}-{n}")
        anchor_cache[path] = result
    return anchor_cache[path]


def headings(path):
    """The text of every markdown heading of a page outside fenced code blocks."""
    text, fence = open(path, encoding="utf-8").read(), None
    for line in text.split("\n"):
        m = re.match(r"\s*(```+|~~~+)", line)
        if m:
            fence = m.group(1)[:3] if fence is None else (None if m.group(1).startswith(fence) else fence)
            continue
        if fence is None:
            h = re.match(r"#{1,6}\s+(.*?)\s*#*\s*$", line)
            if h:
                yield h.group(1)


pages = [os.path.join(root, "README.md")] + sorted(glob.glob(os.path.join(root, "docs", "*.md")))
pages += sorted(glob.glob(os.path.join(root, "tutorials", "README.md")))
pages += sorted(glob.glob(os.path.join(root, "tutorials", "*", "README.md")))
pages += [p for p in sorted(glob.glob(os.path.join(root, "*", "README.md"))) if p not in pages]
links = 0
import json  # noqa: E402
viz_lessons = json.load(open(os.path.join(root, "tutorials", "viz_pages.json"), encoding="utf-8"))["lessons"]
site_page = os.path.join(root, "site", "index.html")
for page in pages:
    rel_page = os.path.relpath(page, root)
    for n, line in enumerate(prose(open(page, encoding="utf-8").read()), 1):
        for m in re.finditer(r"\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)", line):
            target = m.group(1)
            if re.match(r"[a-z][a-z0-9+.-]*:", target, re.I):  # http:, https:, mailto:: not fetched
                continue
            links += 1
            path, _, anchor = target.partition("#")
            path, _, query = path.partition("?")
            full = os.path.normpath(os.path.join(os.path.dirname(page), path)) if path else page
            if full == site_page:  # the browser build's page: its lesson and page must exist
                q = dict(part.partition("=")[::2] for part in query.split("&") if part)
                ok = (set(q) == {"lesson", "page"} and q["lesson"].isdigit() and q["page"].isdigit()
                      and 1 <= int(q["lesson"]) <= len(viz_lessons)
                      and 1 <= int(q["page"]) <= len(viz_lessons[int(q["lesson"]) - 1]["pages"]))
                if not ok:
                    failures.append(f"{rel_page}:{n}: link to {target}: not a lesson page of the browser build "
                                    f"(site/index.html?lesson=N&page=K, tutorials/viz_pages.json)")
                continue
            if not os.path.exists(full):
                failures.append(f"{rel_page}:{n}: link to {target}: {os.path.relpath(full, root)} does not exist")
                continue
            if anchor:
                if not full.endswith(".md") or os.path.isdir(full):
                    failures.append(f"{rel_page}:{n}: link to {target}: an anchor into a file that is not markdown")
                elif anchor not in anchors(full):
                    failures.append(f"{rel_page}:{n}: link to {target}: no heading of {os.path.relpath(full, root)} "
                                    f"has the anchor #{anchor}")

for d in sorted(glob.glob(os.path.join(root, "tutorials", "[0-9][0-9]_*"))):
    readme = os.path.join(d, "README.md")
    want = f"../../site/index.html?lesson={int(os.path.basename(d)[:2])}&page=1"
    if os.path.exists(readme) and want not in open(readme, encoding="utf-8").read():
        failures.append(f"{os.path.relpath(readme, root)}: no link to its page in the browser build ({want})")

# ---- 2. citations of private documents -----------------------------------------------------------------
# written so that this file does not match itself
PRIVATE = re.compile("|".join([
    r"notes[ ][0-9\u00a7]",             # the notes' sections
    r"[(]notes",
    r"shared[ ]notes",
    r"seed[ ]0[0-9][0-9]",              # the seeds
    r"[.][.]/shared",                   # the folder beside the checkout
    r"shared/note[s]", r"shared/seed[s]",
    r"\b(performance-)?anchors[.]md", r"dcp-scheduler[.]md", r"te-cp-internals[.]md",
    r"\btoolchain[.]md", r"\bweb-build[.]md",
]))
SKIP_DIRS = {".git", ".ci", ".deps", "out", "__pycache__", "node_modules"}
EXTS = (".cpp", ".h", ".hpp", ".md", ".py", ".cu", ".cuh", ".sh", ".txt", ".json", ".cmake", ".in")
cited = 0
for dirpath, dirnames, filenames in os.walk(root):
    dirnames[:] = sorted(d for d in dirnames if d not in SKIP_DIRS and not (dirpath == root and d.startswith("build")))
    for name in sorted(filenames):
        if not (name.endswith(EXTS) or name == "CMakeLists.txt") and not os.access(os.path.join(dirpath, name), os.X_OK):
            continue
        path = os.path.join(dirpath, name)
        try:
            with open(path, encoding="utf-8") as f:
                text = f.read()
        except (UnicodeDecodeError, OSError):
            continue
        cited += 1
        for n, line in enumerate(text.split("\n"), 1):
            m = PRIVATE.search(line)
            if m:
                failures.append(f"{os.path.relpath(path, root)}:{n}: cites a private document ({m.group(0)!r}): "
                                f"cite the public source or docs/sources.md")

# ---- 3. the lesson count ----------------------------------------------------------------------------------
WORDS = ["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven", "twelve", "thirteen",
         "fourteen", "fifteen", "sixteen", "seventeen", "eighteen", "nineteen", "twenty"]
tut = os.path.join(root, "tutorials")
n_lessons = len([d for d in os.listdir(tut) if re.match(r"\d\d_", d) and os.path.isdir(os.path.join(tut, d))])
COUNT = re.compile(r"\b(\d+|" + "|".join(WORDS) + r")\s+(?:step-by-step\s+)?lessons\b", re.I)
for page in ["README.md", os.path.join("tutorials", "README.md")]:
    for n, line in enumerate(open(os.path.join(root, page)).read().split("\n"), 1):
        for m in COUNT.finditer(line):
            w = m.group(1).lower()
            said = int(w) if w.isdigit() else WORDS.index(w)
            if said != n_lessons:
                failures.append(f"{page}:{n}: says {m.group(0)!r}, tutorials/ has {n_lessons} lessons")

for f in failures:
    print("FAIL:", f)
print(f"docs_check: {len(pages)} pages, {links} relative links; {cited} files searched for private citations; "
      f"{len(failures)} failure(s)")
sys.exit(1 if failures else 0)
