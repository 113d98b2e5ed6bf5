// checked.h: THE checked-integer path of cplab: every size, count and product that comes from user
// input (options, JSON fields, .npy headers) is parsed and combined here, so that no value wraps,
// is clamped or is silently truncated before a rule can refuse it.
//
// What it is:
//   mul_checked                 64-bit products that throw cplab::Error naming what overflowed
//                               instead of wrapping (signed overflow is UB in C++)
//   parse_int                   a whole decimal integer in [lo, hi] (no sign games, no fraction, no
//                               trailing text, no clamping of 99999999999999999999999)
//   parse_real                  a finite decimal number in [lo, hi] (inf and NaN refused)
//   json_int / json_real        the same rules for a JSON value (1.5, 1e30, "3", true refused as
//                               an integer; NaN cannot appear in JSON, non-numbers are refused)
//   read_text_file              a regular file read whole, at most max_bytes (a directory, a
//                               device or a huge file is refused with the path and the rule)
// Every message names `what` (an option such as "--cp", or "file.json: lengths[3]") and the rule.
// What it is not: a range policy. The limits of each quantity (cp <= 256, ...) are where the rules
// live (modes/cp_spec.h, layout/layout.h, dcp/, plan/); this file only makes sure those checks see
// the number the user wrote.
#pragma once

#include <cstdint>
#include <limits>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <string_view>

namespace cplab {

inline constexpr std::int64_t kInt64Max = std::numeric_limits<std::int64_t>::max();

// a * b, or cplab::Error("<what>: <a> x <b> overflows 64-bit integers")
std::int64_t mul_checked(std::int64_t a, std::int64_t b, std::string_view what);

// text as a whole decimal integer in [lo, hi], or cplab::Error("<what> <text> is not an integer in [lo, hi]")
std::int64_t parse_int(std::string_view text, std::string_view what, std::int64_t lo = 0,
                       std::int64_t hi = kInt64Max);

// text as a finite number in [lo, hi], or cplab::Error naming what, the text and the rule
double parse_real(std::string_view text, std::string_view what, double lo = -std::numeric_limits<double>::max(),
                  double hi = std::numeric_limits<double>::max());

// a JSON value that must be an integer in [lo, hi] (a float with a fraction, or outside the range,
// or a string / bool / null, is refused); `what` names the file and the field
std::int64_t json_int(const nlohmann::json& v, std::string_view what, std::int64_t lo = 0,
                      std::int64_t hi = kInt64Max);

// a JSON value that must be a finite number in [lo, hi]
double json_real(const nlohmann::json& v, std::string_view what, double lo = -std::numeric_limits<double>::max(),
                 double hi = std::numeric_limits<double>::max());

// the whole text of a regular file of at most max_bytes; `what` says what the file is for ("--dist")
std::string read_text_file(const std::string& path, std::string_view what, std::int64_t max_bytes = 64 << 20);

}  // namespace cplab
