#!/usr/bin/env python3
"""output_sets_check.py: one run's outputs are one set, also under concurrency and kills (ctest `output_sets`).

Usage: python3 output_sets_check.py PATH/TO/cplab SCRATCH_DIR [PAIRS]

Issue 39's cases, in a few seconds:
- PAIRS (300) pairs of `cplab run --out-dir SAME` with seeds 11 and 22 started at once: every folder
  then holds the five files of one of the two runs, byte for byte, never a mix (the commit holds a
  lock on the folder: core/output_file.h), and no temporary file;
- SIGTERM and SIGINT while the outputs are staged (the run held at its commit by a --trace FIFO that
  nobody reads): the process ends by the signal, its temporary files are gone, the old outputs stay;
- SIGKILL at the same point leaves temporary files: the next run into the folder removes them and
  says so on stderr; a temporary file of a live process is left alone.
The same seq-16 run is used throughout: the smallest that writes every gradient, so that 600 runs
take a few seconds on 2 cores (the race does not depend on the size: only the commits overlap).
"""
import os
import signal
import stat
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor

CPLAB, SCRATCH = sys.argv[1], sys.argv[2]
PAIRS = int(sys.argv[3]) if len(sys.argv) > 3 else 300
os.makedirs(SCRATCH, exist_ok=True)
SANITIZER = ("runtime error:", "AddressSanitizer", "LeakSanitizer", "UndefinedBehaviorSanitizer")
FILES = ["o.npy", "lse.npy", "dq.npy", "dk.npy", "dv.npy"]
RUN = ["run", "--cp", "2", "--seq", "16", "--heads", "2", "--kv-heads", "1", "--head-dim", "8", "--backward"]
failures = []
t_start = time.monotonic()


def path(*p):
    return os.path.join(SCRATCH, *p)


def fresh(d):
    os.makedirs(d, exist_ok=True)
    for n in os.listdir(d):
        f = os.path.join(d, n)
        if os.path.isfile(f) or os.path.islink(f) or stat.S_ISFIFO(os.lstat(f).st_mode):
            os.remove(f)
    return d


def run(argv, **kw):
    return subprocess.run([CPLAB, *argv], capture_output=True, text=True, timeout=120, **kw)


def temps(d):
    return sorted(n for n in os.listdir(d) if ".cplab-tmp-" in n)


def contents(d):
    out = {}
    for n in FILES:
        with open(os.path.join(d, n), "rb") as f:
            out[n] = f.read()
    return out


# ---- the two runs' outputs, each alone ----------------------------------------------------------------
ref = {}
for seed in (11, 22):
    d = fresh(path(f"ref{seed}"))
    p = run([*RUN, "--seed", str(seed), "--out-dir", d])
    if p.returncode != 0:
        sys.exit(f"output_sets_check: the reference run of seed {seed} failed: {p.stderr}")
    ref[seed] = contents(d)
if ref[11]["o.npy"] == ref[22]["o.npy"]:
    sys.exit("output_sets_check: seeds 11 and 22 give the same O: the test could not tell the runs apart")


# ---- PAIRS pairs at once into one folder each -------------------------------------------------------
def pair(i):
    d = fresh(path("pairs", str(i)))
    procs = [subprocess.Popen([CPLAB, *RUN, "--seed", str(s), "--out-dir", d], stdout=subprocess.DEVNULL,
                              stderr=subprocess.PIPE, text=True) for s in (11, 22)]
    errs = [p.communicate(timeout=120)[1] for p in procs]
    why = [f"seed {s}: exit {p.returncode}: {e.strip()[:300]}" for s, p, e in zip((11, 22), procs, errs)
           if p.returncode != 0 or any(x in e for x in SANITIZER)]
    got = contents(d)
    whose = [s for s in (11, 22) if got == ref[s]]
    if not whose:
        mixed = {n: [s for s in (11, 22) if got[n] == ref[s][n]] for n in FILES}
        why.append(f"a mixed set: file -> the seed it came from: {mixed}")
    if temps(d):
        why.append(f"temporary files left: {temps(d)}")
    return f"[pair {i}] " + "; ".join(why) if why else None


