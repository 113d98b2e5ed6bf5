// test_npy.cpp: doctest cases for the .npy reader/writer in reference/run/npy.h.
//
// What it is: round trips (f4/f8, 0-d to 3-d), the 64-byte header alignment, version 2.0/3.0 and
// hand-written header variants, and one test per malformed-file rule, each checking the exact
// cplab::Error message; npy_read_header alone (a 1 GiB sparse file read without its data).
// Malformed files are written byte by byte into a private temp directory.
// What it is not: the NumPy interoperability check (tests/npy_numpy_check.py does that with real NumPy).
#include <doctest/doctest.h>
#include <unistd.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "run/npy.h"

namespace {

namespace fs = std::filesystem;
using cplab::NpyArray;
using cplab::NpyDtype;
using Shape = std::vector<std::int64_t>;
using namespace std::string_literals;

// A temp directory removed at scope exit.
struct TempDir {
  fs::path dir;
  TempDir() {
    static int counter = 0;
    dir = fs::temp_directory_path() /
          ("cplab_test_npy_" + std::to_string(::getpid()) + "_" + std::to_string(counter++));
    fs::create_directories(dir);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(dir, ec);
  }
  std::string file(const std::string& name) const { return (dir / name).string(); }
};

void write_bytes(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

std::string read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// A .npy file: magic, version major.0, header length (2 bytes for 1.x, else 4), header, data bytes.
std::string npy_bytes(int major, const std::string& header, const std::string& data) {
  std::string s = std::string("\x93NUMPY", 6) + static_cast<char>(major) + '\0';
  const auto n = static_cast<std::uint32_t>(header.size());
  for (int i = 0; i < (major == 1 ? 2 : 4); ++i) s += static_cast<char>((n >> (8 * i)) & 0xff);
  return s + header + data;
}

std::string f8_data(const std::vector<double>& v) {
  return std::string(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(double));
}

// The message of the cplab::Error that fn throws ("" if it throws nothing; other exceptions propagate).
std::string error_of(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const cplab::Error& e) {
    return e.what();
  }
  return "";
}

std::string read_error(const std::string& path) {
  return error_of([&] { cplab::npy_read(path); });
}

template <class T>
void check_round_trip(const TempDir& t, const Shape& shape, NpyDtype dtype) {
  std::int64_t n = 1;
  for (auto d : shape) n *= d;
  std::vector<T> v(static_cast<std::size_t>(n));
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = static_cast<T>(0.1 * static_cast<double>(i) - 1.7);
  const std::string path = t.file("rt.npy");
  cplab::npy_write(path, shape, v.data());
  const NpyArray a = cplab::npy_read(path);
  CHECK(a.dtype == dtype);
  CHECK(a.shape == shape);
  REQUIRE(a.values.size() == v.size());
  for (std::size_t i = 0; i < v.size(); ++i) CHECK(a.values[i] == static_cast<double>(v[i]));
  // data starts on a 64-byte boundary: magic+version+len+header is a multiple of 64, header ends in '\n'
  const std::string bytes = read_bytes(path);
  REQUIRE(bytes.size() >= 10);
  CHECK(bytes[6] == 1);
  CHECK(bytes[7] == 0);
  const std::size_t hlen = static_cast<unsigned char>(bytes[8]) | (static_cast<unsigned char>(bytes[9]) << 8);
  CHECK((10 + hlen) % 64 == 0);
  CHECK(bytes[10 + hlen - 1] == '\n');
  CHECK(bytes.size() == 10 + hlen + v.size() * sizeof(T));
}

const std::string kHdr234 = "{'descr': '<f8', 'fortran_order': False, 'shape': (2, 3, 4), }";

}  // namespace

TEST_CASE("npy: round trip float32 and float64, 0-d to 3-d") {
  TempDir t;
  for (const Shape& shape : {Shape{}, Shape{5}, Shape{3, 4}, Shape{2, 3, 4}, Shape{0}, Shape{2, 0, 3}}) {
    CAPTURE(shape.size());
    check_round_trip<float>(t, shape, NpyDtype::f4);
    check_round_trip<double>(t, shape, NpyDtype::f8);
  }
}

