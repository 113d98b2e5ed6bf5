// npy.cpp: the .npy reader and writer declared in npy.h.
//
// What it is: a bounds-checked parser for the .npy preamble (magic, version, header length) and the
// Python-literal header dict {'descr': ..., 'fortran_order': ..., 'shape': (...), } in any key
// order and quoting (npy_read_header: nothing else is read), followed by a size-checked read of the
// raw little-endian data (float32, float16 and bfloat16 converted in chunks by npy_to_double,
// core/dtype.h's exact conversions, so the doubles are the only whole-size buffer); and a writer
// producing version 1.0 files.
// What it is not: a Python literal evaluator. Only the three keys NumPy writes, string / bool /
// int-tuple values, and the float dtypes npy.h lists are accepted.
#include "run/npy.h"

#include <algorithm>
#include <bit>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <ostream>
#include <string_view>

#include "core/alloc.h"
#include "core/checked.h"
#include "core/dtype.h"
#include "core/output_file.h"

namespace cplab {
namespace {

static_assert(std::endian::native == std::endian::little, "npy.cpp assumes a little-endian host");

constexpr char kMagic[] = "\x93NUMPY";  // 6 bytes + NUL
constexpr std::size_t kMagicLen = 6;
constexpr std::uint32_t kMaxHeaderLen = 1u << 20;  // far above anything NumPy writes
constexpr std::size_t kMaxDims = 64;                // NumPy itself allows 32

// A header snippet fit for an error message: printable ASCII kept, the rest as \xNN, long text cut.
std::string printable(std::string_view s) {
  std::string out;
  for (std::size_t i = 0; i < s.size() && i < 40; ++i) {
    auto c = static_cast<unsigned char>(s[i]);
    if (c >= 0x20 && c < 0x7f) {
      out += static_cast<char>(c);
    } else {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", c);
      out += buf;
    }
  }
  return s.size() > 40 ? out + "..." : out;
}

// product of shape (or of shape times itemsize); false on overflow of int64
bool checked_product(const std::vector<std::int64_t>& shape, std::int64_t itemsize, std::int64_t& out) {
  std::int64_t p = itemsize;
  for (std::int64_t d : shape)
    if (d < 0 || __builtin_mul_overflow(p, d, &p)) return false;
  out = p;
  return true;
}

struct Header {
  std::string descr;
  bool fortran_order = false;
  std::vector<std::int64_t> shape;
};

// Recursive-descent parser for the header dict; every failure throws "<path>: malformed header: ...".
class HeaderParser {
 public:
  HeaderParser(std::string_view text, const std::string& path) : s_(text), path_(path) {}

  Header parse() {
    Header h;
    bool seen_descr = false, seen_fortran = false, seen_shape = false;
    skip_ws();
    expect('{', "the header must start with '{'");
    for (;;) {
      skip_ws();
      if (eat('}')) break;
      if (at_end()) fail("it ends before the closing '}'");
      std::string key = parse_string("a quoted key");
      skip_ws();
      expect(':', "expected ':' after key '" + printable(key) + "'");
      skip_ws();
      bool* seen = nullptr;
      if (key == "descr") {
        seen = &seen_descr;
        if (peek() == '[') fail("descr is a list (structured dtypes are not supported)");
        h.descr = parse_string("descr to be a quoted string");
      } else if (key == "fortran_order") {
        seen = &seen_fortran;
        h.fortran_order = parse_bool();
      } else if (key == "shape") {
        seen = &seen_shape;
        h.shape = parse_shape();
      } else {
        fail("unexpected key '" + printable(key) + "' (need exactly descr, fortran_order, shape)");
      }
      if (*seen) fail("key '" + key + "' appears twice");
      *seen = true;
      skip_ws();
      if (eat(',')) continue;
      skip_ws();
      expect('}', "expected ',' or '}' after the value of '" + key + "'");
      break;
    }
    skip_ws();
    if (!at_end()) fail("unexpected text after the closing '}': '" + printable(s_.substr(pos_)) + "'");
    if (!seen_descr) fail("key 'descr' is missing");
    if (!seen_fortran) fail("key 'fortran_order' is missing");
    if (!seen_shape) fail("key 'shape' is missing");
    return h;
  }

