// omp_policy.cpp: passive_omp_wait (see omp_policy.h).
#include "core/omp_policy.h"

#include <unistd.h>
#include <cstdlib>

namespace cplab {

void passive_omp_wait(char** argv) {
  if (std::getenv("OMP_WAIT_POLICY") != nullptr) return;  // the user's choice, or already re-executed
  if (setenv("OMP_WAIT_POLICY", "PASSIVE", 1) != 0) return;
  execv("/proc/self/exe", argv);  // returns only on failure: carry on with the runtime's default
}

}  // namespace cplab
