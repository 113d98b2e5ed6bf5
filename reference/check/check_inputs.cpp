// check_inputs.cpp: reading and checking the files of `cplab check` (check_inputs.h).
#include "check/check_inputs.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <optional>
#include <vector>

#include "core/error.h"
#include "core/util.h"

namespace cplab {

namespace fs = std::filesystem;

const char* tensor_label(CheckTensor t) {
  static const char* const names[] = {"O", "LSE", "dQ", "dK", "dV"};
  return names[idx(t)];
}
const char* tensor_key(CheckTensor t) {
  static const char* const names[] = {"o", "lse", "dq", "dk", "dv"};
  return names[idx(t)];
}

Tensor3<double> lse_tensor(const Rows<double>& lse) {
  Tensor3<double> x(lse.cols(), lse.rows(), 1);
  for (index_t t = 0; t < lse.cols(); ++t)
    for (index_t i = 0; i < lse.rows(); ++i) x.at(t, i, 0) = lse(i, t);
  return x;
}

Rows<double> lse_rows(const Tensor3<double>& lse) {
  Rows<double> r(lse.h, lse.n);
  for (index_t t = 0; t < lse.n; ++t)
    for (index_t i = 0; i < lse.h; ++i) r(i, t) = lse.at(t, i, 0);
  return r;
}

namespace {

// how many ways a dtype rounds (larger: less precise); the least precise of several files wins
int coarseness(NpyDtype t) {
  switch (t) {
    case NpyDtype::f8: return 0;
    case NpyDtype::f4: return 1;
    case NpyDtype::f2: return 2;
    case NpyDtype::bf16: return 3;
  }
  return 0;
}

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

// one file to read: its path, the shape it must have (and what the dimensions are), its header
struct FileSpec {
  std::string path;
  std::vector<std::int64_t> shape;
  const char* dims;  // "(seq, heads, head-dim)", for the message
  NpyHeader header;
};

NpyHeader checked_header(const std::string& path, const std::vector<std::int64_t>& shape, const std::string& what) {
  NpyHeader h = npy_read_header(path);
  if (h.shape != shape)
    throw Error(path + ": has shape " + npy_shape_string(h.shape) + " but the spec needs " + npy_shape_string(shape) +
                " = " + what);
  return h;
}

// the data of a checked file; NaN and inf refused (LSE: -inf allowed), the first bad element named;
// a claimed output (output) keeps them: its NaN and inf are evidence (error_map.h), not bad input
std::vector<double> checked_data(const FileSpec& f, bool lse, bool output = false) {
  NpyArray a = npy_read(f.path, f.header);
  for (size_t i = 0; i < a.values.size() && !output; ++i) {
    const double x = a.values[i];
    if (std::isfinite(x) || (lse && x == -INFINITY)) continue;
    std::string at;  // the element's index in the file's own shape
    std::int64_t rest = static_cast<std::int64_t>(i);
    for (size_t d = f.shape.size(); d-- > 0;) {
      at = (d ? ", " : "") + std::to_string(rest % f.shape[d]) + at;
      rest /= f.shape[d];
    }
    throw Error(f.path + ": element [" + at + "] is " + (std::isnan(x) ? "NaN" : x > 0 ? "+inf" : "-inf") +
                (lse ? "; cplab check compares finite values only (LSE may hold -inf, for a row that sees no key)"
                     : "; cplab check compares finite values only (NaN and infinities are refused)"));
  }
  return std::move(a.values);
}

struct InputShapes {
  std::int64_t S, h, hk, d, dv, n;
};

// the shape of an output in global (rank < 0) or rank-local order
std::vector<std::int64_t> out_shape(CheckTensor t, const InputShapes& s, bool shard) {
  const std::int64_t tok = shard ? s.n : s.S;
  switch (t) {
    case CheckTensor::o: return {tok, s.h, s.dv};
    case CheckTensor::lse: return {s.h, tok};
    case CheckTensor::dq: return {tok, s.h, s.d};
    case CheckTensor::dk: return {tok, s.hk, s.d};
    case CheckTensor::dv: return {tok, s.hk, s.dv};
  }
  return {};
}

const char* out_dims(CheckTensor t, bool shard) {
  switch (t) {
    case CheckTensor::o: return shard ? "(seq / cp, heads, v-head-dim)" : "(seq, heads, v-head-dim)";
    case CheckTensor::lse: return shard ? "(heads, seq / cp)" : "(heads, seq)";
    case CheckTensor::dq: return shard ? "(seq / cp, heads, head-dim)" : "(seq, heads, head-dim)";
    case CheckTensor::dk: return shard ? "(seq / cp, kv-heads, head-dim)" : "(seq, kv-heads, head-dim)";
    case CheckTensor::dv: return shard ? "(seq / cp, kv-heads, v-head-dim)" : "(seq, kv-heads, v-head-dim)";
  }
  return "";
}

// the files holding output t: none, the global file, or one shard per rank (cplab::Error if both,
// or if the shards are incomplete)
std::vector<FileSpec> output_files(const fs::path& dir, CheckTensor t, const InputShapes& s, index_t P) {
  const std::string name = std::string(tensor_key(t)) + ".npy";
  const fs::path global = dir / name;
  std::vector<index_t> shards;
  for (index_t r = 0; r <= P; ++r)
    if (file_exists(dir / ("rank" + num(r)) / name)) shards.push_back(r);
  if (file_exists(global)) {
    require(shards.empty(), global.string() + " and " + (dir / ("rank" + num(shards.empty() ? 0 : shards[0])) / name).string() +
                                " both exist: give " + tensor_label(t) + " either in global order or as per-rank shards, not both");
    return {FileSpec{global.string(), out_shape(t, s, false), out_dims(t, false), {}}};
  }
  if (shards.empty()) return {};
  require(shards.back() < P, (dir / ("rank" + num(P)) / name).string() + " exists but cp is " + num(P) + " (ranks 0-" +
                                 num(P - 1) + "): the shards must come from a run with the same --cp");
  for (index_t r = 0; r < P; ++r)
    require(std::find(shards.begin(), shards.end(), r) != shards.end(),
            (dir / ("rank" + num(r)) / name).string() + " is missing: per-rank shards need one file per rank 0-" + num(P - 1) +
                " (cp " + num(P) + ")");
  std::vector<FileSpec> files;
  for (index_t r = 0; r < P; ++r)
    files.push_back(FileSpec{(dir / ("rank" + num(r)) / name).string(), out_shape(t, s, true), out_dims(t, true), {}});
  return files;
}

// dsinks: none, DIR/dsinks.npy, or one rank{r}/dsinks.npy per rank (cplab::Error if both or incomplete)
std::vector<std::string> dsinks_files(const fs::path& dir, index_t P) {
  const fs::path global = dir / "dsinks.npy";
  std::vector<std::string> shards;
  for (index_t r = 0; r < P; ++r)
    if (file_exists(dir / ("rank" + num(r)) / "dsinks.npy")) shards.push_back((dir / ("rank" + num(r)) / "dsinks.npy").string());
  if (file_exists(global)) {
    require(shards.empty(), global.string() + " and " + (shards.empty() ? std::string() : shards[0]) + " both exist: give dsinks either summed or as per-rank parts, not both");
    return {global.string()};
  }
  if (shards.empty()) return {};
  for (index_t r = 0; r < P; ++r)
    require(file_exists(dir / ("rank" + num(r)) / "dsinks.npy"),
            (dir / ("rank" + num(r)) / "dsinks.npy").string() + " is missing: per-rank dsinks need one file per rank 0-" + num(P - 1) +
                " (each rank's d s_h over its own rows; cplab check adds them up)");
  return shards;
}

}  // namespace

bool check_path_exists(const std::string& path) { return file_exists(path); }

NpyHeader check_npy_header(const std::string& path, const std::vector<std::int64_t>& shape, const std::string& dims) {
  return checked_header(path, shape, dims);
}

std::vector<double> check_npy_data(const std::string& path, const NpyHeader& header, bool lse) {
  return checked_data(FileSpec{path, header.shape, "", header}, lse);
}

std::vector<double> read_sink_logits(const std::string& inputs_dir, index_t heads) {
  const fs::path p = fs::path(inputs_dir) / "sinks.npy";
  require(file_exists(p), p.string() + " is missing: --sinks needs the sink logits, shape (heads,), as sinks.npy in --inputs or "
                                       "given by --sink-logits FILE");
  const NpyHeader h = npy_read_header(p.string());
  require(h.shape.size() == 1, p.string() + ": sink logits must be 1-d, shape (heads,), got shape " + npy_shape_string(h.shape));
  require(h.count <= kMaxHeads, p.string() + ": " + std::to_string(h.count) + " sink logits, more than " + num(kMaxHeads) + " heads");
  require(h.shape[0] == heads, p.string() + ": holds " + std::to_string(h.shape[0]) + " sink logits but q.npy has " + num(heads) +
                                  " heads: one logit per query head, shape (" + num(heads) + ",)");
  std::vector<double> v = npy_read(p.string(), h).values;
  for (size_t i = 0; i < v.size(); ++i)
    require(std::isfinite(v[i]), p.string() + ": element [" + std::to_string(i) + "] is " + (std::isnan(v[i]) ? "NaN" : "infinite") +
                                     "; every sink logit must be a finite number");
  return v;
}

CheckData load_check_data(const CpSpec& spec, const std::string& inputs_dir, const std::string& outputs_dir) {
  auto folder = [](const std::string& dir, const std::string& what, const char* holds) {
    std::error_code ec;
    const bool is_dir = fs::is_directory(dir, ec);
    if (ec && ec != std::errc::no_such_file_or_directory)
      throw Error(what + " " + dir + ": cannot use it as a folder (" + ec.message() + ")");
    require(is_dir, what + " " + dir + ": not a directory (it must hold " + holds + ")");
  };
  folder(inputs_dir, "--inputs", "q.npy, k.npy, v.npy and optionally do.npy");
  folder(outputs_dir, "--outputs", "o.npy and optionally lse.npy, dq.npy, dk.npy, dv.npy, or rank{r}/ shards of them");
  const InputShapes s{spec.S(), spec.h(), spec.hk(), spec.d(), spec.dv(), spec.n()};
  const fs::path in_dir(inputs_dir), out_dir(outputs_dir);

  // inputs: q, k, v required, do optional
  const char* in_names[] = {"q", "k", "v", "do"};
  const std::vector<std::int64_t> in_shapes[] = {{s.S, s.h, s.d}, {s.S, s.hk, s.d}, {s.S, s.hk, s.dv}, {s.S, s.h, s.dv}};
  const char* in_dims[] = {"(seq, heads, head-dim)", "(seq, kv-heads, head-dim)", "(seq, kv-heads, v-head-dim)", "(seq, heads, v-head-dim)"};
  std::vector<FileSpec> inputs;
  for (int i = 0; i < 4; ++i) {
    const fs::path p = in_dir / (std::string(in_names[i]) + ".npy");
    if (i == 3 && !file_exists(p)) break;
    require(file_exists(p), p.string() + " is missing: --inputs needs q.npy, k.npy and v.npy (and do.npy to check gradients)");
    inputs.push_back(FileSpec{p.string(), in_shapes[i], in_dims[i], {}});
  }
  // outputs, in global order or per-rank shards (of this run's ranks only)
  refuse_other_ranks(out_dir, spec.P());
  std::array<std::vector<FileSpec>, kCheckTensors> outs;
  for (CheckTensor t : kAllCheckTensors) outs[idx(t)] = output_files(out_dir, t, s, spec.P());
  require(!outs[idx(CheckTensor::o)].empty(), (out_dir / "o.npy").string() +
                                                  " is missing (nor are there rank{r}/o.npy shards): cplab check needs O, and "
                                                  "optionally LSE, dQ, dK, dV");
  const bool any_grad = !outs[idx(CheckTensor::dq)].empty() || !outs[idx(CheckTensor::dk)].empty() || !outs[idx(CheckTensor::dv)].empty();
  if (any_grad) {
    for (CheckTensor t : {CheckTensor::dq, CheckTensor::dk, CheckTensor::dv})
      require(!outs[idx(t)].empty(), (out_dir / (std::string(tensor_key(t)) + ".npy")).string() +
                                         " is missing: the gradients dq.npy, dk.npy and dv.npy are checked all three together");
    require(inputs.size() == 4, (in_dir / "do.npy").string() + " is missing: the gradients in " + outputs_dir +
                                    " can only be checked with the dO they were computed from");
  }
  // sinks: the logits are the spec's; sinks.npy and dsinks.npy only with --sinks, dsinks with the gradients
  const std::vector<std::string> ds = dsinks_files(out_dir, spec.P());
  if (!spec.sinks()) {
    require(!file_exists(in_dir / "sinks.npy"), (in_dir / "sinks.npy").string() +
                                                   " exists but --sinks was not given: check with --sinks (the outputs then include the "
                                                   "sinks), or remove the file");
    require(ds.empty(), (ds.empty() ? std::string() : ds[0]) + " exists but --sinks was not given: d s_h is checked only with --sinks");
  } else {
    require(ds.empty() || any_grad, ds.empty() ? std::string() : ds[0] + " is given without dq.npy, dk.npy and dv.npy: d s_h is checked "
                                                                         "with the other gradients (and do.npy)");
  }
  std::vector<FileSpec> ds_files;
  for (const std::string& f : ds) ds_files.push_back(FileSpec{f, {s.h}, "(heads,)", {}});
  // every header first: shapes (and dtypes) before any data is read
  for (FileSpec& f : inputs) f.header = checked_header(f.path, f.shape, f.dims);
  for (auto& files : outs)
    for (FileSpec& f : files) f.header = checked_header(f.path, f.shape, f.dims);
  for (FileSpec& f : ds_files) f.header = checked_header(f.path, f.shape, f.dims);

  CheckData data;
  data.inputs_dir = inputs_dir, data.outputs_dir = outputs_dir;
  Tensor3<double>* in_tensors[] = {&data.in.q, &data.in.k, &data.in.v, &data.in.dout};
  for (size_t i = 0; i < inputs.size(); ++i) {
    Tensor3<double>& x = *in_tensors[i];
    x.n = inputs[i].shape[0], x.h = inputs[i].shape[1], x.d = inputs[i].shape[2];
    x.data = checked_data(inputs[i], false);
    data.input_dtypes[i] = inputs[i].header.dtype;
  }
  if (!any_grad) data.in.dout = Tensor3<double>();  // dO without gradients to check: not needed
  if (spec.sinks()) data.in.sinks = spec.fields().sink_logits;
  if (!ds_files.empty()) {
    ClaimedSinkGrad& g = data.dsinks;
    g.present = true, g.x.assign(sz(s.h), 0.0), g.dtype = ds_files[0].header.dtype;
    g.source = ds_files.size() == 1 ? ds_files[0].path : (out_dir / ("rank{0.." + num(spec.P() - 1) + "}") / "dsinks.npy").string();
    for (const FileSpec& f : ds_files) {
      const std::vector<double> v = checked_data(f, false);
      if (coarseness(f.header.dtype) > coarseness(g.dtype)) g.dtype = f.header.dtype;
      for (size_t i = 0; i < v.size(); ++i) g.x[i] += v[i];
    }
  }
  const Partition& part = spec.partition();
  for (CheckTensor t : kAllCheckTensors) {
    const std::vector<FileSpec>& files = outs[idx(t)];
    if (files.empty()) continue;
    ClaimedTensor& c = data.out[idx(t)];
    const bool lse = t == CheckTensor::lse;
    const std::vector<std::int64_t> gshape = out_shape(t, s, false);
    c.present = true;
    c.x = lse ? Tensor3<double>(s.S, s.h, 1) : Tensor3<double>(gshape[0], gshape[1], gshape[2]);
    c.dtype = files[0].header.dtype;
    c.source = files.size() == 1 ? files[0].path : (out_dir / ("rank{0.." + num(spec.P() - 1) + "}") / (std::string(tensor_key(t)) + ".npy")).string();
    const index_t row = c.x.h * c.x.d;  // values per token
    for (size_t r = 0; r < files.size(); ++r) {
      const std::vector<double> v = checked_data(files[r], lse, true);
      if (coarseness(files[r].header.dtype) > coarseness(c.dtype)) c.dtype = files[r].header.dtype;
      const bool shard = files.size() > 1;
      const std::vector<index_t> pos = shard ? part.indices(static_cast<index_t>(r)) : std::vector<index_t>();
      const index_t ntok = shard ? s.n : s.S;
      for (index_t l = 0; l < ntok; ++l) {
        const index_t g = shard ? pos[static_cast<size_t>(l)] : l;
        if (lse)  // (h, ntok) -> (S, h, 1)
          for (index_t i = 0; i < s.h; ++i) c.x.at(g, i, 0) = v[static_cast<size_t>(i * ntok + l)];
        else
          std::copy(v.begin() + l * row, v.begin() + (l + 1) * row, c.x.token(g));
      }
    }
  }
  return data;
}

}  // namespace cplab