 private:
  [[noreturn]] void fail(const std::string& why) const { throw Error(path_ + ": malformed header: " + why); }
  bool at_end() const { return pos_ >= s_.size(); }
  char peek() const { return at_end() ? '\0' : s_[pos_]; }
  void skip_ws() {
    while (!at_end() && (s_[pos_] == ' ' || s_[pos_] == '\t' || s_[pos_] == '\n' || s_[pos_] == '\r')) ++pos_;
  }
  bool eat(char c) {
    if (peek() != c || at_end()) return false;
    ++pos_;
    return true;
  }
  void expect(char c, const std::string& why) {
    if (!eat(c)) fail(why + (at_end() ? " (header ends early)" : ", found '" + printable(s_.substr(pos_, 1)) + "'"));
  }
  std::string parse_string(const std::string& what) {
    char q = peek();
    if (q != '\'' && q != '"') fail("expected " + what);
    ++pos_;
    std::size_t end = s_.find(q, pos_);
    if (end == std::string_view::npos) fail("unterminated string");
    std::string out(s_.substr(pos_, end - pos_));
    if (out.find('\\') != std::string::npos) fail("escapes in strings are not supported");
    pos_ = end + 1;
    return out;
  }
  bool parse_bool() {
    for (bool v : {true, false}) {
      std::string_view word = v ? "True" : "False";
      if (s_.substr(pos_, word.size()) == word) {
        pos_ += word.size();
        return v;
      }
    }
    fail("fortran_order must be True or False");
  }
  std::int64_t parse_int() {
    if (peek() == '-') fail("shape has a negative entry");
    if (!std::isdigit(static_cast<unsigned char>(peek())))
      fail("shape entries must be non-negative integers, found '" + printable(s_.substr(pos_, 8)) + "'");
    std::int64_t v = 0;
    while (std::isdigit(static_cast<unsigned char>(peek()))) {
      if (__builtin_mul_overflow(v, 10, &v) || __builtin_add_overflow(v, peek() - '0', &v))
        fail("shape entry is too large");
      ++pos_;
    }
    return v;
  }
  std::vector<std::int64_t> parse_shape() {
    std::vector<std::int64_t> shape;
    expect('(', "shape must be a tuple such as (2, 3)");
    skip_ws();
    if (eat(')')) return shape;  // ()
    for (;;) {
      skip_ws();
      shape.push_back(parse_int());
      skip_ws();
      if (eat(')')) {
        if (shape.size() == 1) fail("shape (" + std::to_string(shape[0]) + ") is not a tuple (a 1-tuple needs a comma)");
        return shape;
      }
      expect(',', "expected ',' or ')' in shape");
      skip_ws();
      if (eat(')')) return shape;  // trailing comma: (3,) or (2, 3,)
      if (shape.size() >= kMaxDims) fail("shape has more than 64 dimensions");
    }
  }

  std::string_view s_;
  const std::string& path_;
  std::size_t pos_ = 0;
};

template <class T>
void write_impl(std::ostream& out, const std::string& path, const std::vector<std::int64_t>& shape, const T* data,
                const char* descr) {
  std::int64_t bytes = 0;
  for (std::int64_t d : shape) require(d >= 0, path + ": cannot write shape " + npy_shape_string(shape) + " (negative entry)");
  require(checked_product(shape, sizeof(T), bytes), path + ": cannot write shape " + npy_shape_string(shape) + " (too many elements)");
  require(bytes == 0 || data != nullptr, path + ": cannot write shape " + npy_shape_string(shape) + " from a null data pointer");

  require(shape.size() <= kMaxDims, path + ": cannot write " + std::to_string(shape.size()) + " dimensions (limit 64)");

  // version 1.0: magic (6) + version (2) + 2-byte length, then the header padded so all of it % 64 == 0
  std::string header = std::string("{'descr': '") + descr + "', 'fortran_order': False, 'shape': " + npy_shape_string(shape) + ", }";
  header += std::string((64 - (10 + header.size() + 1) % 64) % 64, ' ') + '\n';
  const auto hlen = static_cast<std::uint16_t>(header.size());  // <= ~1.4 KB given kMaxDims

  out.write(kMagic, kMagicLen);
  const char version_and_len[4] = {1, 0, static_cast<char>(hlen & 0xff), static_cast<char>(hlen >> 8)};
  out.write(version_and_len, 4);
  out.write(header.data(), static_cast<std::streamsize>(header.size()));
  if (bytes > 0) out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(bytes));
}

// to a file, whole or not at all (core/output_file.h): a refused shape leaves an existing file as it was
template <class T>
void write_file(const std::string& path, const std::vector<std::int64_t>& shape, const T* data, const char* descr) {
  write_file_whole(path, "", [&](std::ostream& out) { write_impl(out, path, shape, data, descr); });
}

}  // namespace

