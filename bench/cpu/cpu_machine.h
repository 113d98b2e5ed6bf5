// cpu_machine.h: the hardware a CPU benchmark ran on, read from /proc/cpuinfo, for its report.
//
// What it is: the CPU model name, the logical CPUs, the vector extensions the CPU offers (sse4_2, avx,
// avx2, fma, avx512f) and those this build compiled for (what Eigen uses), and gemm.h's backend
// (OpenBLAS picks its kernels at run time: its "core" is the one it chose here).
// What it is not: a topology or frequency probe (a shared or throttled machine shows only in the
// GEMM peak measured beside the results).
#pragma once

#include <string>

namespace cplab::cpubench {

struct Machine {
  std::string cpu = "unknown";  // /proc/cpuinfo "model name"
  int logical_cpus = 0;         // "processor" entries
  std::string cpu_simd;         // of sse4_2 avx avx2 fma avx512f, those the CPU has
  std::string build_simd;       // what this build's Eigen code uses
  std::string gemm;             // gemm.h gemm_backend()
  int omp_threads = 0;          // omp_get_max_threads()
};

Machine this_machine();

}  // namespace cplab::cpubench
