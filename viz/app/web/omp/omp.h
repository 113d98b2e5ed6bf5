// omp.h (browser build only): the OpenMP queries cplab calls, answered for one thread.
//
// What it is: WebAssembly has no OpenMP runtime, so the browser build of cplab-viz (viz/app/web/,
// scripts/web.sh) compiles the reference without -fopenmp; its `#pragma omp` lines are then ignored
// and the few runtime queries it makes (reference/core/interrupt.cpp, run/memory_estimate.cpp,
// infer/infer_limits.cpp, app/cmd_schedule.cpp) get these answers: one thread, never inside a
// parallel region. The results are the same as a native run with OMP_NUM_THREADS=1.
// What it is not: an OpenMP implementation; the native builds use the compiler's own omp.h.
#pragma once

inline int omp_get_max_threads() { return 1; }
inline int omp_get_num_threads() { return 1; }
inline int omp_get_thread_num() { return 0; }
inline int omp_get_level() { return 0; }
inline int omp_in_parallel() { return 0; }
