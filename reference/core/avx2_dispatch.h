// avx2_dispatch.h: compile a plain loop twice, for baseline x86-64 and for AVX2, and pick one at
// run time.
//
// What it is: CPLAB_X86 is defined on x86-64 with GCC/Clang; CPLAB_AVX2 marks a function to be
// compiled for AVX2 (without FMA, so a * b + c is not contracted and both variants round alike);
// cpu_has_avx2() and cpu_has_avx2_fma() say whether this CPU runs AVX2 (and FMA) code. Elsewhere
// the mark is empty and both are false.
// What it is not: hand-written intrinsics (core/row_kernels.cpp has those, with FMA, behind
// CPLAB_X86 and cpu_has_avx2_fma()).
#pragma once

#if defined(__x86_64__) && defined(__GNUC__)
#define CPLAB_X86 1
#define CPLAB_AVX2 __attribute__((target("avx2")))
namespace cplab {
inline bool cpu_has_avx2() {
  static const bool yes = (__builtin_cpu_init(), __builtin_cpu_supports("avx2"));
  return yes;
}
inline bool cpu_has_avx2_fma() {
  static const bool yes = cpu_has_avx2() && __builtin_cpu_supports("fma");
  return yes;
}
}  // namespace cplab
#else
#define CPLAB_AVX2
namespace cplab {
inline bool cpu_has_avx2() { return false; }
inline bool cpu_has_avx2_fma() { return false; }
}  // namespace cplab
#endif
