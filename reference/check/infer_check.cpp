// infer_check.cpp: the files, the reference, the comparison and the diagnosis of an inference
// check (infer_check.h).
#include "check/infer_check.h"

#include <chrono>
#include <cmath>
#include <filesystem>
#include <limits>

#include "core/error.h"
#include "core/util.h"

namespace cplab {

namespace fs = std::filesystem;

namespace {

using Clock = std::chrono::steady_clock;
double secs(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

void folder(const std::string& dir, const std::string& what, const char* holds) {
  std::error_code ec;
  const bool is_dir = fs::is_directory(dir, ec);
  if (ec && ec != std::errc::no_such_file_or_directory)
    throw Error(what + " " + dir + ": cannot use it as a folder (" + ec.message() + ")");
  require(is_dir, what + " " + dir + ": not a directory (it must hold " + holds + ")");
}

// the error map of an inference check: output x the rank owning the new token (spec.q_rows) x head,
// one "chunk" per rank (error_map.h's metric and conventions)
ErrorMap infer_error_map(const InferSpec& s, const Chunks& ch, const std::array<ClaimedTensor, kCheckTensors>& out,
                         const std::array<Tensor3<double>, kCheckTensors>& ref,
                         const std::array<double, kCheckTensors>& scale) {
  ErrorMap m;
  m.ranks = s.N(), m.chunks = 1;
  for (CheckTensor t : kAllCheckTensors) {
    if (!out[idx(t)].present) continue;
    const Tensor3<double>& x = out[idx(t)].x;
    const Tensor3<double>& r = ref[idx(t)];
    m.heads[idx(t)] = x.h;
    std::vector<double>& v = m.v[idx(t)];
    v.assign(sz(m.ranks * x.h), 0.0);
    for (index_t g = 0; g < x.n; ++g)
      for (index_t i = 0; i < x.h; ++i) {
        double& c = v[sz(ch.rank_of[sz(g)] * x.h + i)];
        for (index_t e = 0; e < x.d; ++e) {
          const double a = x.at(g, i, e), b = r.at(g, i, e);
          if (std::isfinite(a) && std::isfinite(b))
            c = std::max(c, std::abs(a - b) / scale[idx(t)]);
          else if (!(a == -INFINITY && b == -INFINITY))
            c = INFINITY;
        }
      }
  }
  return m;
}

}  // namespace

InferCheckData load_infer_check_data(const InferSpec& s, const std::string& inputs_dir,
                                     const std::string& outputs_dir) {
  folder(inputs_dir, "--inputs", "q.npy, k.npy and v.npy");
  folder(outputs_dir, "--outputs", "o.npy and optionally lse.npy");
  const fs::path in(inputs_dir), out(outputs_dir);
  require(!check_path_exists((in / "do.npy").string()),
          (in / "do.npy").string() +
              " exists but an inference step (--kv-cache) has no backward: remove it, or check a training run without "
              "--kv-cache");
  for (const char* g : {"dq.npy", "dk.npy", "dv.npy", "dsinks.npy"})
    require(!check_path_exists((out / g).string()), (out / g).string() +
                                                        " exists but an inference step (--kv-cache) has no gradients: "
                                                        "remove it, or check a training run without --kv-cache");
  require(!check_path_exists((out / "rank0").string()),
          (out / "rank0").string() +
              " exists: an inference check reads o.npy and lse.npy of the new tokens in global order, "
              "not per-rank shards");
  if (!s.sinks())
    require(!check_path_exists((in / "sinks.npy").string()),
            (in / "sinks.npy").string() +
                " exists but --sinks was not given: check with --sinks (the outputs then include the sinks), "
                "or remove the file");
  const std::string shapes = " (" + infer_input_shapes(s) + ")";
  struct File {
    std::string path;
    std::vector<std::int64_t> shape;
    std::string dims;
    NpyHeader header;
  };
  std::vector<File> files = {
      {(in / "q.npy").string(), {s.T(), s.h(), s.d()}, "(T, heads, head-dim): the new tokens" + shapes, {}},
      {(in / "k.npy").string(),
       {s.KV(), s.hk(), s.d()},
       "(P+T, kv-heads, head-dim): per request the cache, then the new tokens" + shapes,
       {}},
      {(in / "v.npy").string(),
       {s.KV(), s.hk(), s.dv()},
       "(P+T, kv-heads, v-head-dim): per request the cache, then the new tokens" + shapes,
       {}},
      {(out / "o.npy").string(), {s.T(), s.h(), s.dv()}, "(T, heads, v-head-dim): the new tokens' O", {}},
      {(out / "lse.npy").string(), {s.h(), s.T()}, "(heads, T): the new tokens' LSE", {}}};
  for (size_t i = 0; i < 4; ++i)
    require(check_path_exists(files[i].path),
            files[i].path + " is missing: " +
                (i < 3 ? "--inputs needs q.npy, k.npy and v.npy" : "cplab check needs O, and optionally LSE"));
  const bool has_lse = check_path_exists(files[4].path);
  if (!has_lse) files.pop_back();
  for (File& f : files) f.header = check_npy_header(f.path, f.shape, f.dims);  // every header before any data
  InferCheckData d;
  d.inputs_dir = inputs_dir, d.outputs_dir = outputs_dir;
  Tensor3<double>* ins[] = {&d.in.q, &d.in.k, &d.in.v};
  for (size_t i = 0; i < 3; ++i) {
    Tensor3<double>& x = *ins[i];
    x.n = files[i].shape[0], x.h = files[i].shape[1], x.d = files[i].shape[2];
    x.data = check_npy_data(files[i].path, files[i].header, false);
    d.input_dtypes[i] = files[i].header.dtype;
  }
  if (s.sinks()) d.in.sinks = s.fields().sink_logits;
  ClaimedTensor& o = d.out[idx(CheckTensor::o)];
  o.present = true, o.dtype = files[3].header.dtype, o.source = files[3].path;
  o.x = Tensor3<double>();
  o.x.n = s.T(), o.x.h = s.h(), o.x.d = s.dv();
  o.x.data = check_npy_data(files[3].path, files[3].header, false);
  if (has_lse) {
    ClaimedTensor& l = d.out[idx(CheckTensor::lse)];
    l.present = true, l.dtype = files[4].header.dtype, l.source = files[4].path;
    const std::vector<double> v = check_npy_data(files[4].path, files[4].header, true);  // (h, T)
    l.x = Tensor3<double>(s.T(), s.h(), 1);
    for (index_t i = 0; i < s.h(); ++i)
      for (index_t t = 0; t < s.T(); ++t) l.x.at(t, i, 0) = v[sz(i * s.T() + t)];
  }
  return d;
}

CheckReport run_infer_check(const InferSpec& spec, const InferCheckData& data, const CheckOptions& options) {
  CheckReport rep;
  rep.infer = std::make_shared<const InferSpec>(spec);
  rep.inputs_dir = data.inputs_dir, rep.outputs_dir = data.outputs_dir;
  rep.input_dtypes = data.input_dtypes;
  for (CheckTensor t : kAllCheckTensors) {
    rep.out[idx(t)].present = data.out[idx(t)].present;
    rep.out[idx(t)].dtype = data.out[idx(t)].dtype;
    rep.out[idx(t)].source = data.out[idx(t)].source;
  }
  require(!spec.sinks() || static_cast<index_t>(data.in.sinks.size()) == spec.h(),
          "cplab check with --sinks needs one sink logit per query head (" + num(spec.h()) + "), got " +
              num(static_cast<index_t>(data.in.sinks.size())));
  rep.sink_logits = data.in.sinks;

  auto t0 = Clock::now();
  InferDense dr = infer_dense_reference(spec, data.in.q, data.in.k, data.in.v, data.in.sinks);
  InferCheckContext c{spec, data, {}, {}, {}, check_levels(data.out, options.tolerance), {}};
  c.ref[idx(CheckTensor::o)] = std::move(dr.o);
  c.ref[idx(CheckTensor::lse)] = lse_tensor(dr.lse);
  for (CheckTensor t : kAllCheckTensors)
    if (c.present(t)) c.scale[idx(t)] = ref_scale(c.ref[idx(t)], nullptr);
  // one "chunk" per rank: the new tokens it owns
  rep.chunks.per_rank = 1;
  rep.chunks.chunk_of.assign(sz(spec.T()), 0);
  rep.chunks.rank_of.assign(sz(spec.T()), 0);
  for (index_t r = 0; r < spec.N(); ++r)
    for (index_t i : spec.q_rows(r)) rep.chunks.rank_of[sz(i)] = r;
  rep.map = infer_error_map(spec, rep.chunks, data.out, c.ref, c.scale);
  for (CheckTensor t : kAllCheckTensors)
    c.base_err[idx(t)] = c.present(t) ? rep.map.max(t) : std::numeric_limits<double>::quiet_NaN();
  rep.err = c.base_err;
  rep.levels = c.levels;
  rep.reference_seconds = secs(t0);

  t0 = Clock::now();
  HypothesisResult none = no_fault_hypothesis(data.out, c.base_err, c.levels);
  rep.outputs_equivalent = none.level == 0;
  if (!rep.outputs_equivalent) infer_hypotheses(c);
  c.results.push_back(none);
  rank_hypotheses(c.results, c.levels);
  rep.hypotheses = std::move(c.results);
  rep.hypotheses_seconds = secs(t0);
  rep.where = where_lines(rep.map, rep.chunks, rep.levels[0].tol);
  rep.verdict = check_verdict(rep);
  rep.equivalent = rep.outputs_equivalent;
  return rep;
}

}  // namespace cplab
