"""lesson_output.py: a lesson program's output cut into its sections (check_lesson.py, make_readmes.py).

sections(out) -> {N: the text of step N, from its "== Step N: ..." header to the line before the next
header, "end": the closing "== See it, try it ==" section}, each without leading/trailing blank lines.
"""
import re


def sections(out):
    parts, cur, key = {}, [], None
    for line in out.splitlines():
        m = re.match(r"^== Step (\d+): ", line)
        if m or line.startswith("== See it, try it =="):
            if key is not None:
                parts[key] = "\n".join(cur).strip("\n")
            key, cur = (int(m.group(1)) if m else "end"), []
        if key is not None:
            cur.append(line)
    if key is not None:
        parts[key] = "\n".join(cur).strip("\n")
    return parts
