// runtime_env.h: the environment that cplab's programs give the OpenMP and OpenBLAS runtimes, which
// read it once, when the program loads.
//
// What it is: prepare_runtime(argv), called first in main() of every cplab program (cplab,
// cplab-viz, the benchmarks, the test binaries). It decides two variables and, if it set either,
// re-executes the program once (/proc/self/exe, same arguments), because both runtimes have read
// the environment before main() starts:
//   - OMP_WAIT_POLICY=PASSIVE: OpenMP threads that finish a parallel region early spin (busy-wait)
//     for the others by default; on a machine also running other work (a build, a second tool)
//     those spinning threads take the cores the working ones need, and small runs pay the spin on
//     every region (measured: a 42-token run 0.09 s against 0.00 s). With PASSIVE they sleep.
//   - OPENBLAS_CORETYPE: Debian 12's OpenBLAS (0.3.21) picks its kernels from the CPU's model number
//     and, for a model it does not know, falls back to its generic "Prescott" (SSE3) kernels even
//     when the CPU has AVX-512. Seen on an Intel Xeon of family 6, model 207 (Emerald Rapids): the
//     2-thread double GEMM ran at 31 GFLOP/s with Prescott and 149 GFLOP/s with SkylakeX kernels.
//     When OpenBLAS reports Prescott on a CPU that has AVX-512 (F, DQ, BW, VL), this sets SkylakeX;
//     with AVX2 and FMA only, Haswell. A CPU that OpenBLAS recognises is left to OpenBLAS.
// A variable the user has set is respected (and OMP_NUM_THREADS is never touched). Results do not
// depend on any of this: the reference parallelises over heads and row blocks, each computed by one
// thread, and the oracle's double products agree to rounding whichever kernels run them.
// blas_core_note() says what prepare_runtime chose, for gemm_backend()'s line.
// What it is not: a thread-count policy (OMP_NUM_THREADS chooses; the default is the cores), nor a
// way to change kernels inside a running process (OpenBLAS has none).
#pragma once

#include <string>

namespace cplab {

// returns only when nothing needed setting, or the re-execution failed (then nothing changes)
void prepare_runtime(char** argv);

// "" when OpenBLAS chose its own kernels; else "(OPENBLAS_CORETYPE=SkylakeX set by cplab: OpenBLAS
// took this CPU for a Prescott)"
std::string blas_core_note();

}  // namespace cplab