TEST_CASE("npy: writer header text matches NumPy's layout") {
  TempDir t;
  const std::vector<double> v(24, 1.0);
  const std::string p = t.file("h.npy");
  cplab::npy_write(p, {2, 3, 4}, v.data());
  CHECK(read_bytes(p).substr(10, kHdr234.size()) == kHdr234);
  const std::vector<float> w(7, 2.0f);
  cplab::npy_write(p, {7}, w.data());
  const std::string h1 = "{'descr': '<f4', 'fortran_order': False, 'shape': (7,), }";
  CHECK(read_bytes(p).substr(10, h1.size()) == h1);
  cplab::npy_write(p, {}, w.data());
  const std::string h0 = "{'descr': '<f4', 'fortran_order': False, 'shape': (), }";
  CHECK(read_bytes(p).substr(10, h0.size()) == h0);
}

TEST_CASE("npy: special float values survive") {
  TempDir t;
  const std::vector<double> v = {0.0, -0.0, 1e-310, 1.7976931348623157e308, -INFINITY, INFINITY};
  const std::string p = t.file("s.npy");
  cplab::npy_write(p, {6}, v.data());
  const NpyArray a = cplab::npy_read(p);
  REQUIRE(a.values.size() == 6);
  CHECK(std::signbit(a.values[1]));
  for (std::size_t i = 0; i < v.size(); ++i) CHECK(a.values[i] == v[i]);
  const float nan = NAN;
  cplab::npy_write(p, {1}, &nan);
  CHECK(std::isnan(cplab::npy_read(p).values.at(0)));
}

TEST_CASE("npy: version 2.0 and 3.0 headers read") {
  TempDir t;
  const std::vector<double> v = {1, 2, 3, 4, 5, 6};
  for (int major : {2, 3}) {
    std::string name = "v";  // (not "v" + to_string(...): g++ 12 -O3 false -Wrestrict positive)
    name += std::to_string(major);
    name += ".npy";
    const std::string p = t.file(name);
    write_bytes(p, npy_bytes(major, "{'descr': '<f8', 'fortran_order': False, 'shape': (2, 3), }   \n", f8_data(v)));
    const NpyArray a = cplab::npy_read(p);
    CHECK(a.dtype == NpyDtype::f8);
    CHECK(a.shape == Shape{2, 3});
    CHECK(a.values == v);
  }
}

TEST_CASE("npy: float16 and bfloat16 files read exactly (ml_dtypes saves bfloat16 as '<V2')") {
  TempDir t;
  const std::string p = t.file("half.npy");
  // values every half type holds exactly, plus a subnormal half, across the reader's 65536-element chunks
  std::vector<double> v(70000);
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = static_cast<double>(static_cast<int>(i % 512) - 256) / 64.0;
  v[1] = -0.0;
  v[2] = std::ldexp(1.0, -24);  // the smallest float16 subnormal (bfloat16: a normal number)
  const std::pair<std::string, NpyDtype> cases[] = {
      {"<f2", NpyDtype::f2}, {"=f2", NpyDtype::f2}, {"<V2", NpyDtype::bf16}, {"|V2", NpyDtype::bf16}, {"bfloat16", NpyDtype::bf16}};
  for (const auto& [descr, dtype] : cases) {
    CAPTURE(descr);
    const auto bytes = cplab::to_dtype(v, dtype == NpyDtype::f2 ? cplab::DType::f16 : cplab::DType::bf16);
    write_bytes(p, npy_bytes(1, "{'descr': '" + descr + "', 'fortran_order': False, 'shape': (70000,), }",
                             std::string(reinterpret_cast<const char*>(bytes.data()), bytes.size())));
    const cplab::NpyHeader h = cplab::npy_read_header(p);
    CHECK(h.dtype == dtype);
    CHECK(cplab::npy_itemsize(h.dtype) == 2);
    const NpyArray a = cplab::npy_read(p);
    CHECK(a.dtype == dtype);
    CHECK(a.values == v);
    CHECK(std::signbit(a.values[1]));
  }
  CHECK(cplab::npy_dtype_name(NpyDtype::f2) == "float16");
  CHECK(cplab::npy_dtype_name(NpyDtype::bf16) == "bfloat16");
  // a bfloat16 value that is not a float16 one: 2^100 (float16 overflows), read from '<V2' bytes
  const std::uint16_t big = 0x7180;  // bfloat16 bits of 2^100
  write_bytes(p, npy_bytes(1, "{'descr': '<V2', 'fortran_order': False, 'shape': (1,), }", std::string(reinterpret_cast<const char*>(&big), 2)));
  CHECK(cplab::npy_read(p).values.at(0) == std::ldexp(1.0, 100));
  // the data size is checked with the 2-byte element
  write_bytes(p, npy_bytes(1, "{'descr': '<f2', 'fortran_order': False, 'shape': (3,), }", std::string(4, '\0')));
  CHECK(read_error(p) == p + ": file holds 4 bytes of data but shape (3,) needs 6");
}

