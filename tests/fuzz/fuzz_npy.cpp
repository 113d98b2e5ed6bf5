// fuzz_npy.cpp: the .npy reader (run/npy.h) on valid files, edited headers and damaged bytes.
#include <string>

#include "fuzz.h"
#include "run/npy.h"

namespace cplab::fuzz {

namespace {

// a .npy file: format `version`, header dict text `dict`, then `data` bytes (as NumPy pads it)
std::string npy_bytes(int version, const std::string& dict, const std::string& data) {
  const std::size_t prefix = version == 1 ? 10 : 12;
  std::string h = dict;
  while ((prefix + h.size() + 1) % 64 != 0) h += ' ';
  h += '\n';
  std::string s = "\x93NUMPY";
  s += static_cast<char>(version);
  s += '\0';
  const std::size_t n = h.size();
  s += static_cast<char>(n & 0xff);
  s += static_cast<char>((n >> 8) & 0xff);
  if (version != 1) {
    s += static_cast<char>((n >> 16) & 0xff);
    s += static_cast<char>((n >> 24) & 0xff);
  }
  return s + h + data;
}

std::string dict(const std::string& descr, const std::string& fortran, const std::string& shape) {
  return "{'descr': '" + descr + "', 'fortran_order': " + fortran + ", 'shape': " + shape + ", }";
}

std::string shape_text(const std::vector<std::int64_t>& s) {
  std::string t = "(";
  for (std::size_t i = 0; i < s.size(); ++i) t += (i ? ", " : "") + std::to_string(s[i]);
  return t + (s.size() == 1 ? ",)" : ")");
}

}  // namespace

void fuzz_npy(Fuzz& fz, Tally& t, int n) {
  // named cases: headers that claim more data than any file holds, or sizes that overflow
  const std::pair<const char*, std::string> named[] = {
      {"shape product overflows int64", dict("<f8", "False", "(4611686018427387904, 4)")},
      {"shape of 2^62 x 2^62", dict("<f4", "False", "(4611686018427387904, 4611686018427387904)")},
      {"negative dimension", dict("<f8", "False", "(-1, 4)")},
      {"1 GiB claimed, 16 bytes present", dict("<f8", "False", "(134217728,)")},
      {"dimension past int64", dict("<f8", "False", "(99999999999999999999999,)")},
  };
  for (const auto& [name, d] : named) {
    const std::string path = fz.write("named.npy", npy_bytes(1, d, std::string(16, '\0')));
    t.must_refuse(name, [&] { npy_read(path); });
  }
  const std::vector<std::string> descrs = {"<f8", "<f4", "<f2", ">f8", "|u1", "<i8", "<c16", "O", "<f8'", ""};
  const std::vector<std::string> shapes = {"()", "(0,)", "(3,)", "(2, 3)", "(2, 0, 4)", "(1, 1, 1, 1)", "(2,3", "(a, 2)",
                                           "(2,, 3)", "[2, 3]", "(-3, 2)", "(9223372036854775807,)", "(2, 3, )"};
  for (int i = 0; i < n; ++i) {
    // a valid file first: small shape, either dtype
    std::vector<std::int64_t> shape(fz.below(5));
    std::int64_t count = 1;
    for (auto& d : shape) count *= (d = static_cast<std::int64_t>(fz.below(5)));
    const bool f4 = fz.coin();
    std::string data(static_cast<std::size_t>(count) * (f4 ? 4 : 8), '\0');
    for (char& c : data) c = static_cast<char>(fz.below(256));
    const int version = static_cast<int>(1 + fz.below(3));
    std::string d = dict(f4 ? "<f4" : "<f8", "False", shape_text(shape));
    std::string label = "valid " + shape_text(shape);
    switch (fz.below(4)) {
      case 0: break;  // valid (random bytes: NaN and inf values are the loader's caller's concern)
      case 1:  // a header field replaced
        d = dict(fz.coin(0.7) ? (f4 ? "<f4" : "<f8") : fz.pick(descrs), fz.coin(0.8) ? "False" : fz.pick(std::vector<std::string>{"True", "0", "None"}),
                 fz.coin() ? fz.pick(shapes) : "(" + fz.integer_text() + ", " + fz.integer_text() + ")");
        label = "header " + d;
        break;
      case 2:  // data cut or grown
        data.resize(fz.below(data.size() + 9));
        label += ", data of " + std::to_string(data.size()) + " bytes";
        break;
      default: label += ", bytes damaged";
    }
    std::string bytes = npy_bytes(version, d, data);
    if (label.find("damaged") != std::string::npos) bytes = fz.mutate_bytes(bytes);
    const std::string path = fz.write("case.npy", bytes);
    t.run("npy case " + std::to_string(i) + " (" + label + ")", [&]() -> std::string {
      const NpyArray a = npy_read(path);
      std::int64_t m = 1;
      for (std::int64_t x : a.shape) {
        if (x < 0) return "a negative dimension in " + npy_shape_string(a.shape);
        if (__builtin_mul_overflow(m, x, &m)) return "a shape whose product overflows: " + npy_shape_string(a.shape);
      }
      if (static_cast<std::int64_t>(a.values.size()) != m) return "values.size() differs from the shape's product";
      return {};
    });
  }
}

}  // namespace cplab::fuzz
