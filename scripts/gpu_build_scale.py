#!/usr/bin/env python3
"""gpu_build_scale.py: scale a build measured in CPU seconds per job to a machine with more cores.

    python3 scripts/gpu_build_scale.py JOBS.tsv CORES [TOTAL_CPU_S]

JOBS.tsv: one line per compile or link job, "output<TAB>user s<TAB>sys s<TAB>wall s" (written by
scripts/gpu-build-measure.sh's launcher). A job whose output ends in .o is a compile, any other a
link. TOTAL_CPU_S: the whole build's CPU seconds (ninja, cmake and archiving included), if known.

The scaling assumption, stated once: every job takes on the target machine the CPU seconds it took
here (same per-core speed, one core per job, no ccache), and the target's CORES cores are free.
Then with W = the jobs' CPU seconds summed and L = the longest compile plus the longest link (a
chain no schedule can beat: an executable links after its objects), the build's wall time T on
CORES cores satisfies
    max(W / CORES, L)  <=  T  <=  W / CORES + L        (Graham's bound for any list schedule,
                                                        which is what ninja's scheduler is)
and the upper bound is the figure to plan with. Work outside the jobs (TOTAL_CPU_S - W: ninja,
cmake's dependency scans, ar) is added to W when TOTAL_CPU_S is given.
What it is not: a measurement of the target machine; a faster or slower core scales T with it.
"""
import sys


def main():
    if len(sys.argv) not in (3, 4):
        print(__doc__.split("\n\n")[1], file=sys.stderr)
        return 2
    path, cores = sys.argv[1], int(sys.argv[2])
    if cores < 1:
        print(f"gpu_build_scale: CORES {cores} must be >= 1", file=sys.stderr)
        return 2
    jobs = []
    with open(path) as f:
        for line in f:
            parts = line.rstrip("\n").split("\t")
            if len(parts) != 4:
                continue  # /usr/bin/time's own notes ("Command exited with non-zero status")
            out, user, sys_s, wall = parts[0], float(parts[1]), float(parts[2]), float(parts[3])
            jobs.append((out, user + sys_s, wall))
    if not jobs:
        print(f"gpu_build_scale: no jobs in {path}", file=sys.stderr)
        return 1
    compiles = [j for j in jobs if j[0].endswith(".o")]
    links = [j for j in jobs if not j[0].endswith(".o")]
    w_jobs = sum(j[1] for j in jobs)
    total = float(sys.argv[3]) if len(sys.argv) == 4 else w_jobs
    w = max(total, w_jobs)
    longest_c = max((j[1] for j in compiles), default=0.0)
    longest_l = max((j[1] for j in links), default=0.0)
    chain = longest_c + longest_l
    lower, upper = max(w / cores, chain), w / cores + chain
    print(f"- jobs: {len(compiles)} compiles, CPU {sum(j[1] for j in compiles):.1f} s; "
          f"{len(links)} links, CPU {sum(j[1] for j in links):.1f} s; the rest of the build "
          f"(ninja, cmake, ar): {w - w_jobs:.1f} s")
    print(f"- assumption: each job takes the CPU seconds there that it took here (same per-core speed, one "
          f"core per job, no ccache) and the {cores} cores are free; ninja runs a ready job whenever a core is idle")
    print(f"- W = {w:.1f} CPU s; longest compile {longest_c:.1f} s + longest link {longest_l:.1f} s = L = {chain:.1f} s")
    print(f"- on {cores} cores: max(W/{cores}, L) = {lower:.1f} s <= build wall <= W/{cores} + L = {upper:.1f} s "
          f"(the upper bound: Graham's for any list schedule; plan with it)")
    print()
    print("The ten longest jobs (CPU s = user + sys; wall s on this busy machine):")
    print()
    print("| job output | CPU s | wall s |")
    print("| --- | ---: | ---: |")
    for out, cpu, wall in sorted(jobs, key=lambda j: -j[1])[:10]:
        print(f"| `{out}` | {cpu:.1f} | {wall:.1f} |")
    print()
    print(f"BUILD_UPPER_S={upper:.0f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