TEST_CASE("npy: header dict variants parse") {
  TempDir t;
  const std::string p = t.file("var.npy");
  const std::vector<double> v = {1, 2, 3};
  struct Case {
    std::string header;
    Shape shape;
  };
  for (const Case& c : std::vector<Case>{
           {"{'shape': (3,), 'fortran_order': False, 'descr': '<f8'}", {3}},
           {"{\"descr\": \"<f8\", \"fortran_order\": False, \"shape\": (3,)}\n", {3}},
           {"  {  'descr' :'=f8','fortran_order':False ,'shape':( 3 , ) , }  \n", {3}},
           {"{'descr': '<f8', 'fortran_order': False, 'shape': (1, 3,), }", {1, 3}},
           {"{'fortran_order': False, 'descr': '<f8', 'shape': (3, 1)}", {3, 1}},
       }) {
    CAPTURE(c.header);
    write_bytes(p, npy_bytes(1, c.header, f8_data(v)));
    const NpyArray a = cplab::npy_read(p);
    CHECK(a.shape == c.shape);
    CHECK(a.values == v);
  }
  // '=f4' is native float32, which on this little-endian host is '<f4'
  const float f[2] = {1.5f, -2.5f};
  write_bytes(p, npy_bytes(1, "{'descr': '=f4', 'fortran_order': False, 'shape': (2,), }", std::string(reinterpret_cast<const char*>(f), 8)));
  const NpyArray a = cplab::npy_read(p);
  CHECK(a.dtype == NpyDtype::f4);
  CHECK(a.values == std::vector<double>{1.5, -2.5});
}

