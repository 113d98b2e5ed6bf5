// interrupt.cpp: Interrupted's message and the OpenMP test of interrupt.h (the flag itself is inline
// there, so that a point costs one relaxed load).
#include "core/interrupt.h"

#include <omp.h>

namespace cplab {

const char* Interrupted::what() const noexcept { return "interrupted"; }

// omp_get_level(), not omp_in_parallel(): a region of one thread (OMP_NUM_THREADS=1) is inactive, so
// omp_in_parallel() is false there, yet an exception must not leave it either
bool interruptible_here() { return omp_get_level() == 0; }

}  // namespace cplab
