// runtime_env.cpp: prepare_runtime and blas_core_note (see runtime_env.h).
#include "core/runtime_env.h"

#include <unistd.h>

#include <cstdlib>
#include <cstring>

#ifdef CPLAB_HAVE_OPENBLAS
#include <cblas.h>
#endif

namespace cplab {

namespace {

// set by prepare_runtime beside OPENBLAS_CORETYPE: the kernels OpenBLAS had chosen itself
constexpr const char* k_detected = "CPLAB_OPENBLAS_DETECTED";

// the kernels to ask OpenBLAS for, or nullptr to leave its choice
const char* better_blas_core() {
#if defined(CPLAB_HAVE_OPENBLAS) && (defined(__x86_64__) || defined(__i386__))
  if (std::strcmp(openblas_get_corename(), "Prescott") != 0) return nullptr;  // OpenBLAS knows this CPU
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq") &&
      __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl"))
    return "SkylakeX";
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return "Haswell";
#endif
  return nullptr;
}

}  // namespace

void prepare_runtime(char** argv) {
  bool changed = false;
  if (std::getenv("OMP_WAIT_POLICY") == nullptr && setenv("OMP_WAIT_POLICY", "PASSIVE", 1) == 0) changed = true;
  if (std::getenv("OPENBLAS_CORETYPE") == nullptr) {
    if (const char* core = better_blas_core()) {
#ifdef CPLAB_HAVE_OPENBLAS
      if (setenv(k_detected, openblas_get_corename(), 1) == 0 && setenv("OPENBLAS_CORETYPE", core, 1) == 0)
        changed = true;
#endif
    }
  }
  if (changed) execv("/proc/self/exe", argv);  // returns only on failure: carry on as loaded
}

std::string blas_core_note() {
  const char* detected = std::getenv(k_detected);
  const char* core = std::getenv("OPENBLAS_CORETYPE");
  if (detected == nullptr || core == nullptr) return "";
  return std::string("(OPENBLAS_CORETYPE=") + core + " set by cplab: OpenBLAS took this CPU for a " + detected + ")";
}

}  // namespace cplab