TEST_CASE("npy: unsupported files are rejected with the rule broken") {
  TempDir t;
  const std::string p = t.file("q.npy");
  const std::string d192 = f8_data(std::vector<double>(24, 0.0));
  auto with = [&](const std::string& bytes) {
    write_bytes(p, bytes);
    return read_error(p);
  };
  auto hdr = [](const std::string& descr, const std::string& fortran, const std::string& shape) {
    return "{'descr': '" + descr + "', 'fortran_order': " + fortran + ", 'shape': " + shape + ", }";
  };

  CHECK(read_error(t.file("missing.npy")) == t.file("missing.npy") + ": cannot open file (no such file)");
  CHECK(read_error(t.dir.string()) == t.dir.string() + ": cannot open file: it is a directory, not a .npy file");
  CHECK(with("") == p + ": not a .npy file (bad magic)");
  CHECK(with("PK\x03\x04 this is a zip") == p + ": not a .npy file (bad magic)");
  CHECK(with("\x93NUMPZ\x01\x00") == p + ": not a .npy file (bad magic)");
  CHECK(with("\x93NUM") == p + ": truncated header (file ends inside the magic/version preamble)");
  CHECK(with(std::string("\x93NUMPY\x01", 7)) == p + ": truncated header (file ends inside the magic/version preamble)");
  CHECK(with(std::string("\x93NUMPY\x01\x00\x10", 9)) == p + ": truncated header (file ends inside the header length field)");
  CHECK(with(std::string("\x93NUMPY\x02\x00\x10\x00\x00", 11)) == p + ": truncated header (file ends inside the header length field)");
  CHECK(with(npy_bytes(4, kHdr234, d192)) == p + ": format version 4.0 is not supported (need 1.0, 2.0 or 3.0)");
  CHECK(with(std::string("\x93NUMPY\x01\x01", 8) + std::string(100, ' ')) == p + ": format version 1.1 is not supported (need 1.0, 2.0 or 3.0)");
  // header length beyond the file size, and a truncated header text
  CHECK(with(std::string("\x93NUMPY\x01\x00\xff\xff", 10) + kHdr234) ==
        p + ": header length 65535 runs past the end of the file (62 bytes follow the preamble)");
  CHECK(with(std::string("\x93NUMPY\x02\x00\xff\xff\xff\xff", 12) + kHdr234) ==
        p + ": header length 4294967295 runs past the end of the file (62 bytes follow the preamble)");
  CHECK(with(npy_bytes(1, kHdr234.substr(0, 16), "")) == p + ": malformed header: it ends before the closing '}'");
  CHECK(with(npy_bytes(1, "{'descr': '<f8', 'fortran_or", "")) == p + ": malformed header: unterminated string");

  CHECK(with(npy_bytes(1, hdr("<i4", "False", "(2, 3, 4)"), d192)) == p + ": dtype '<i4' is not supported (need float16 '<f2', bfloat16 '<V2' as ml_dtypes saves it, float32 '<f4' or float64 '<f8')");
  CHECK(with(npy_bytes(1, hdr("|f4", "False", "(2, 3, 4)"), d192)) == p + ": dtype '|f4' is not supported (need float16 '<f2', bfloat16 '<V2' as ml_dtypes saves it, float32 '<f4' or float64 '<f8')");
  CHECK(with(npy_bytes(1, hdr("<V4", "False", "(2, 3, 4)"), d192)) == p + ": dtype '<V4' is not supported (need float16 '<f2', bfloat16 '<V2' as ml_dtypes saves it, float32 '<f4' or float64 '<f8')");
  CHECK(with(npy_bytes(1, hdr(">f2", "False", "(2, 3, 4)"), d192)) == p + ": big-endian dtype '>f2' is not supported");
  CHECK(with(npy_bytes(1, hdr(">f8", "False", "(2, 3, 4)"), d192)) == p + ": big-endian dtype '>f8' is not supported");
  CHECK(with(npy_bytes(1, hdr(">f4", "False", "(2, 3, 4)"), d192)) == p + ": big-endian dtype '>f4' is not supported");
  CHECK(with(npy_bytes(1, hdr("<f8", "True", "(2, 3, 4)"), d192)) == p + ": fortran_order arrays are not supported (save with np.ascontiguousarray)");
  CHECK(with(npy_bytes(1, "{'descr': [('a', '<f8')], 'fortran_order': False, 'shape': (3,), }", d192)) ==
        p + ": malformed header: descr is a list (structured dtypes are not supported)");

  // data size: too short, trailing bytes, overflowing shape
  CHECK(with(npy_bytes(1, kHdr234, d192.substr(0, 40))) == p + ": file holds 40 bytes of data but shape (2, 3, 4) needs 192");
  CHECK(with(npy_bytes(1, kHdr234, d192 + "12345678")) ==
        p + ": file has 8 unexpected trailing bytes after the 192 bytes of data for shape (2, 3, 4)");
  CHECK(with(npy_bytes(1, hdr("<f8", "False", "(4611686018427387904, 4)"), d192)) ==
        p + ": shape (4611686018427387904, 4) has too many elements: 4611686018427387904 x 4 overflows 64-bit integers");
  CHECK(with(npy_bytes(1, hdr("<f8", "False", "(1152921504606846976, 4)"), d192)) ==
        p + ": shape (1152921504606846976, 4) has too many elements: 4611686018427387904 x 8 overflows 64-bit integers");
  CHECK(with(npy_bytes(1, hdr("<f8", "False", "(1000000000000, 1000000000000)"), d192)) ==
        p + ": shape (1000000000000, 1000000000000) has too many elements: 1000000000000 x 1000000000000 overflows 64-bit integers");
  CHECK(with(npy_bytes(1, hdr("<f8", "False", "(100000000000,)"), d192)) ==
        p + ": file holds 192 bytes of data but shape (100000000000,) needs 800000000000");
  CHECK(with(npy_bytes(1, hdr("<f8", "False", "(99999999999999999999999,)"), d192)) == p + ": malformed header: shape entry is too large");
}

