#!/usr/bin/env python3
"""gpu_scripts_check.py: the GPU run's plan and its ctest reader, checked without a GPU (ctest gpu_results_plan).

  gpu_scripts_check.py SOURCE_DIR CMAKE CTEST

- `bash scripts/gpu-results.sh --dry-run --plan-only`: exit 0; call 1's step limits, summed here from its
  table, equal the sum the script prints and fit the 360 s call less its 25 s reserve; call 2's plans when
  nothing failed and for an example failure on the warm machine fit its 240 s less the reserve.
- The same with the call's limit lowered (CPLAB_GPU_CALL1_LIMIT=300): exit 1 and "**OVER**" (the check bites).
- Bad usage refused with exit 2 and the rule named.
- scripts/gpu_results_ctest.py on a real ctest run of a small project (a pass, a doctest-style failure
  whose case name holds a comma, a skip, a time-out, a crash): the failed tests and first cases it
  reports, and the command (with ENVIRONMENT) it reads back.
What it is not: a run of the GPU steps (they need a GPU machine: scripts/gpu-results.sh there).
"""
import os
import re
import subprocess
import sys
import tempfile

SRC, CMAKE, CTEST = sys.argv[1], sys.argv[2], sys.argv[3]
SCRIPT = os.path.join(SRC, "scripts", "gpu-results.sh")
failures = []


def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what)
    if not cond:
        failures.append(what)


def run(args, env=None):
    e = dict(os.environ)
    e.update(env or {})
    p = subprocess.run(args, capture_output=True, text=True, env=e, timeout=120)
    return p.returncode, p.stdout + p.stderr


def section(text, title):
    """The table rows and the 'Limits summed' line of the plan headed by '### title'."""
    start = text.index("### " + title)
    end = text.find("\n### ", start + 1)
    end2 = text.find("\n## ", start + 1)
    ends = [e for e in (end, end2) if e != -1]
    body = text[start:min(ends) if ends else len(text)]
    limits = [int(m.group(1)) for m in re.finditer(r"^\| [^|]+ \| `[a-z0-9_]+` \| (\d+) \|", body, re.M)]
    m = re.search(r"Limits summed: (\d+) s", body)
    return limits, int(m.group(1)) if m else None


# ---- the plan
rc, out = run(["bash", SCRIPT, "--dry-run", "--plan-only"])
check(rc == 0, f"--dry-run --plan-only exits 0 (got {rc})")
limits, said = section(out, "Call 1's steps")
check(len(limits) >= 12, f"call 1 plans at least 12 steps ({len(limits)})")
check(said == sum(limits), f"call 1: the sum printed ({said}) is the table's ({sum(limits)})")
check(sum(limits) <= 360 - 25, f"call 1's step limits, {sum(limits)} s, fit 360 s less the 25 s reserve")
check("**OVER**" not in out, "no plan is over its limit")
for title in ("When nothing failed", "Example: `--failed ctest_v3,cp_p2p_v3_fwd` on the warm machine"):
    lim, said2 = section(out, title)
    check(lim and said2 == sum(lim) <= 240 - 25, f"call 2, {title[:40]}: {sum(lim)} s fit 240 s less the reserve")
check("sanitize" in out and "CUDA_LAUNCH_BLOCKING=1" in out, "call 2 reruns with CUDA_LAUNCH_BLOCKING=1 and sanitizes")
rc, out = run(["bash", SCRIPT, "--dry-run", "--plan-only"], {"CPLAB_GPU_CALL1_LIMIT": "300"})
check(rc == 1 and "**OVER**" in out, f"a 300 s call 1 is refused by the dry run (exit {rc})")

# ---- bad usage
for args, text in ((["diagnose", "--failed", "bogus"], "unknown step key 'bogus'"),
                   (["--plan-only"], "--plan-only needs --dry-run"),
                   (["--failed", "ctest_v3"], "--failed belongs to the diagnose phase"),
                   (["diagnose", "--failed", "a;b"], "expected step keys"),
                   (["--bogus"], "unknown option '--bogus'")):
    rc, out = run(["bash", SCRIPT] + args)
    check(rc == 2 and text in out, f"{' '.join(args)}: exit 2 naming '{text}' (exit {rc})")
rc, out = run(["bash", SCRIPT, "call1"], {"CPLAB_GPU_PHASE_LIMIT": "ten"})
check(rc == 2 and "is not a number of seconds" in out, f"CPLAB_GPU_PHASE_LIMIT=ten refused (exit {rc})")

# ---- the ctest reader, on a real ctest run
with tempfile.TemporaryDirectory() as d:
    with open(os.path.join(d, "CMakeLists.txt"), "w") as f:
        f.write("""cmake_minimum_required(VERSION 3.16)
project(p LANGUAGES NONE)
enable_testing()
add_test(NAME passes COMMAND sh -c "echo fine")
add_test(NAME fails_case COMMAND sh -c "echo '==='; echo 'x.cpp:3:'; echo 'TEST CASE:  ring, zigzag v3'; echo 'TEST CASE:  second'; exit 1")
add_test(NAME skips COMMAND sh -c "exit 77")
set_tests_properties(skips PROPERTIES SKIP_RETURN_CODE 77)
add_test(NAME hangs COMMAND sh -c "sleep 20")
set_tests_properties(hangs PROPERTIES TIMEOUT 1)
add_test(NAME crashes COMMAND sh -c "kill -SEGV $$")
add_test(NAME with_env COMMAND sh -c "exit 0" extra)
set_tests_properties(with_env PROPERTIES ENVIRONMENT "A=1;B=two words")
""")
    b = os.path.join(d, "b")
    subprocess.run([CMAKE, "-S", d, "-B", b], check=True, capture_output=True)
    p = subprocess.run([CTEST, "--test-dir", b, "-j", "2", "--output-on-failure"], capture_output=True, text=True)
    log = os.path.join(d, "log")
    with open(log, "w") as f:
        f.write(p.stdout)
    reader = os.path.join(SRC, "scripts", "gpu_results_ctest.py")
    got = subprocess.run([sys.executable, reader, "failures", log], capture_output=True, text=True).stdout
    rows = dict(line.split("\t") for line in got.splitlines())
    check(set(rows) == {"fails_case", "hangs", "crashes"}, f"failed tests read: {sorted(rows)}")
    check(rows.get("fails_case") == "ring, zigzag v3", f"first failing case read: {rows.get('fails_case')!r}")
    check(rows.get("hangs") == "" and rows.get("crashes") == "", "no case for a time-out or a crash")
    got = subprocess.run([sys.executable, reader, "command", b, "with_env"], capture_output=True, text=True,
                         env=dict(os.environ, PATH=os.path.dirname(CTEST) + os.pathsep + os.environ["PATH"])).stdout
    lines = got.splitlines()
    check(lines[:3] == ["env", "A=1", "B=two words"] and len(lines) == 7 and os.path.basename(lines[3]) == "sh"
          and lines[4:] == ["-c", "exit 0", "extra"], f"the command with its environment: {lines}")

print(f"gpu_scripts_check: {len(failures)} failed" if failures else "gpu_scripts_check: all passed")
sys.exit(1 if failures else 0)