namespace {

// The preamble and header of an open .npy file, every rule checked and the data size compared with
// the file size; `in` is left at the first data byte.
NpyHeader parse_preamble_and_header(std::ifstream& in, const std::string& path, std::uintmax_t file_size) {
  auto read_exact = [&](char* dst, std::uintmax_t n, const char* what) {
    in.read(dst, static_cast<std::streamsize>(n));
    if (static_cast<std::uintmax_t>(in.gcount()) != n) throw Error(path + ": read failed (" + what + ")");
  };

  // magic: compare what the file has, so a short non-.npy file still reads as "bad magic"
  char pre[12] = {};
  std::size_t have = static_cast<std::size_t>(std::min<std::uintmax_t>(file_size, kMagicLen));
  read_exact(pre, have, "magic");
  if (have == 0 || std::memcmp(pre, kMagic, have) != 0) throw Error(path + ": not a .npy file (bad magic)");
  if (file_size < kMagicLen + 2) throw Error(path + ": truncated header (file ends inside the magic/version preamble)");
  read_exact(pre + kMagicLen, 2, "version");
  const int major = static_cast<unsigned char>(pre[6]), minor = static_cast<unsigned char>(pre[7]);
  if (major < 1 || major > 3 || minor != 0)
    throw Error(path + ": format version " + std::to_string(major) + "." + std::to_string(minor) +
                " is not supported (need 1.0, 2.0 or 3.0)");
  const std::size_t len_bytes = major == 1 ? 2 : 4;
  const std::size_t preamble = kMagicLen + 2 + len_bytes;
  if (file_size < preamble) throw Error(path + ": truncated header (file ends inside the header length field)");
  read_exact(pre + 8, len_bytes, "header length");
  std::uint32_t hlen = 0;
  for (std::size_t i = 0; i < len_bytes; ++i) hlen |= std::uint32_t{static_cast<unsigned char>(pre[8 + i])} << (8 * i);
  if (hlen > file_size - preamble)
    throw Error(path + ": header length " + std::to_string(hlen) + " runs past the end of the file (" +
                std::to_string(file_size - preamble) + " bytes follow the preamble)");
  if (hlen > kMaxHeaderLen) throw Error(path + ": header length " + std::to_string(hlen) + " is implausibly large");
  std::string text(hlen, '\0');
  read_exact(text.data(), hlen, "header");

  const Header h = HeaderParser(text, path).parse();
  NpyHeader out;
  if (h.descr == "<f4" || h.descr == "=f4") {
    out.dtype = NpyDtype::f4;
  } else if (h.descr == "<f8" || h.descr == "=f8") {
    out.dtype = NpyDtype::f8;
  } else if (h.descr == "<f2" || h.descr == "=f2") {
    out.dtype = NpyDtype::f2;
  } else if (h.descr == "<V2" || h.descr == "|V2" || h.descr == "bfloat16") {  // ml_dtypes' bfloat16 (npy.h)
    out.dtype = NpyDtype::bf16;
  } else if (h.descr == ">f2" || h.descr == ">f4" || h.descr == ">f8") {
    throw Error(path + ": big-endian dtype '" + h.descr + "' is not supported");
  } else {
    throw Error(path + ": dtype '" + printable(h.descr) +
                "' is not supported (need float16 '<f2', bfloat16 '<V2' as ml_dtypes saves it, float32 '<f4' or float64 '<f8')");
  }
  if (h.fortran_order) throw Error(path + ": fortran_order arrays are not supported (save with np.ascontiguousarray)");
  out.shape = h.shape;

  // element count and data bytes, through the checked path (a shape can claim 2^63 elements)
  const std::string too_many = path + ": shape " + npy_shape_string(out.shape) + " has too many elements";
  std::int64_t count = 1;
  for (std::int64_t d : out.shape) count = mul_checked(count, d, too_many);
  const std::int64_t need = mul_checked(count, npy_itemsize(out.dtype), too_many);
  const std::uintmax_t holds = file_size - preamble - hlen;
  const auto uneed = static_cast<std::uintmax_t>(need);
  if (holds < uneed)
    throw Error(path + ": file holds " + std::to_string(holds) + " bytes of data but shape " +
                npy_shape_string(out.shape) + " needs " + std::to_string(need));
  if (holds > uneed)
    throw Error(path + ": file has " + std::to_string(holds - uneed) + " unexpected trailing bytes after the " +
                std::to_string(need) + " bytes of data for shape " + npy_shape_string(out.shape));
  out.count = count;
  out.data_offset = static_cast<std::int64_t>(preamble + hlen);
  return out;
}

// the file opened for reading, with its size; cplab::Error naming the path otherwise
std::uintmax_t open_npy(const std::string& path, std::ifstream& in) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::file_status st = fs::status(path, ec);
  if (ec && ec != std::errc::no_such_file_or_directory) throw Error(path + ": cannot open file (" + ec.message() + ")");
  if (!fs::exists(st)) throw Error(path + ": cannot open file (no such file)");
  if (fs::is_directory(st)) throw Error(path + ": cannot open file: it is a directory, not a .npy file");
  if (!fs::is_regular_file(st))
    throw Error(path +
                ": cannot open file: it is not a regular file (a FIFO or a device; a .npy input must be a file)");
  const std::uintmax_t file_size = fs::file_size(path, ec);
  if (ec) throw Error(path + ": cannot open file (" + ec.message() + ")");
  errno = 0;
  in.open(path, std::ios::binary);
  if (!in) {
    const int e = errno;
    throw Error(path + ": cannot open file (" +
                (e != 0 ? std::string(std::strerror(e)) : std::string("it cannot be read")) + ")");
  }
  return file_size;
}

}  // namespace

