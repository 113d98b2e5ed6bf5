// dtype.cpp: DType names and host conversions (see dtype.h). Bit-exact round to nearest even.
#include "core/dtype.h"

#include <cmath>
#include <cstring>

#include "core/error.h"

namespace cplab {

namespace {

// std::bit_cast, which the browser build's libc++ (emscripten 3.1.6) lacks
template <class To, class From>
To bit_cast(const From& f) {
  static_assert(sizeof(To) == sizeof(From));
  To t;
  std::memcpy(&t, &f, sizeof t);
  return t;
}

std::uint16_t f32_to_bf16(float f) {
  std::uint32_t u = bit_cast<std::uint32_t>(f);
  if ((u & 0x7FFFFFFFu) > 0x7F800000u) return static_cast<std::uint16_t>((u >> 16) | 0x0040u);  // NaN stays NaN (quiet)
  u += 0x7FFFu + ((u >> 16) & 1u);  // round to nearest even; overflow carries into inf
  return static_cast<std::uint16_t>(u >> 16);
}

float bf16_to_f32(std::uint16_t h) { return bit_cast<float>(static_cast<std::uint32_t>(h) << 16); }

std::uint16_t f32_to_f16(float f) {
  std::uint32_t x = bit_cast<std::uint32_t>(f);
  const auto sign = static_cast<std::uint16_t>((x >> 16) & 0x8000u);
  x &= 0x7FFFFFFFu;
  if (x > 0x7F800000u) return sign | 0x7E00u;                 // NaN
  if (x >= 0x477FF000u) return sign | 0x7C00u;                // >= 65520 (and inf): inf
  if (x < 0x38800000u) {                                      // below 2^-14: a subnormal half or 0
    const float q = bit_cast<float>(x) * 16777216.0f;    // in units of 2^-24, exact
    return static_cast<std::uint16_t>(sign | static_cast<std::uint16_t>(std::nearbyint(q)));  // 1024 = 2^-14, normal
  }
  std::uint32_t u = x - (112u << 23);        // rebias the exponent (127 -> 15)
  u += 0xFFFu + ((u >> 13) & 1u);            // round 23 -> 10 mantissa bits to nearest even
  return static_cast<std::uint16_t>(sign | (u >> 13));
}

float f16_to_f32(std::uint16_t h) {
  const std::uint32_t sign = (static_cast<std::uint32_t>(h) & 0x8000u) << 16;
  const std::uint32_t e = (h >> 10) & 0x1Fu, m = h & 0x3FFu;
  if (e == 0) {  // zero or subnormal: m * 2^-24
    const float v = static_cast<float>(m) * 5.9604644775390625e-8f;
    return bit_cast<float>(bit_cast<std::uint32_t>(v) | sign);
  }
  if (e == 31) return bit_cast<float>(sign | 0x7F800000u | (m << 13));  // inf / NaN
  return bit_cast<float>(sign | ((e + 112u) << 23) | (m << 13));
}

}  // namespace

std::string to_string(DType t) {
  switch (t) {
    case DType::f32: return "fp32";
    case DType::f16: return "fp16";
    case DType::bf16: return "bf16";
  }
  return "?";
}

DType parse_dtype(const std::string& s) {
  if (s == "f32" || s == "fp32") return DType::f32;
  if (s == "f16" || s == "fp16") return DType::f16;
  if (s == "bf16") return DType::bf16;
  throw Error("dtype '" + s + "' is not one of: fp32, fp16, bf16");
}

std::size_t dtype_size(DType t) { return t == DType::f32 ? 4 : 2; }

std::vector<std::byte> to_dtype(const std::vector<double>& x, DType t) {
  std::vector<std::byte> out(x.size() * dtype_size(t));
  for (size_t i = 0; i < x.size(); ++i) {
    const auto f = static_cast<float>(x[i]);
    if (t == DType::f32) {
      std::memcpy(out.data() + 4 * i, &f, 4);
    } else {
      const std::uint16_t h = t == DType::f16 ? f32_to_f16(f) : f32_to_bf16(f);
      std::memcpy(out.data() + 2 * i, &h, 2);
    }
  }
  return out;
}

std::vector<double> from_dtype(const std::vector<std::byte>& bytes, DType t) {
  std::vector<double> out(bytes.size() / dtype_size(t));
  from_dtype(bytes.data(), out.size(), t, out.data());
  return out;
}

void from_dtype(const std::byte* bytes, std::size_t n, DType t, double* out) {
  for (size_t i = 0; i < n; ++i) {
    if (t == DType::f32) {
      float f;
      std::memcpy(&f, bytes + 4 * i, 4);
      out[i] = f;
    } else {
      std::uint16_t h;
      std::memcpy(&h, bytes + 2 * i, 2);
      out[i] = t == DType::f16 ? f16_to_f32(h) : bf16_to_f32(h);
    }
  }
}

double round_to(double x, DType t) { return from_dtype(to_dtype({x}, t), t)[0]; }

template <class T>
void round_in_place(T* x, std::size_t n, DType t) {
  for (std::size_t i = 0; i < n; ++i) {
    const auto f = static_cast<float>(x[i]);
    x[i] = static_cast<T>(t == DType::f32 ? f : t == DType::f16 ? f16_to_f32(f32_to_f16(f)) : bf16_to_f32(f32_to_bf16(f)));
  }
}
template void round_in_place<float>(float*, std::size_t, DType);
template void round_in_place<double>(double*, std::size_t, DType);

}  // namespace cplab
