// dtype.h: the element types cplab's CUDA kernels take, and host conversions to and from them.
//
// What it is: DType (f32, f16, bf16), its name and size, and to_dtype / from_dtype, which turn
// host doubles into the raw bytes of a device array of that type (double -> float, then round to
// nearest even as __float2half_rn / __float2bfloat16_rn do; overflow to inf, subnormal halves
// kept) and back. Plain C++ (no CUDA headers), so the CPU-only build tests it and the reference
// can round its inputs exactly as the GPU will see them.
// What it is not: device code (kernels convert with cuda_fp16.h / cuda_bf16.h intrinsics), or a
// tensor type (shapes are documented where the arrays are used).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace cplab {

enum class DType : int { f32 = 0, f16 = 1, bf16 = 2 };

std::string to_string(DType t);
DType parse_dtype(const std::string& s);  // "f32" | "fp32" | "f16" | "fp16" | "bf16", else throws cplab::Error
std::size_t dtype_size(DType t);          // bytes per element

// x rounded to t, as the bytes of a device array (x.size() * dtype_size(t) bytes)
std::vector<std::byte> to_dtype(const std::vector<double>& x, DType t);
// the values of a host copy of a device array of type t (bytes.size() / dtype_size(t) elements)
std::vector<double> from_dtype(const std::vector<std::byte>& bytes, DType t);
// the same for n elements at bytes (n * dtype_size(t) bytes, any alignment), written to out[0, n)
void from_dtype(const std::byte* bytes, std::size_t n, DType t, double* out);
// x rounded to t and back: what the kernels actually see of x
double round_to(double x, DType t);
// the n elements at x rounded to t and back, in place (each through float, as round_to): what a
// buffer holds after a kernel stores it in t (T: float or double)
template <class T>
void round_in_place(T* x, std::size_t n, DType t);

}  // namespace cplab
