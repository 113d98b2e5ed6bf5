// hd.h: CPLAB_HD, the marker of functions shared by host C++ and CUDA device code.
//
// What it is: __host__ __device__ under nvcc, nothing under a plain C++ compiler, so the one
// definition of a layout, mask or softmax rule in reference/ compiles into the CPU reference and
// into the CUDA kernels alike.
// What it is not: a portability layer (such functions use only arithmetic and the C math functions
// both sides have: exp/expf, log1p/log1pf, ...).
#pragma once

#if defined(__CUDACC__)
#define CPLAB_HD __host__ __device__
#else
#define CPLAB_HD
#endif