std::int64_t npy_itemsize(NpyDtype dtype) {
  switch (dtype) {
    case NpyDtype::f4: return 4;
    case NpyDtype::f8: return 8;
    case NpyDtype::f2:
    case NpyDtype::bf16: return 2;
  }
  return 8;
}

std::string npy_dtype_name(NpyDtype dtype) {
  switch (dtype) {
    case NpyDtype::f4: return "float32";
    case NpyDtype::f8: return "float64";
    case NpyDtype::f2: return "float16";
    case NpyDtype::bf16: return "bfloat16";
  }
  return "?";
}

NpyHeader npy_read_header(const std::string& path) {
  std::ifstream in;
  const std::uintmax_t file_size = open_npy(path, in);
  return parse_preamble_and_header(in, path, file_size);
}

NpyArray npy_read(const std::string& path) { return npy_read(path, npy_read_header(path)); }

NpyArray npy_read(const std::string& path, const NpyHeader& expected) {
  std::ifstream in;
  const std::uintmax_t file_size = open_npy(path, in);
  const NpyHeader h = parse_preamble_and_header(in, path, file_size);
  if (h.dtype != expected.dtype || h.shape != expected.shape || h.data_offset != expected.data_offset)
    throw Error(path + ": the file changed after its header was read (now shape " + npy_shape_string(h.shape) + ")");

  NpyArray a;
  a.dtype = h.dtype;
  a.shape = h.shape;
  // the size matches the file on disk (checked above); the caller checked it against its memory limit
  const auto count = static_cast<std::size_t>(h.count);
  a.values = alloc_vector<double>(count, [&] { return "the data of " + path; });
  if (count == 0) return a;  // nothing to read (and values.data() may be null)
  auto read_exact = [&](char* dst, std::size_t n) {
    in.read(dst, static_cast<std::streamsize>(n));
    if (static_cast<std::size_t>(in.gcount()) != n) throw Error(path + ": read failed (data)");
  };
  if (a.dtype == NpyDtype::f8) {
    read_exact(reinterpret_cast<char*>(a.values.data()), count * sizeof(double));
  } else {  // float32, float16, bfloat16: converted in chunks (no second whole-size buffer)
    const std::size_t step = std::min<std::size_t>(count, std::size_t{1} << 16);
    const auto item = static_cast<std::size_t>(npy_itemsize(a.dtype));
    std::vector<std::byte> chunk(step * item);
    for (std::size_t i = 0; i < count; i += step) {
      const std::size_t n = std::min(step, count - i);
      read_exact(reinterpret_cast<char*>(chunk.data()), n * item);
      npy_to_double(chunk.data(), n, a.dtype, a.values.data() + i);
    }
  }
  return a;
}

void npy_to_double(const std::byte* raw, std::size_t count, NpyDtype dtype, double* out) {
  switch (dtype) {
    case NpyDtype::f8:
      if (count > 0) std::memcpy(out, raw, count * sizeof(double));
      return;
    case NpyDtype::f4: return from_dtype(raw, count, DType::f32, out);
    case NpyDtype::f2: return from_dtype(raw, count, DType::f16, out);
    case NpyDtype::bf16: return from_dtype(raw, count, DType::bf16, out);
  }
}

std::string npy_shape_string(const std::vector<std::int64_t>& shape) {
  std::string s = "(";
  for (std::size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + (shape.size() == 1 ? ",)" : ")");
}

void npy_write(const std::string& path, const std::vector<std::int64_t>& shape, const float* data) {
  write_file(path, shape, data, "<f4");
}

void npy_write(const std::string& path, const std::vector<std::int64_t>& shape, const double* data) {
  write_file(path, shape, data, "<f8");
}

void npy_write(std::ostream& out, const std::string& name, const std::vector<std::int64_t>& shape, const float* data) {
  write_impl(out, name, shape, data, "<f4");
}

void npy_write(std::ostream& out, const std::string& name, const std::vector<std::int64_t>& shape, const double* data) {
  write_impl(out, name, shape, data, "<f8");
}

}  // namespace cplab
