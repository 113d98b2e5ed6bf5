// avx2_dispatch.h: compile a plain loop twice, for baseline x86-64 and for AVX2, and pick one at
// run time.
//
// What it is: CPLAB_AVX2 marks a function to be compiled for AVX2 (without FMA, so a * b + c is
// not contracted and both variants round alike); cpu_has_avx2() says whether this CPU runs it.
// Off x86-64 (or without GCC/Clang) the mark is empty and cpu_has_avx2() is false.
// What it is not: hand-written intrinsics (core/row_kernels.cpp has those, with FMA).
#pragma once

#if defined(__x86_64__) && defined(__GNUC__)
#define CPLAB_AVX2 __attribute__((target("avx2")))
namespace cplab {
inline bool cpu_has_avx2() {
  static const bool yes = (__builtin_cpu_init(), __builtin_cpu_supports("avx2"));
  return yes;
}
}  // namespace cplab
#else
#define CPLAB_AVX2
namespace cplab {
inline bool cpu_has_avx2() { return false; }
}  // namespace cplab
#endif