with ThreadPoolExecutor(max_workers=4) as ex:
    failures += [w for w in ex.map(pair, range(PAIRS)) if w]
t_pairs = time.monotonic() - t_start


# ---- a run held at its commit: the --trace FIFO is opened for reading but never read -----------------
def held_run(d, extra=()):
    """a run whose outputs are staged in d and that blocks writing --trace to a FIFO; returns (process,
    the FIFO's read end) once its temporary files are there"""
    fifo = path("trace.fifo")
    if os.path.exists(fifo):
        os.remove(fifo)
    os.mkfifo(fifo)
    rd = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)  # a reader exists: the writer's open succeeds, its write blocks
    # cp 8, seq 64: a trace of ~80 KB, more than a pipe holds
    p = subprocess.Popen([CPLAB, "run", "--cp", "8", "--seq", "64", "--backward", "--out-dir", d, "--trace", fifo, *extra],
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 30
    while len(temps(d)) < len(FILES) and time.monotonic() < deadline and p.poll() is None:
        time.sleep(0.01)
    time.sleep(0.05)  # it is now in the commit, writing the FIFO
    return p, rd


KNOWN = b"known bytes of an existing output\n"
for name, sig in (("SIGTERM", signal.SIGTERM), ("SIGINT", signal.SIGINT)):
    d = fresh(path("killed_" + name))
    for n in FILES:
        with open(os.path.join(d, n), "wb") as f:
            f.write(KNOWN)
    p, rd = held_run(d)
    if len(temps(d)) < len(FILES):
        failures.append(f"[{name}] the run did not stage its outputs (exit {p.poll()}): {temps(d)}")
    p.send_signal(sig)
    try:
        p.wait(timeout=30)
    except subprocess.TimeoutExpired:
        p.kill()
        failures.append(f"[{name}] the run did not end on {name}")
    os.close(rd)
    if p.returncode != -sig:
        failures.append(f"[{name}] the run ended with {p.returncode}, not by {name} ({-sig})")
    if temps(d):
        failures.append(f"[{name}] temporary files left after {name}: {temps(d)}")
    if any(open(os.path.join(d, n), "rb").read() != KNOWN for n in FILES):
        failures.append(f"[{name}] an existing output changed although the run was killed before its commit")

# SIGKILL cannot be caught: the next run into the folder removes what it left, and says so
d = fresh(path("killed_SIGKILL"))
p, rd = held_run(d)
left = temps(d)
p.kill()
p.wait()
os.close(rd)
if len(left) < len(FILES):
    failures.append(f"[SIGKILL] the run did not stage its outputs: {left}")
alive = os.path.join(d, f".o.npy.cplab-tmp-{os.getpid()}-abcdef")  # this script's: a live process
with open(alive, "w") as f:
    f.write("in use")
q = run([*RUN, "--out-dir", d])
if q.returncode != 0:
    failures.append(f"[SIGKILL] the next run failed: {q.stderr}")
if temps(d) != [os.path.basename(alive)]:
    failures.append(f"[SIGKILL] after the next run the temporary files are {temps(d)}, expected only the live process's")
for n in left:
    if n not in q.stderr or "removed the stale temporary file" not in q.stderr:
        failures.append(f"[SIGKILL] the next run did not say it removed {n}: {q.stderr.strip()[:500]}")
os.remove(alive)

elapsed = time.monotonic() - t_start
print(f"output_sets_check: {PAIRS} concurrent pairs in {t_pairs:.1f} s, kill cases, {elapsed:.1f} s in all; "
      f"{len(failures)} failed")
for f in failures[:20]:
    print("FAIL " + f)
sys.exit(1 if failures else 0)
