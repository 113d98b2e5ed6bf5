// check_inputs.cpp: the rules of `cplab check`'s tensors, on sources found in folders or given in
// memory (check_inputs.h). What it is not: finding the files (check_files.cpp).
#include "check/check_inputs.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <optional>
#include <utility>
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

using SourceMap = std::map<std::string, TensorSource>;
const std::vector<std::string> kInputKeys = {"q", "k", "v", "do", "sinks"};
const std::vector<std::string> kOutputKeys = {"o", "lse", "dq", "dk", "dv", "dsinks"};

const TensorSource* find(const SourceMap& m, const std::string& key) {
  const auto it = m.find(key);
  return it == m.end() ? nullptr : &it->second;
}

// memory's rule: every key names a tensor of the check (what: "outputs", "outputs[2]")
void refuse_unknown_keys(const SourceMap& m, const std::string& what, const std::vector<std::string>& known) {
  for (const auto& entry : m) {
    if (std::find(known.begin(), known.end(), entry.first) != known.end()) continue;
    std::string list;
    for (size_t i = 0; i < known.size(); ++i) list += (i ? ", " : "") + known[i];
    throw Error(what + " has a key '" + entry.first + "': expected " + list);
  }
}

// how the messages name a tensor that is absent (one that is there is named by its source)
struct Naming {
  const CheckSources& s;
  std::string file(const std::string& key) const { return s.files ? key + ".npy" : key; }  // "q.npy" / "q"
  std::string grads() const { return file("dq") + ", " + file("dk") + " and " + file("dv"); }
  std::string input(const std::string& key) const {
    if (s.files) return (fs::path(s.inputs_name) / file(key)).string();
    return s.inputs_name.empty() ? key : s.inputs_name + "['" + key + "']";
  }
  std::string output(const std::string& key) const {
    return s.files ? (fs::path(s.outputs_name) / file(key)).string() : s.outputs_name + "['" + key + "']";
  }
  // rank: "2", or "{0..3}" for all of them
  std::string shard(const std::string& rank, const std::string& key) const {
    return s.files ? (fs::path(s.outputs_name) / ("rank" + rank) / file(key)).string()
                   : s.outputs_name + "[" + rank + "]['" + key + "']";
  }
};

struct InputShapes {
  std::int64_t S, h, hk, d, dv, n;
};

// the shape of an output in global or rank-local (shard) order
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

// the sources of one output: none, the global one, or one per rank 0..P-1 (shard); cplab::Error if
// both, or if a rank lacks it (both, missing: the rule, for the message)
struct OutputSources {
  std::vector<const TensorSource*> src;
  bool shard = false;
};
OutputSources output_sources(const CheckSources& s, const Naming& nm, const std::string& key, index_t P,
                             const std::string& both, const std::string& missing) {
  const TensorSource* global = find(s.outputs, key);
  std::vector<size_t> have;
  for (size_t r = 0; r < s.shards.size(); ++r)
    if (find(s.shards[r], key)) have.push_back(r);
  if (global) {
    require(have.empty(), global->name + " and " + (have.empty() ? std::string() : find(s.shards[have[0]], key)->name) + both);
    return {{global}, false};
  }
  if (have.empty()) return {};
  OutputSources out{{}, true};
  for (index_t r = 0; r < P; ++r) {
    const TensorSource* x = find(s.shards[sz(r)], key);
    require(x != nullptr, nm.shard(num(r), key) + " is missing: " + missing);
    out.src.push_back(x);
  }
  return out;
}

// NaN and inf refused (LSE: -inf allowed), the first bad element named in the source's own shape
void refuse_nonfinite(const TensorSource& src, const double* v, size_t n, bool lse) {
  for (size_t i = 0; i < n; ++i) {
    const double x = v[i];
    if (std::isfinite(x) || (lse && x == -INFINITY)) continue;
    const std::vector<std::int64_t>& shape = src.shape();
    std::string at;
    std::int64_t rest = static_cast<std::int64_t>(i);
    for (size_t d = shape.size(); d-- > 0;) {
      at = (d ? ", " : "") + std::to_string(rest % shape[d]) + at;
      rest /= shape[d];
    }
    throw Error(src.name + ": element [" + at + "] is " + (std::isnan(x) ? "NaN" : x > 0 ? "+inf" : "-inf") +
                (lse ? "; cplab check compares finite values only (LSE may hold -inf, for a row that sees no key)"
                     : "; cplab check compares finite values only (NaN and infinities are refused)"));
  }
}

}  // namespace

const NpyHeader& check_source_shape(const TensorSource& src, const std::vector<std::int64_t>& shape, const std::string& dims) {
  const NpyHeader& h = src.header();
  if (h.shape != shape)
    throw Error(src.name + ": has shape " + npy_shape_string(h.shape) + " but the spec needs " + npy_shape_string(shape) +
                " = " + dims);
  return h;
}

