#!/usr/bin/env python3
"""gpu_results_ctest.py: what scripts/gpu-results.sh's diagnose call needs to know of a ctest run.

  gpu_results_ctest.py failures LOG        one line per failed test of a `ctest --output-on-failure` log:
                                           TEST<TAB>CASE, CASE the first doctest case that failed in that
                                           test's output (empty when none is named: a crash, a time-out)
  gpu_results_ctest.py command BDIR TEST   the test's command as ctest would run it (its ENVIRONMENT first,
                                           as `env K=V ...`), one argument per line, read from
                                           `ctest --show-only=json-v1`
  gpu_results_ctest.py programs BDIR ARGS  each test that `ctest ARGS` selects in BDIR and the programs it
                                           runs (its command, expect_exit.cmake's -DEXE=, a build-folder
                                           path in its arguments, as for mpiexec), built or NOT BUILT;
                                           exit 1 when one is missing or nothing is selected

What it is not: a test runner (ctest runs the tests; this reads its output and its test list).
"""
import json
import os
import re
import subprocess
import sys

# ctest's line for a finished test: "  3/12 Test  #7: cuda_tests_v3 ....***Failed   12.3 sec"
END = re.compile(r"^\s*\d+/\d+ Test +#\d+: (\S+) \.*.*?(\*\*\*|\s)(\w[\w ]*?)\s+[\d.]+ sec")
CASE = re.compile(r"^TEST CASE:\s+(.*\S)")
SUMMARY = re.compile(r"^\s+\d+ - (\S+) \((.*)\)$")
BAD = ("Failed", "Timeout", "Exception", "SEGFAULT", "Subprocess aborted", "Not Run", "Child aborted")


def failures(log: str) -> list[tuple[str, str]]:
    """The failed tests, in the order ctest's summary lists them, each with its first failing case."""
    first_case: dict[str, str] = {}
    current = None  # the test whose --output-on-failure text follows its end line
    failed: list[str] = []
    in_summary = False
    for line in log.splitlines():
        m = END.match(line)
        if m:
            name, status = m.group(1), m.group(3).strip()
            current = name if any(status.startswith(b) for b in BAD) else None
            continue
        if line.startswith("The following tests FAILED"):
            in_summary, current = True, None
            continue
        if in_summary:
            m = SUMMARY.match(line)
            if m and not m.group(2).startswith("Skipped"):
                failed.append(m.group(1))
            continue
        m = CASE.match(line)
        if m and current and current not in first_case:
            first_case[current] = m.group(1)
    return [(t, first_case.get(t, "")) for t in failed]


def selected(bdir: str, args: list[str]) -> list[dict]:
    out = subprocess.run(["ctest", "--test-dir", bdir, *args, "--show-only=json-v1"],
                         check=True, capture_output=True, text=True).stdout
    return json.loads(out)["tests"]


def programs(bdir: str, args: list[str]) -> int:
    tests, missing = selected(bdir, args), 0
    for t in tests:
        cmd = t.get("command") or ["?"]
        progs = [cmd[0]] + [a[6:] for a in cmd if a.startswith("-DEXE=")]
        progs += [a for a in cmd[1:] if a.startswith(bdir.rstrip("/") + "/") and not a.endswith((".json", ".cmake"))]
        ok = all(os.path.isfile(p) for p in progs)
        missing += not ok
        print(f"`{t['name']}` runs `{', '.join(os.path.basename(p) for p in progs)}`: {'built' if ok else 'NOT BUILT'}")
    print(f"{len(tests)} tests selected, {missing} with a program missing")
    return 1 if missing or not tests else 0


def command(bdir: str, test: str) -> list[str]:
    tests = [t for t in selected(bdir, ["-R", "^" + re.escape(test) + "$"]) if t["name"] == test]
    if not tests:
        raise SystemExit(f"gpu_results_ctest: no test named {test} in {bdir}")
    t = tests[0]
    env = []
    for p in t.get("properties", []):
        if p.get("name") == "ENVIRONMENT":
            env = list(p["value"])
    return (["env"] + env if env else []) + list(t["command"])


def main() -> int:
    if len(sys.argv) == 3 and sys.argv[1] == "failures":
        with open(sys.argv[2], encoding="utf-8", errors="replace") as f:
            for test, case in failures(f.read()):
                print(f"{test}\t{case}")
        return 0
    if len(sys.argv) == 4 and sys.argv[1] == "command":
        print("\n".join(command(sys.argv[2], sys.argv[3])))
        return 0
    if len(sys.argv) >= 3 and sys.argv[1] == "programs":
        return programs(sys.argv[2], sys.argv[3:])
    print("usage: gpu_results_ctest.py failures LOG | command BDIR TEST | programs BDIR CTEST_ARGS...", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