TEST_CASE("npy: malformed header dicts are rejected") {
  TempDir t;
  const std::string p = t.file("q.npy");
  const std::string d = f8_data({1, 2, 3});
  const std::string pre = p + ": malformed header: ";
  struct Case {
    std::string header, message;
  };
  for (const Case& c : std::vector<Case>{
           {"", "the header must start with '{' (header ends early)"},
           {"'descr': '<f8'", "the header must start with '{', found '''"},
           {"{'descr': '<f8', 'fortran_order': False}", "key 'shape' is missing"},
           {"{'shape': (3,), 'fortran_order': False}", "key 'descr' is missing"},
           {"{'descr': '<f8', 'shape': (3,)}", "key 'fortran_order' is missing"},
           {"{'descr': '<f8', 'descr': '<f8', 'fortran_order': False, 'shape': (3,)}", "key 'descr' appears twice"},
           {"{'descr': '<f8', 'fortran_order': False, 'shape': (3,), 'x': 1}", "unexpected key 'x' (need exactly descr, fortran_order, shape)"},
           {"{descr: '<f8', 'fortran_order': False, 'shape': (3,)}", "expected a quoted key"},
           {"{'descr' '<f8', 'fortran_order': False, 'shape': (3,)}", "expected ':' after key 'descr', found '''"},
           {"{'descr': <f8, 'fortran_order': False, 'shape': (3,)}", "expected descr to be a quoted string"},
           {"{'descr': '<f8', 'fortran_order': 0, 'shape': (3,)}", "fortran_order must be True or False"},
           {"{'descr': '<f8', 'fortran_order': Falsey, 'shape': (3,)}", "expected ',' or '}' after the value of 'fortran_order', found 'y'"},
           {"{'descr': '<f8', 'fortran_order': False, 'shape': (-3,)}", "shape has a negative entry"},
           {"{'descr': '<f8', 'fortran_order': False, 'shape': (3, -1)}", "shape has a negative entry"},
           {"{'descr': '<f8', 'fortran_order': False, 'shape': (3.0,)}", "expected ',' or ')' in shape, found '.'"},
           {"{'descr': '<f8', 'fortran_order': False, 'shape': (abc,)}", "shape entries must be non-negative integers, found 'abc,)}'"},
           {"{'descr': '<f8', 'fortran_order': False, 'shape': (,)}", "shape entries must be non-negative integers, found ',)}'"},
           {"{'descr': '<f8', 'fortran_order': False, 'shape': (3)}", "shape (3) is not a tuple (a 1-tuple needs a comma)"},
           {"{'descr': '<f8', 'fortran_order': False, 'shape': [3]}", "shape must be a tuple such as (2, 3), found '['"},
           {"{'descr': '<f8', 'fortran_order': False, 'shape': 3}", "shape must be a tuple such as (2, 3), found '3'"},
           {"{'descr': '<f8', 'fortran_order': False, 'shape': (3,", "shape entries must be non-negative integers, found ''"},
           {"{'descr': '<f8', 'fortran_order': False, 'shape': (3,)} junk", "unexpected text after the closing '}': 'junk'"},
           {"{'descr': '<f8', 'fortran_order': False, 'shape': (3,)}\0\0"s, "unexpected text after the closing '}': '\\x00\\x00'"},
           {"{'descr': '<\\x66\\x38', 'fortran_order': False, 'shape': (3,)}", "escapes in strings are not supported"},
       }) {
    CAPTURE(c.header);
    write_bytes(p, npy_bytes(1, c.header, d));
    CHECK(read_error(p) == pre + c.message);
  }
}

TEST_CASE("npy: garbage bytes never crash the reader") {
  TempDir t;
  const std::string p = t.file("fuzz.npy");
  const std::vector<double> v = {1, 2, 3, 4, 5, 6};
  cplab::npy_write(p, {2, 3}, v.data());
  const std::string good = read_bytes(p);
  unsigned state = 12345;
  auto next = [&] {
    state = state * 1103515245u + 12345u;
    return (state >> 16) & 0x7fff;
  };
  for (int iter = 0; iter < 2000; ++iter) {
    std::string b = good;
    const int flips = 1 + static_cast<int>(next() % 4);
    for (int k = 0; k < flips; ++k) b[next() % b.size()] = static_cast<char>(next() & 0xff);
    if (iter % 5 == 0) b.resize(next() % b.size());
    write_bytes(p, b);
    try {
      const NpyArray a = cplab::npy_read(p);
      std::int64_t n = 1;
      for (auto dim : a.shape) n *= dim;
      CHECK(static_cast<std::size_t>(n) == a.values.size());
    } catch (const cplab::Error& e) {
      CHECK(std::string(e.what()).rfind(p + ": ", 0) == 0);
    }
  }
}