std::vector<double> check_source_values(const TensorSource& src, bool lse, bool output) {
  std::vector<double> v = src.values();
  if (!output) refuse_nonfinite(src, v.data(), v.size(), lse);
  return v;
}

std::vector<double> read_sink_logits(const TensorSource& sinks, index_t heads, const std::string& q_name) {
  const std::string& n = sinks.name;
  const NpyHeader& h = sinks.header();
  require(h.shape.size() == 1, n + ": sink logits must be 1-d, shape (heads,), got shape " + npy_shape_string(h.shape));
  require(h.count <= kMaxHeads, n + ": " + std::to_string(h.count) + " sink logits, more than " + num(kMaxHeads) + " heads");
  require(h.shape[0] == heads, n + ": holds " + std::to_string(h.shape[0]) + " sink logits but " + q_name + " has " + num(heads) +
                                   " heads: one logit per query head, shape (" + num(heads) + ",)");
  std::vector<double> v = sinks.values();
  for (size_t i = 0; i < v.size(); ++i)
    require(std::isfinite(v[i]), n + ": element [" + std::to_string(i) + "] is " + (std::isnan(v[i]) ? "NaN" : "infinite") +
                                     "; every sink logit must be a finite number");
  return v;
}

CheckData load_check_data(const CpSpec& spec, const CheckSources& s) {
  const Naming nm{s};
  const index_t P = spec.P();
  // memory's own rules (a folder's files are found by name, one rank{r}/ per rank)
  refuse_unknown_keys(s.inputs, s.inputs_name.empty() ? "inputs" : s.inputs_name, kInputKeys);
  refuse_unknown_keys(s.outputs, s.outputs_name, kOutputKeys);
  require(s.shards.empty() || static_cast<index_t>(s.shards.size()) == P,
          s.outputs_name + " is a list of " + num(static_cast<index_t>(s.shards.size())) + " per-rank dicts but cp is " + num(P));
  for (size_t r = 0; r < s.shards.size(); ++r) refuse_unknown_keys(s.shards[r], s.outputs_name + "[" + std::to_string(r) + "]", kOutputKeys);
  const InputShapes sh{spec.S(), spec.h(), spec.hk(), spec.d(), spec.dv(), spec.n()};

  // inputs: q, k, v required, do optional
  struct Checked {
    const TensorSource* src;
    std::vector<std::int64_t> shape;
    std::string dims;
  };
  const char* in_names[] = {"q", "k", "v", "do"};
  const std::vector<std::int64_t> in_shapes[] = {{sh.S, sh.h, sh.d}, {sh.S, sh.hk, sh.d}, {sh.S, sh.hk, sh.dv}, {sh.S, sh.h, sh.dv}};
  const char* in_dims[] = {"(seq, heads, head-dim)", "(seq, kv-heads, head-dim)", "(seq, kv-heads, v-head-dim)", "(seq, heads, v-head-dim)"};
  std::vector<Checked> inputs;
  for (int i = 0; i < 4; ++i) {
    const TensorSource* x = find(s.inputs, in_names[i]);
    if (i == 3 && !x) break;
    require(x != nullptr, nm.input(in_names[i]) + " is missing: " + (s.files ? "--inputs" : "cplab check") + " needs " + nm.file("q") +
                              ", " + nm.file("k") + " and " + nm.file("v") + " (and " + nm.file("do") + " to check gradients)");
    inputs.push_back(Checked{x, in_shapes[i], in_dims[i]});
  }
  // outputs, in global order or per-rank shards
  std::array<OutputSources, kCheckTensors> outs;
  for (CheckTensor t : kAllCheckTensors)
    outs[idx(t)] = output_sources(s, nm, tensor_key(t), P,
                                  std::string(" both exist: give ") + tensor_label(t) + " either in global order or as per-rank shards, not both",
                                  "per-rank shards need one file per rank 0-" + num(P - 1) + " (cp " + num(P) + ")");
  require(!outs[idx(CheckTensor::o)].src.empty(),
          nm.output("o") + " is missing (nor are there " + (s.files ? std::string("rank{r}/o.npy") : nm.shard("r", "o")) +
              " shards): cplab check needs O, and optionally LSE, dQ, dK, dV");
  auto has = [&](CheckTensor t) { return !outs[idx(t)].src.empty(); };
  const bool any_grad = has(CheckTensor::dq) || has(CheckTensor::dk) || has(CheckTensor::dv);
  if (any_grad) {
    for (CheckTensor t : {CheckTensor::dq, CheckTensor::dk, CheckTensor::dv})
      require(has(t), nm.output(tensor_key(t)) + " is missing: the gradients " + nm.grads() + " are checked all three together");
    require(inputs.size() == 4, nm.input("do") + " is missing: the gradients in " + s.outputs_name +
                                    " can only be checked with the dO they were computed from");
  }
  // sinks: the logits are the spec's; a sinks input and dsinks only with --sinks, dsinks with the gradients
  const OutputSources ds = output_sources(s, nm, "dsinks", P, " both exist: give dsinks either summed or as per-rank parts, not both",
                                          "per-rank dsinks need one file per rank 0-" + num(P - 1) +
                                              " (each rank's d s_h over its own rows; cplab check adds them up)");
  const std::string ds0 = ds.src.empty() ? std::string() : ds.src[0]->name;
  if (!spec.sinks()) {
    const TensorSource* logits = find(s.inputs, "sinks");
    require(!logits, (logits ? logits->name : std::string()) +
                         " exists but --sinks was not given: check with --sinks (the outputs then include the sinks), or remove the file");
    require(ds.src.empty(), ds0 + " exists but --sinks was not given: d s_h is checked only with --sinks");
  } else {
    require(ds.src.empty() || any_grad, ds.src.empty() ? std::string()
                                                       : ds0 + " is given without " + nm.grads() +
                                                             ": d s_h is checked with the other gradients (and " + nm.file("do") + ")");
  }
  // every header first: shapes (and dtypes) before any data is read
  for (const Checked& f : inputs) check_source_shape(*f.src, f.shape, f.dims);
  for (CheckTensor t : kAllCheckTensors)
    for (const TensorSource* x : outs[idx(t)].src) check_source_shape(*x, out_shape(t, sh, outs[idx(t)].shard), out_dims(t, outs[idx(t)].shard));
  for (const TensorSource* x : ds.src) check_source_shape(*x, {sh.h}, "(heads,)");

  CheckData data;
  data.inputs_dir = s.inputs_name, data.outputs_dir = s.outputs_name, data.arrays = !s.files;
  Tensor3<double>* in_tensors[] = {&data.in.q, &data.in.k, &data.in.v, &data.in.dout};
  for (size_t i = 0; i < inputs.size(); ++i) {
    const TensorSource& x = *inputs[i].src;
    Tensor3<double>& t = *in_tensors[i];
    t = source_tensor(x, inputs[i].shape[0], inputs[i].shape[1], inputs[i].shape[2]);
    refuse_nonfinite(x, std::as_const(t).data.data(), t.data.size(), false);  // const: a borrowed tensor stays borrowed
    data.input_dtypes[i] = x.dtype();
  }
  if (!any_grad) data.in.dout = Tensor3<double>();  // dO without gradients to check: not needed
  if (spec.sinks()) data.in.sinks = spec.fields().sink_logits;
  if (!ds.src.empty()) {
    ClaimedSinkGrad& g = data.dsinks;
    g.present = true, g.x.assign(sz(sh.h), 0.0), g.dtype = ds.src[0]->dtype();
    g.source = ds.src.size() == 1 ? ds0 : nm.shard("{0.." + num(P - 1) + "}", "dsinks");
    for (const TensorSource* x : ds.src) {
      const std::vector<double> v = check_source_values(*x, false);
      if (coarseness(x->dtype()) > coarseness(g.dtype)) g.dtype = x->dtype();
      for (size_t i = 0; i < v.size(); ++i) g.x[i] += v[i];
    }
  }
  const Partition& part = spec.partition();
  for (CheckTensor t : kAllCheckTensors) {
    const std::vector<const TensorSource*>& files = outs[idx(t)].src;
    if (files.empty()) continue;
    ClaimedTensor& c = data.out[idx(t)];
    const bool lse = t == CheckTensor::lse;
    const std::vector<std::int64_t> gshape = out_shape(t, sh, false);
    c.present = true;
    c.x = lse ? Tensor3<double>(sh.S, sh.h, 1) : Tensor3<double>(gshape[0], gshape[1], gshape[2]);
    c.dtype = files[0]->dtype();
    c.source = files.size() == 1 ? files[0]->name : nm.shard("{0.." + num(P - 1) + "}", tensor_key(t));
    c.shards = files.size() > 1;  // (cp 1: one shard is the global order)
    const index_t row = c.x.h * c.x.d;  // values per token
    for (size_t r = 0; r < files.size(); ++r) {
      const std::vector<double> v = check_source_values(*files[r], lse, true);
      if (coarseness(files[r]->dtype()) > coarseness(c.dtype)) c.dtype = files[r]->dtype();
      const bool shard = files.size() > 1;
      const std::vector<index_t> pos = shard ? part.indices(static_cast<index_t>(r)) : std::vector<index_t>();
      const index_t ntok = shard ? sh.n : sh.S;
      for (index_t l = 0; l < ntok; ++l) {
        const index_t g = shard ? pos[static_cast<size_t>(l)] : l;
        if (lse)  // (h, ntok) -> (S, h, 1)
          for (index_t i = 0; i < sh.h; ++i) c.x.at(g, i, 0) = v[static_cast<size_t>(i * ntok + l)];
        else
          std::copy(v.begin() + l * row, v.begin() + (l + 1) * row, c.x.token(g));
      }
    }
  }
  return data;
}

}  // namespace cplab
