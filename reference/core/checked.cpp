// checked.cpp: checked 64-bit arithmetic and strict parsing of user numbers (checked.h).
#include "core/checked.h"

#include <charconv>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "core/error.h"

namespace cplab {

namespace {

std::string str(std::string_view s) { return std::string(s); }

std::string range_text(std::int64_t lo, std::int64_t hi) {
  if (hi == kInt64Max && lo == std::numeric_limits<std::int64_t>::min()) return "the 64-bit range";
  if (hi == kInt64Max) return "[" + std::to_string(lo) + ", 2^63 - 1]";
  return "[" + std::to_string(lo) + ", " + std::to_string(hi) + "]";
}

std::string real_text(double x) {
  char b[64];
  std::snprintf(b, sizeof b, "%.17g", x);
  return b;
}

// at most 40 characters of user text in a message (a fuzzer's megabyte stays out of the terminal)
std::string quoted(std::string_view s) {
  return "'" + (s.size() <= 40 ? str(s) : str(s.substr(0, 37)) + "...") + "'";
}

}  // namespace

std::int64_t mul_checked(std::int64_t a, std::int64_t b, std::string_view what) {
  std::int64_t r = 0;
  if (__builtin_mul_overflow(a, b, &r))
    throw Error(str(what) + ": " + std::to_string(a) + " x " + std::to_string(b) + " overflows 64-bit integers");
  return r;
}

std::int64_t parse_int(std::string_view text, std::string_view what, std::int64_t lo, std::int64_t hi) {
  std::string_view t = text;
  if (!t.empty() && t.front() == '+') t.remove_prefix(1);  // "+4" is 4; "+-4", " 4" are not numbers
  std::int64_t v = 0;
  const auto [end, ec] = std::from_chars(t.data(), t.data() + t.size(), v);
  const bool whole = !t.empty() && ec == std::errc() && end == t.data() + t.size() && t.front() != '+';
  if (ec == std::errc::result_out_of_range)
    throw Error(str(what) + " " + quoted(text) + " is out of range: it must be an integer in " + range_text(lo, hi));
  if (!whole) throw Error(str(what) + " " + quoted(text) + " is not an integer (it must be in " + range_text(lo, hi) + ")");
  if (v < lo || v > hi) throw Error(str(what) + " " + std::to_string(v) + " is out of range: it must be in " + range_text(lo, hi));
  return v;
}

double parse_real(std::string_view text, std::string_view what, double lo, double hi) {
  // strtod, not from_chars (libstdc++ 12 has it, but strtod's grammar is what users type: 1e-3, .5)
  const std::string s(text);
  char* end = nullptr;
  const double v = s.empty() || std::isspace(static_cast<unsigned char>(s.front())) ? NAN : std::strtod(s.c_str(), &end);
  if (s.empty() || end != s.c_str() + s.size() || std::isnan(v))
    throw Error(str(what) + " " + quoted(text) + " is not a number");
  if (!std::isfinite(v)) throw Error(str(what) + " " + quoted(text) + " is not finite (inf and NaN are refused)");
  if (v < lo || v > hi)
    throw Error(str(what) + " " + real_text(v) + " is out of range: it must be in [" + real_text(lo) + ", " + real_text(hi) + "]");
  return v;
}

std::int64_t json_int(const nlohmann::json& v, std::string_view what, std::int64_t lo, std::int64_t hi) {
  const std::string rule = "it must be an integer in " + range_text(lo, hi);
  if (v.is_number_integer() && !v.is_number_unsigned()) {
    const std::int64_t x = v.get<std::int64_t>();
    if (x < lo || x > hi) throw Error(str(what) + " = " + std::to_string(x) + " is out of range: " + rule);
    return x;
  }
  if (v.is_number_unsigned()) {
    const std::uint64_t x = v.get<std::uint64_t>();
    if (x > static_cast<std::uint64_t>(hi) || (lo > 0 && x < static_cast<std::uint64_t>(lo)))
      throw Error(str(what) + " = " + std::to_string(x) + " is out of range: " + rule);
    return static_cast<std::int64_t>(x);
  }
  if (v.is_number_float()) {
    const double x = v.get<double>();
    if (std::isfinite(x) && x == std::floor(x) && std::abs(x) < 9007199254740992.0) {  // integral and exact (< 2^53)
      const auto i = static_cast<std::int64_t>(x);
      if (i < lo || i > hi) throw Error(str(what) + " = " + real_text(x) + " is out of range: " + rule);
      return i;
    }
    throw Error(str(what) + " = " + real_text(x) + " is not an integer: " + rule);
  }
  throw Error(str(what) + " is a JSON " + v.type_name() + ", not a number: " + rule);
}

double json_real(const nlohmann::json& v, std::string_view what, double lo, double hi) {
  if (!v.is_number()) throw Error(str(what) + " is a JSON " + v.type_name() + ", not a number");
  const double x = v.get<double>();
  if (!std::isfinite(x)) throw Error(str(what) + " is not finite");
  if (x < lo || x > hi)
    throw Error(str(what) + " = " + real_text(x) + " is out of range: it must be in [" + real_text(lo) + ", " + real_text(hi) + "]");
  return x;
}

std::string read_text_file(const std::string& path, std::string_view what, std::int64_t max_bytes) {
  namespace fs = std::filesystem;
  const std::string who = str(what) + " " + path;
  std::error_code ec;
  const fs::file_status st = fs::status(path, ec);
  if (ec || !fs::exists(st)) throw Error(who + ": no such file");
  if (fs::is_directory(st)) throw Error(who + ": is a directory, not a file");
  if (!fs::is_regular_file(st)) throw Error(who + ": is not a regular file");
  const std::uintmax_t n = fs::file_size(path, ec);
  if (ec) throw Error(who + ": cannot read its size (" + ec.message() + ")");
  if (n > static_cast<std::uintmax_t>(max_bytes))
    throw Error(who + ": is " + std::to_string(n) + " bytes, more than the " + std::to_string(max_bytes) +
                "-byte limit for this kind of file");
  std::ifstream f(path, std::ios::binary);
  if (!f) throw Error(who + ": cannot open for reading");
  std::ostringstream s;
  s << f.rdbuf();
  if (f.bad()) throw Error(who + ": read error");
  return s.str();
}

}  // namespace cplab
