// test_dtype.cpp: host conversions to fp16 / bf16 (dtype.h): exact bit patterns, round to nearest
// even at halfway points, overflow to inf, fp16 subnormals, NaN, and a sweep against the rule
// "the nearest representable value" computed independently in double.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <tuple>

#include "core/dtype.h"
#include "core/error.h"

using namespace cplab;

namespace {
std::uint16_t bits(double x, DType t) {
  const auto b = to_dtype({x}, t);
  std::uint16_t h;
  std::memcpy(&h, b.data(), 2);
  return h;
}
// every finite value of a 16-bit type, from its bits, by the format's definition (no shared code)
double decode(std::uint16_t h, int exp_bits, int man_bits) {
  const int bias = (1 << (exp_bits - 1)) - 1;
  const int e = (h >> man_bits) & ((1 << exp_bits) - 1), m = h & ((1 << man_bits) - 1);
  const double s = (h >> 15) ? -1.0 : 1.0;
  if (e == 0) return s * std::ldexp(m, 1 - bias - man_bits);
  return s * std::ldexp(1.0 + std::ldexp(m, -man_bits), e - bias);
}
}  // namespace

TEST_CASE("dtype: exact patterns, ties to even, overflow, subnormals, NaN") {
  CHECK(bits(1.0, DType::bf16) == 0x3F80);
  CHECK(bits(1.0, DType::f16) == 0x3C00);
  CHECK(bits(-2.0, DType::f16) == 0xC000);
  CHECK(bits(65504.0, DType::f16) == 0x7BFF);
  CHECK(bits(65519.0, DType::f16) == 0x7BFF);
  CHECK(bits(65520.0, DType::f16) == 0x7C00);  // halfway to 65536: to even = inf
  CHECK(bits(1.0 + std::ldexp(1.0, -11), DType::f16) == 0x3C00);      // halfway, even stays
  CHECK(bits(1.0 + 3 * std::ldexp(1.0, -11), DType::f16) == 0x3C02);  // halfway, odd rounds up
  CHECK(bits(1.0 + std::ldexp(1.0, -8), DType::bf16) == 0x3F80);       // bf16 halfway, even stays
  CHECK(bits(1.0 + 3 * std::ldexp(1.0, -8), DType::bf16) == 0x3F82);
  CHECK(bits(std::ldexp(1.0, -24), DType::f16) == 0x0001);  // smallest subnormal
  CHECK(bits(std::ldexp(1.0, -25), DType::f16) == 0x0000);  // halfway to 0: even
  CHECK(bits(std::ldexp(1.0, -14), DType::f16) == 0x0400);  // smallest normal
  CHECK(bits(1e300, DType::bf16) == 0x7F80);
  CHECK(std::isnan(round_to(std::nan(""), DType::f16)));
  CHECK(std::isnan(round_to(std::nan(""), DType::bf16)));
  CHECK(round_to(0.1, DType::f32) == static_cast<double>(0.1f));
  CHECK(parse_dtype("bf16") == DType::bf16);
  CHECK_THROWS_WITH_AS(parse_dtype("fp8"), "dtype 'fp8' is not one of: fp32, fp16, bf16", Error);
}

TEST_CASE("dtype: every rounding is to the nearest representable value (ties to even)") {
  std::mt19937_64 rng(5);
  std::uniform_real_distribution<double> mant(-1.0, 1.0);
  std::uniform_int_distribution<int> ex(-26, 15);
  for (auto [t, eb, mb] : {std::tuple{DType::f16, 5, 10}, std::tuple{DType::bf16, 8, 7}}) {
    for (int it = 0; it < 20000; ++it) {
      const auto x = static_cast<double>(static_cast<float>(std::ldexp(mant(rng), ex(rng))));  // a float: no double rounding
      const std::uint16_t h = bits(x, t);
      const double y = decode(h, eb, mb);
      CAPTURE(x);
      CHECK(round_to(x, t) == y);
      // neighbours: no representable value is closer; at a tie the mantissa is even
      const double up = decode(static_cast<std::uint16_t>(h + 1), eb, mb), dn = decode(static_cast<std::uint16_t>(h - 1), eb, mb);
      if ((h & 0x7FFF) != 0 && (h & 0x7FFF) < (t == DType::f16 ? 0x7BFF : 0x7F7F)) {
        CHECK(std::abs(x - y) <= std::abs(x - up));
        CHECK(std::abs(x - y) <= std::abs(x - dn));
        if (std::abs(x - y) == std::abs(x - up) || std::abs(x - y) == std::abs(x - dn)) CHECK((h & 1) == 0);
      }
    }
  }
}
