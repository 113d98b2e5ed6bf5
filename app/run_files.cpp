// run_files.cpp: the .npy inputs and the outputs of `cplab run` (run_files.h).
#include "run_files.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <ostream>
#include <vector>

#include "core/error.h"
#include "core/output_file.h"

namespace cplab::app {

namespace {

void write3(std::ostream& out, const std::string& path, const Tensor3<double>& x, bool f32) {
  const std::vector<std::int64_t> shape = {x.n, x.h, x.d};
  if (f32) {
    const Tensor3<float> y = cast<float>(x);
    npy_write(out, path, shape, y.data.data());
  } else {
    npy_write(out, path, shape, x.data.data());
  }
}

void write_rows(std::ostream& out, const std::string& path, const Rows<double>& x, bool f32) {
  const std::vector<std::int64_t> shape = {x.rows(), x.cols()};
  if (f32) {
    const Rows<float> y = x.cast<float>();
    npy_write(out, path, shape, y.data());
  } else {
    npy_write(out, path, shape, x.data());
  }
}

void write_vector(std::ostream& out, const std::string& path, const std::vector<double>& x, bool f32) {
  const std::vector<std::int64_t> shape = {static_cast<std::int64_t>(x.size())};
  if (f32) {
    const std::vector<float> y(x.begin(), x.end());
    npy_write(out, path, shape, y.data());
  } else {
    npy_write(out, path, shape, x.data());
  }
}

// the files of --out-dir, in the order they are written
std::vector<std::string> out_dir_files(bool backward, bool dsinks) {
  if (backward && dsinks) return {"o.npy", "lse.npy", "dq.npy", "dk.npy", "dv.npy", "dsinks.npy"};
  if (backward) return {"o.npy", "lse.npy", "dq.npy", "dk.npy", "dv.npy"};
  return {"o.npy", "lse.npy"};
}

// the folders create_directories(dir) would make, the deepest first
std::vector<std::filesystem::path> missing_folders(const std::string& dir) {
  std::vector<std::filesystem::path> v;
  std::error_code ec;
  for (auto p = std::filesystem::path(dir).lexically_normal(); !p.empty() && !std::filesystem::exists(p, ec); p = p.parent_path()) {
    if (!p.has_filename()) continue;  // "a/b/" -> "a/b"
    v.push_back(p);
    if (!p.has_parent_path()) break;
  }
  return v;
}

}  // namespace

// the header of a 3-d (s, heads, dim) Q/K/V/dO source, checked against (and filling) the sizes known
// so far; no data is read (run_action checks the run's memory before load3 allocates anything)
const NpyHeader& header3(const TensorSource& src, const char* what, index_t& s, index_t& h, index_t& d) {
  const std::string& path = src.name;
  const NpyHeader& hd = src.header();
  require(hd.shape.size() == 3, path + ": " + what + " must be 3-d (seq, heads, head_dim), got shape " + npy_shape_string(hd.shape));
  if (std::find(hd.shape.begin(), hd.shape.end(), 0) != hd.shape.end())
    throw Error(path + ": " + what + " has shape " + npy_shape_string(hd.shape) +
                " with a zero dimension (seq, heads and head_dim must each be >= 1)");
  auto agree = [&](index_t& field, std::int64_t got, const char* name) {
    if (field != 0 && field != got)
      throw Error(path + ": " + what + " has " + name + " " + std::to_string(got) + " but " + std::to_string(field) +
                  " was given or read elsewhere");
    field = got;
  };
  agree(s, hd.shape[0], "seq");
  agree(h, hd.shape[1], "heads");
  agree(d, hd.shape[2], "head-dim");
  return hd;
}

// the data of a source whose header header3 checked; NaN and inf refused
Tensor3<double> load3(const TensorSource& src, const char* what) {
  const std::vector<std::int64_t>& sh = src.shape();
  Tensor3<double> x = source_tensor(src, sh[0], sh[1], sh[2]);
  const Buffer<double>& values = x.data;  // read through const: a borrowed tensor stays borrowed
  for (size_t i = 0; i < values.size(); ++i)
    if (!std::isfinite(values[i]))  // the message is built for the first bad element only
      throw Error(src.name + ": " + what + " element " + std::to_string(i) + " is not finite (NaN or inf inputs are refused)");
  return x;
}

// Before the (possibly long) run: every output could be written, none is an input or another output.
// Nothing is created, opened or truncated here: the outputs are committed after the run (write_outputs).
void prepare_outputs(const RunFiles& o, bool backward) {
  std::vector<std::pair<std::string, std::string>> outs;  // (option, path)
  if (!o.trace.empty()) outs.emplace_back("--trace", o.trace);
  if (!o.chrome.empty()) outs.emplace_back("--chrome-trace", o.chrome);
  if (!o.out_dir.empty()) {
    check_folder(o.out_dir, "--out-dir");
    for (const std::string& name : out_dir_files(backward, o.dsinks))
      outs.emplace_back("--out-dir", (std::filesystem::path(o.out_dir) / name).string());
  }
  const std::pair<const char*, const std::string*> ins[] = {
      {"--q", &o.q}, {"--k", &o.k}, {"--v", &o.v}, {"--do", &o.dout}};
  for (size_t i = 0; i < outs.size(); ++i) {
    const auto& [what, path] = outs[i];
    std::error_code ec;
    if (what != "--out-dir" || std::filesystem::is_directory(o.out_dir, ec)) check_writable(path, what);
    for (const auto& [in_name, in_path] : ins)
      require(in_path->empty() || !same_file(path, *in_path),
              what + " " + path + " is the same file as the " + in_name + " input (an output must not overwrite an input)");
    for (size_t j = 0; j < i; ++j)
      require(!same_file(path, outs[j].second), what + " " + path + " is the same file as " + outs[j].first + " " +
                                                    outs[j].second + " (each output needs its own file)");
  }
}

// The outputs of a run that succeeded, committed together (core/output_file.h): every one of them
// is written, or none is and every existing file is as it was (a folder made for --out-dir is
// removed again). r.o etc. are empty for a planned run (no --out-dir there).
void write_outputs(const RunFiles& o, const RunReport& r, bool backward, bool f32) {
  std::vector<std::filesystem::path> made;  // folders this call creates for --out-dir
  if (!o.out_dir.empty()) made = missing_folders(o.out_dir);
  try {
    OutputSet set;
    if (!o.trace.empty()) set.stage(o.trace, "--trace", [&](std::ostream& out) { r.trace.write(out, false); });
    if (!o.chrome.empty()) set.stage(o.chrome, "--chrome-trace", [&](std::ostream& out) { r.trace.write(out, true); });
    if (!o.out_dir.empty()) {
      std::error_code ec;
      std::filesystem::create_directories(o.out_dir, ec);
      require(!ec && std::filesystem::is_directory(o.out_dir),
              "--out-dir " + o.out_dir + ": cannot create the directory" + (ec ? " (" + ec.message() + ")" : ""));
      for (const std::string& name : out_dir_files(backward, o.dsinks)) {
        const std::string path = (std::filesystem::path(o.out_dir) / name).string();
        set.stage(path, "--out-dir", [&](std::ostream& out) {
          if (name == "o.npy") write3(out, path, r.o, f32);
          else if (name == "lse.npy") write_rows(out, path, r.lse, f32);
          else if (name == "dsinks.npy") write_vector(out, path, r.dsinks, f32);
          else write3(out, path, name == "dq.npy" ? r.dq : name == "dk.npy" ? r.dk : r.dv, f32);
        });
      }
    }
    set.commit();
  } catch (...) {
    std::error_code ec;
    for (const std::filesystem::path& p : made) std::filesystem::remove(p, ec);  // only if empty
    throw;
  }
}

}  // namespace cplab::app
