// check_files.cpp: the folders of `cplab check` (--inputs DIR, --outputs DIR) turned into the
// CheckSources whose rules check_inputs.cpp checks (check_inputs.h).
// What it is: the folders' own rules (each a folder; rank{r}/ entries of this run's ranks only; a
// path that cannot be looked at named with the reason), which files are there, and the single-file
// checks the inference check uses. What it is not: the rules on the tensors (check_inputs.cpp).
#include <algorithm>
#include <filesystem>
#include <system_error>

#include "check/check_inputs.h"
#include "core/error.h"
#include "core/util.h"

namespace cplab {

namespace fs = std::filesystem;

namespace {

// whether p exists; a path that cannot be looked at (a symbolic link loop, a folder that cannot be
// searched) is a cplab::Error naming it and the reason, never "missing"
bool file_exists(const fs::path& p) {
  std::error_code ec;
  const bool there = fs::exists(p, ec);
  if (ec && ec != std::errc::no_such_file_or_directory && ec != std::errc::not_a_directory)
    throw Error(p.string() + ": cannot look at it (" + ec.message() + ")");
  return there;
}

// the rank{r} entries of an outputs folder: each must be a rank of this run (r < P), or cplab::Error
void refuse_other_ranks(const fs::path& dir, index_t P) {
  std::error_code ec;
  fs::directory_iterator it(dir, ec);
  if (ec) throw Error(dir.string() + ": cannot list the outputs folder (" + ec.message() + ")");
  for (; it != fs::directory_iterator(); it.increment(ec)) {
    const std::string n = it->path().filename().string();
    if (n.size() < 5 || n.compare(0, 4, "rank") != 0 || n.size() > 14) continue;
    if (!std::all_of(n.begin() + 4, n.end(), [](char c) { return c >= '0' && c <= '9'; })) continue;
    const index_t r = std::stoll(n.substr(4));
    require(r < P, (dir / n).string() + " exists but cp is " + num(P) + " (ranks 0-" + num(P - 1) +
                       "): the shards must come from a run with the same --cp (remove the folders of other ranks)");
  }
  if (ec) throw Error(dir.string() + ": cannot list the outputs folder (" + ec.message() + ")");
}

// dir must be a folder (what: "--inputs"; holds: what it must hold, for the message)
void folder(const std::string& dir, const std::string& what, const char* holds) {
  std::error_code ec;
  const bool is_dir = fs::is_directory(dir, ec);
  if (ec && ec != std::errc::no_such_file_or_directory) throw Error(what + " " + dir + ": cannot use it as a folder (" + ec.message() + ")");
  require(is_dir, what + " " + dir + ": not a directory (it must hold " + holds + ")");
}

// key.npy of dir into m, when it is there
void add_if_there(std::map<std::string, TensorSource>& m, const fs::path& dir, const std::string& key) {
  const fs::path p = dir / (key + ".npy");
  if (file_exists(p)) m.emplace(key, TensorSource::file(p.string()));
}

}  // namespace

bool check_path_exists(const std::string& path) { return file_exists(path); }

NpyHeader check_npy_header(const std::string& path, const std::vector<std::int64_t>& shape, const std::string& dims) {
  return check_source_shape(TensorSource::file(path), shape, dims);
}

std::vector<double> check_npy_data(const std::string& path, const NpyHeader& header, bool lse) {
  return check_source_values(TensorSource::file(path, header), lse);
}

std::vector<double> read_sink_logits(const std::string& inputs_dir, index_t heads) {
  const fs::path p = fs::path(inputs_dir) / "sinks.npy";
  require(file_exists(p), p.string() + " is missing: --sinks needs the sink logits, shape (heads,), as sinks.npy in --inputs or "
                                       "given by --sink-logits FILE");
  return read_sink_logits(TensorSource::file(p.string()), heads, "q.npy");
}

CheckData load_check_data(const CpSpec& spec, const std::string& inputs_dir, const std::string& outputs_dir) {
  folder(inputs_dir, "--inputs", "q.npy, k.npy, v.npy and optionally do.npy");
  folder(outputs_dir, "--outputs", "o.npy and optionally lse.npy, dq.npy, dk.npy, dv.npy, or rank{r}/ shards of them");
  CheckSources s;
  s.files = true;
  s.inputs_name = inputs_dir, s.outputs_name = outputs_dir;
  const fs::path in(inputs_dir), out(outputs_dir);
  for (const char* key : {"q", "k", "v", "do"}) add_if_there(s.inputs, in, key);
  if (!spec.sinks()) add_if_there(s.inputs, in, "sinks");  // refused (with --sinks, the logits are the spec's)
  refuse_other_ranks(out, spec.P());  // outputs of this run's ranks only
  const char* out_keys[] = {"o", "lse", "dq", "dk", "dv", "dsinks"};
  for (const char* key : out_keys) add_if_there(s.outputs, out, key);
  std::vector<std::map<std::string, TensorSource>> shards(static_cast<size_t>(spec.P()));
  bool any_shard = false;
  for (index_t r = 0; r < spec.P(); ++r)
    for (const char* key : out_keys) {
      add_if_there(shards[static_cast<size_t>(r)], out / ("rank" + num(r)), key);
      any_shard = any_shard || !shards[static_cast<size_t>(r)].empty();
    }
  if (any_shard) s.shards = std::move(shards);
  return load_check_data(spec, s);
}

}  // namespace cplab
