"""_env.py: the environment cplab's C++ runtimes read once, when the module loads.

What it is: prepare(), called by cplab/__init__.py before it imports the C++ module. The `cplab`
programs set the same two variables (reference/core/runtime_env.h) and re-execute themselves; an
interpreter cannot, so this sets them before OpenBLAS and OpenMP load, when the user has not:
  - OPENBLAS_CORETYPE: Debian 12's OpenBLAS 0.3.21 takes a CPU model it does not know (e.g. Intel
    Emerald Rapids) for a generic "Prescott" and runs its SSE3 kernels, 3-5x slower. On a CPU with
    AVX-512 (F, DQ, BW, VL) this sets SkylakeX, with AVX2 and FMA Haswell: the kernels OpenBLAS
    itself uses on every such CPU it knows (its newer cores reuse them for float and double GEMM).
  - OMP_WAIT_POLICY=PASSIVE: OpenMP threads sleep instead of spinning between parallel regions.
`cplab.gemm_backend()` says which kernels ran (the `products:` line of `cplab run`).
What it is not: a thread-count policy (OMP_NUM_THREADS decides), or anything that works once
OpenBLAS is loaded (import cplab before a library that loads the same OpenBLAS, or set the
variable yourself).
"""
import os


def _cpu_flags():
    try:
        with open("/proc/cpuinfo", encoding="ascii", errors="replace") as f:
            for line in f:
                if line.startswith("flags"):
                    return set(line.split(":", 1)[1].split())
    except OSError:
        pass
    return set()


def prepare():
    if "OPENBLAS_CORETYPE" not in os.environ:
        flags = _cpu_flags()
        if {"avx512f", "avx512dq", "avx512bw", "avx512vl"} <= flags:
            os.environ["OPENBLAS_CORETYPE"] = "SkylakeX"
        elif {"avx2", "fma"} <= flags:
            os.environ["OPENBLAS_CORETYPE"] = "Haswell"
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