TEST_CASE("npy: the header is read and checked alone, before any data") {
  TempDir t;
  const std::string p = t.file("h.npy");
  const std::vector<double> v(24, 0.5);
  cplab::npy_write(p, {2, 3, 4}, v.data());
  const cplab::NpyHeader h = cplab::npy_read_header(p);
  CHECK(h.dtype == NpyDtype::f8);
  CHECK(h.shape == Shape{2, 3, 4});
  CHECK(h.count == 24);
  CHECK(h.data_offset == 128);  // version 1.0, padded to a multiple of 64 bytes
  CHECK(cplab::npy_itemsize(NpyDtype::f4) == 4);
  CHECK(cplab::npy_read(p, h).values == v);

  // a 1 GiB sparse file whose header claims the shape: the header is read at once, nothing else
  const std::string big = t.file("big.npy");
  const std::string hdr = "{'descr': '<f4', 'fortran_order': False, 'shape': (1048576, 4, 64), }";
  write_bytes(big, npy_bytes(1, hdr, ""));
  const std::uintmax_t header_bytes = fs::file_size(big);
  fs::resize_file(big, header_bytes + (std::uintmax_t{1} << 30));
  const cplab::NpyHeader hb = cplab::npy_read_header(big);
  CHECK(hb.shape == Shape{1048576, 4, 64});
  CHECK(hb.count == std::int64_t{1} << 28);
  CHECK(hb.data_offset == static_cast<std::int64_t>(header_bytes));
  // the same rules as npy_read: one byte short of the shape is refused from the header alone
  fs::resize_file(big, header_bytes + (std::uintmax_t{1} << 30) - 1);
  CHECK(error_of([&] { cplab::npy_read_header(big); }) ==
        big + ": file holds 1073741823 bytes of data but shape (1048576, 4, 64) needs 1073741824");

  // the data read against a header that no longer describes the file
  cplab::npy_write(p, {4, 6}, v.data());
  CHECK(error_of([&] { cplab::npy_read(p, h); }) == p + ": the file changed after its header was read (now shape (4, 6))");

  // zero-size arrays: a header, no data, an empty array (values.data() may be null: never read into)
  cplab::npy_write(p, {8, 8, 0}, static_cast<const double*>(nullptr));
  CHECK(cplab::npy_read_header(p).count == 0);
  CHECK(cplab::npy_read(p).values.empty());
}

TEST_CASE("npy: float32 data is converted across the reader's chunks") {
  TempDir t;
  const std::string p = t.file("f.npy");
  std::vector<float> v(200003);  // more than three 65536-element chunks, and a ragged last one
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(i) * 0.25f - 7.0f;
  cplab::npy_write(p, {static_cast<std::int64_t>(v.size())}, v.data());
  const NpyArray a = cplab::npy_read(p);
  REQUIRE(a.values.size() == v.size());
  bool same = true;
  for (std::size_t i = 0; i < v.size(); ++i) same = same && a.values[i] == static_cast<double>(v[i]);
  CHECK(same);
}

TEST_CASE("npy: writer errors") {
  TempDir t;
  const double x = 1.0;
  const std::string bad = (t.dir / "no_such_dir" / "out.npy").string();
  CHECK(error_of([&] { cplab::npy_write(bad, {1}, &x); }) ==
        bad + ": cannot open for writing: the directory " + (t.dir / "no_such_dir").string() + " does not exist");
  const std::string p = t.file("w.npy");
  CHECK(error_of([&] { cplab::npy_write(p, {2, -1}, &x); }) == p + ": cannot write shape (2, -1) (negative entry)");
  CHECK(error_of([&] { cplab::npy_write(p, {2}, static_cast<const double*>(nullptr)); }) ==
        p + ": cannot write shape (2,) from a null data pointer");
  CHECK(error_of([&] { cplab::npy_write(p, {0}, static_cast<const float*>(nullptr)); }).empty());
  // 64 dimensions round trip; 65 are refused by the writer and the reader
  const Shape ones64(64, 1);
  cplab::npy_write(p, ones64, &x);
  CHECK(cplab::npy_read(p).shape == ones64);
  CHECK(error_of([&] { cplab::npy_write(p, Shape(65, 1), &x); }) == p + ": cannot write 65 dimensions (limit 64)");
  std::string shape65 = "(";
  for (int i = 0; i < 65; ++i) shape65 += "1, ";
  write_bytes(p, npy_bytes(1, "{'descr': '<f8', 'fortran_order': False, 'shape': " + shape65 + ")}", f8_data({1.0})));
  CHECK(read_error(p) == p + ": malformed header: shape has more than 64 dimensions");
}
