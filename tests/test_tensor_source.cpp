// test_tensor_source.cpp: a tensor read from a .npy file or from memory (run/tensor_source.h) meets
// the same rules, with the same message but for its name.
//
// What it is: TensorSource's own conversions and rules; then `cplab check`'s inputs and outputs of
// one run (p2p zigzag causal cp 2, seq 32, 4 heads over 2 KV heads, backward), given as files
// (load_check_data on folders) and as memory (load_check_data on CheckSources), each bad input
// (a wrong shape, NaN in q, dq without dk and dv, a shard of the wrong length, a rank missing, a
// dtype mix) named the same way, the sizes given besides (spec_from_tensors.h) too, and a correct
// check giving the same report from both, in global order and as per-rank shards.
// What it is not: the command line (tests/check_cli.py, tests/bad_input_check.py run it).
#include <doctest/doctest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <functional>
#include <map>

#include "check/check.h"
#include "check_configs.h"
#include "check_faults.h"
#include "core/dtype.h"
#include "core/util.h"
#include "run/npy.h"
#include "run/tensor_source.h"
#include "run_files.h"
#include "spec_from_tensors.h"

namespace cplab::test {

namespace {

namespace fs = std::filesystem;

// one array as the caller holds it: shape, dtype (f8 or f4) and its elements
struct Array {
  std::vector<std::int64_t> shape;
  NpyDtype dtype = NpyDtype::f8;
  std::vector<double> d;
  std::vector<float> f;  // dtype f4
  const void* data() const { return dtype == NpyDtype::f4 ? static_cast<const void*>(f.data()) : d.data(); }
};
using Arrays = std::map<std::string, Array>;

Array array_of(const Tensor3<double>& x) { return Array{{x.n, x.h, x.d}, NpyDtype::f8, x.data, {}}; }
Array lse_array(const Tensor3<double>& lse) {  // (S, h, 1) -> (h, S)
  const Rows<double> r = lse_rows(lse);
  return Array{{r.rows(), r.cols()}, NpyDtype::f8, std::vector<double>(r.data(), r.data() + r.size()), {}};
}
Array as_f4(Array a) {
  a.dtype = NpyDtype::f4;
  a.f.assign(a.d.begin(), a.d.end());
  return a;
}

// a check's tensors: inputs, outputs in global order, or per-rank shards
struct Tensors {
  Arrays in, out;
  std::vector<Arrays> shards;
};

// the run whose tensors the tests give: global outputs, or shards in each rank's local order
struct Run {
  RunSpec rs;
  Inputs in;
  RunReport run;
  Run() {
    CpFields f = fields(Mode::p2p, Layout::zigzag, 2, 32, true);
    f.heads = 4;
    rs.cp = CpSpec(f);
    rs.backward = true;
    in = make_inputs(rs);
    run = run_experiment(rs, in);
  }
  Tensors tensors(bool shards) const {
    Tensors t;
    t.in = {{"q", array_of(in.q)}, {"k", array_of(in.k)}, {"v", array_of(in.v)}, {"do", array_of(in.dout)}};
    const Tensor3<double> outs[] = {run.o, lse_tensor(run.lse), run.dq, run.dk, run.dv};
    auto put = [&](Arrays& m, const std::vector<index_t>* pos) {
      for (CheckTensor c : kAllCheckTensors) {
        const Tensor3<double> x = pos ? gather_tokens(outs[idx(c)], *pos) : outs[idx(c)];
        m[tensor_key(c)] = c == CheckTensor::lse ? lse_array(x) : array_of(x);
      }
    };
    if (!shards) put(t.out, nullptr);
    for (index_t r = 0; shards && r < rs.cp.P(); ++r) {
      const std::vector<index_t> pos = rs.cp.partition().indices(r);
      put(t.shards.emplace_back(), &pos);
    }
    return t;
  }
};

void save(const fs::path& p, const Array& a) {
  fs::create_directories(p.parent_path());
  if (a.dtype == NpyDtype::f4) npy_write(p.string(), a.shape, a.f.data());
  else npy_write(p.string(), a.shape, a.d.data());
}

// the tensors as files in a fresh folder (DIR/in, DIR/out, DIR/out/rank{r})
struct Files {
  fs::path dir;
  explicit Files(const Tensors& t) {
    static int n = 0;
    dir = fs::temp_directory_path() / ("cplab_test_tensor_source_" + std::to_string(::getpid()) + "_" + std::to_string(n++));
    fs::remove_all(dir);
    fs::create_directories(dir / "in"), fs::create_directories(dir / "out");
    for (const auto& [k, a] : t.in) save(dir / "in" / (k + ".npy"), a);
    for (const auto& [k, a] : t.out) save(dir / "out" / (k + ".npy"), a);
    for (size_t r = 0; r < t.shards.size(); ++r)
      for (const auto& [k, a] : t.shards[r]) save(dir / "out" / ("rank" + std::to_string(r)) / (k + ".npy"), a);
  }
  ~Files() { fs::remove_all(dir); }
  std::string in(const std::string& k) const { return (dir / "in" / (k + ".npy")).string(); }
  std::string out(const std::string& k) const { return (dir / "out" / (k + ".npy")).string(); }
  std::string shard(int r, const std::string& k) const { return (dir / "out" / ("rank" + std::to_string(r)) / (k + ".npy")).string(); }
  CheckData load(const CpSpec& s) const { return load_check_data(s, (dir / "in").string(), (dir / "out").string()); }
};

// the tensors as memory sources, named as the binding names them: q, outputs['o'], outputs[1]['o']
CheckSources memory(const Tensors& t) {
  CheckSources s;
  auto add = [](std::map<std::string, TensorSource>& m, const std::string& name, const std::string& k, const Array& a) {
    m.emplace(k, TensorSource::memory(name, a.shape, a.dtype, a.data()));
  };
  for (const auto& [k, a] : t.in) add(s.inputs, k, k, a);
  for (const auto& [k, a] : t.out) add(s.outputs, "outputs['" + k + "']", k, a);
  for (size_t r = 0; r < t.shards.size(); ++r) {
    std::map<std::string, TensorSource>& m = s.shards.emplace_back();
    for (const auto& [k, a] : t.shards[r]) add(m, "outputs[" + std::to_string(r) + "]['" + k + "']", k, a);
  }
  return s;
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

// msg with the first `path` replaced by name (a file's path by the argument's name)
std::string renamed(std::string msg, const std::string& path, const std::string& name) {
  const size_t at = msg.find(path);
  return at == std::string::npos ? msg : msg.replace(at, path.size(), name);
}

}  // namespace

TEST_CASE("tensor_source: memory converts as npy_read does, and its own rules name it") {
  const std::vector<double> x = {0.1, -2.5, 1e-5, 65504.0, -0.0, 3.0e38};
  for (DType t : {DType::f16, DType::bf16, DType::f32}) {
    const std::vector<std::byte> raw = to_dtype(x, t);
    const NpyDtype nt = t == DType::f16 ? NpyDtype::f2 : t == DType::bf16 ? NpyDtype::bf16 : NpyDtype::f4;
    const TensorSource m = TensorSource::memory("x", {2, 3}, nt, raw.data());
    CHECK(m.values() == from_dtype(raw, t));
    CHECK(m.f8_data() == nullptr);
  }
  const Files files(Tensors{{{"q", as_f4(Array{{6}, NpyDtype::f8, x, {}})}}, {}, {}});
  const Array f4 = as_f4(Array{{6}, NpyDtype::f8, x, {}});
  CHECK(TensorSource::file(files.in("q")).values() == TensorSource::memory("q", {6}, NpyDtype::f4, f4.f.data()).values());
  CHECK(TensorSource::file(files.in("q")).dtype() == NpyDtype::f4);
  const TensorSource m8 = TensorSource::memory("q", {3, 2, 1}, NpyDtype::f8, x.data());
  CHECK(m8.f8_data() == x.data());
  CHECK(m8.values() == x);
  CHECK(source_tensor(m8, 3, 2, 1).data == x);
  CHECK(TensorSource::file(files.in("q")).f8_data() == nullptr);
  CHECK(error_of([&] { TensorSource::memory("outputs['o']", {2, -1}, NpyDtype::f8, x.data()); }) ==
        "outputs['o']: shape (2, -1) has a negative entry");
  CHECK(error_of([&] { TensorSource::memory("q", {2, 3}, NpyDtype::f8, nullptr); }) == "q: shape (2, 3) but no data (a null pointer)");
  CHECK(error_of([&] { TensorSource::file(files.in("nothing")).header(); }) == files.in("nothing") + ": cannot open file (no such file)");
}

TEST_CASE("tensor_source: the check's bad inputs, as files and as memory, break the same rule named the same way") {
  const Run run;
  const CpSpec& s = run.rs.cp;
  // the errors of the same tensors as files (their folder written DIR) and as memory sources
  auto both = [&](const Tensors& t) {
    const Files files(t);
    const CheckSources mem = memory(t);
    const std::string f = renamed(error_of([&] { files.load(s); }), files.dir.string(), "DIR");
    return std::make_pair(f, error_of([&] { load_check_data(s, mem); }));
  };
  SUBCASE("a wrong shape of k; NaN in q") {
    Tensors t = run.tensors(false);
    t.in["k"].shape = {32, 2, 15}, t.in["k"].d.resize(32 * 2 * 15);
    auto e = both(t);
    CHECK(e.first == "DIR/in/k.npy: has shape (32, 2, 15) but the spec needs (32, 2, 16) = (seq, kv-heads, head-dim)");
    CHECK(renamed(e.first, "DIR/in/k.npy", "k") == e.second);
    t = run.tensors(false);
    t.in["q"].d[(3 * 4 + 1) * 16] = NAN;
    e = both(t);
    CHECK(e.second == "q: element [3, 1, 0] is NaN; cplab check compares finite values only (NaN and infinities are refused)");
    CHECK(renamed(e.first, "DIR/in/q.npy", "q") == e.second);
  }
  SUBCASE("dq without dk and dv") {
    Tensors t = run.tensors(false);
    t.out.erase("dk"), t.out.erase("dv");
    const auto e = both(t);
    CHECK(e.first == "DIR/out/dk.npy is missing: the gradients dq.npy, dk.npy and dv.npy are checked all three together");
    CHECK(e.second == "outputs['dk'] is missing: the gradients dq, dk and dv are checked all three together");
  }
  SUBCASE("per-rank shards: one of the wrong length, a rank missing one, a list of the wrong length, a key unknown") {
    Tensors t = run.tensors(true);
    t.shards[1]["o"].shape = {15, 4, 16}, t.shards[1]["o"].d.resize(15 * 4 * 16);
    auto e = both(t);
    CHECK(e.second == "outputs[1]['o']: has shape (15, 4, 16) but the spec needs (16, 4, 16) = (seq / cp, heads, v-head-dim)");
    CHECK(renamed(e.first, "DIR/out/rank1/o.npy", "outputs[1]['o']") == e.second);
    t = run.tensors(true);
    t.shards[1].erase("dv");
    e = both(t);
    CHECK(e.second == "outputs[1]['dv'] is missing: per-rank shards need one file per rank 0-1 (cp 2)");
    CHECK(renamed(e.first, "DIR/out/rank1/dv.npy", "outputs[1]['dv']") == e.second);
    t = run.tensors(true);
    t.shards.pop_back();
    CHECK(error_of([&] { load_check_data(s, memory(t)); }) == "outputs is a list of 1 per-rank dicts but cp is 2");
    t = run.tensors(true);
    t.shards[0]["x"] = t.shards[0]["o"];
    CHECK(error_of([&] { load_check_data(s, memory(t)); }) == "outputs[0] has a key 'x': expected o, lse, dq, dk, dv, dsinks");
  }
  SUBCASE("a dtype mix: the least precise of a tensor's shards, from files and memory alike") {
    Tensors t = run.tensors(true);
    t.shards[0]["o"] = as_f4(t.shards[0]["o"]);
    const Files files(t);
    const CheckData a = files.load(s), b = load_check_data(s, memory(t));
    CHECK(a.out[idx(CheckTensor::o)].dtype == NpyDtype::f4);
    CHECK(b.out[idx(CheckTensor::o)].dtype == NpyDtype::f4);
    CHECK(a.out[idx(CheckTensor::o)].x.data == b.out[idx(CheckTensor::o)].x.data);
    CHECK(a.out[idx(CheckTensor::o)].source == (files.dir / "out" / "rank{0..1}" / "o.npy").string());
    CHECK(b.out[idx(CheckTensor::o)].source == "outputs[{0..1}]['o']");
  }
}

TEST_CASE("tensor_source: the sizes given besides the tensors must agree, for check and run, files and memory") {
  const Run run;
  const Tensors t = run.tensors(false);
  const Files files(t);
  const CheckSources mem = memory(t);
  CpFields f = fields(Mode::p2p, Layout::zigzag, 2, 32, true);
  auto file = [&](const char* k) { return TensorSource::file(files.in(k)); };
  const TensorSource fq = file("q"), fk = file("k"), fv = file("v");
  const TensorSource &mq = mem.inputs.at("q"), &mk = mem.inputs.at("k"), &mv = mem.inputs.at("v");
  app::GivenSizes none, seq64, heads8, kv4;
  seq64.seq = 64, heads8.heads = 8, kv4.kv_heads = 4;
  CHECK(app::check_spec(f, none, mq, mk, mv, nullptr).h() == 4);
  CHECK(app::check_spec(f, none, fq, fk, fv, nullptr).S() == 32);
  const std::string f_seq = error_of([&] { app::check_spec(f, seq64, fq, fk, fv, nullptr); });
  CHECK(f_seq == files.in("q") + ": has 32 tokens but --seq 64 was given");
  CHECK(renamed(f_seq, files.in("q"), "q") == error_of([&] { app::check_spec(f, seq64, mq, mk, mv, nullptr); }));
  const std::string f_heads = error_of([&] { app::check_spec(f, heads8, fq, fk, fv, nullptr); });
  CHECK(f_heads == files.in("q") + ": Q has heads 4 but 8 was given or read elsewhere");
  CHECK(renamed(f_heads, files.in("q"), "q") == error_of([&] { app::check_spec(f, heads8, mq, mk, mv, nullptr); }));
  CpFields g = f;
  const std::string f_kv = error_of([&] { app::run_sizes(g, kv4, fq, fk, fv); });
  CHECK(f_kv == files.in("k") + ": K has heads 2 but 4 was given or read elsewhere");
  CHECK(renamed(f_kv, files.in("k"), "k") == error_of([&] { app::run_sizes(g, kv4, mq, mk, mv); }));
  app::run_sizes(g, none, mq, mk, mv);
  CHECK((g.seq == 32 && g.heads == 4 && g.kv_heads == 2 && g.head_dim == 16 && g.v_head_dim == 16));
  // the sink logits: one per head of q
  f.sinks = true;
  const std::vector<double> three = {0.1, 0.2, 0.3};
  save(files.dir / "in" / "sinks.npy", Array{{3}, NpyDtype::f8, three, {}});
  const TensorSource ms = TensorSource::memory("sinks", {3}, NpyDtype::f8, three.data());
  CHECK(error_of([&] { app::check_spec(f, none, mq, mk, mv, &ms); }) ==
        "sinks: holds 3 sink logits but q has 4 heads: one logit per query head, shape (4,)");
  CHECK(error_of([&] { read_sink_logits((files.dir / "in").string(), 4); }) ==
        files.in("sinks") + ": holds 3 sink logits but q.npy has 4 heads: one logit per query head, shape (4,)");
  CHECK(error_of([&] { app::check_spec(f, none, mq, mk, mv, nullptr); }) == "sinks is missing: --sinks needs the sink logits, shape (heads,)");
  // cplab run's dO and inputs: NaN refused, named
  Array q = t.in.at("q");
  q.d[7] = NAN;
  const TensorSource nan_q = TensorSource::memory("q", q.shape, q.dtype, q.data());
  CHECK(error_of([&] { app::load3(nan_q, "Q"); }) == "q: Q element 7 is not finite (NaN or inf inputs are refused)");
  CHECK(app::load3(mq, "Q").data == run.in.q.data);
}

TEST_CASE("tensor_source: a correct check from memory reports what the same files do, in global order and as shards") {
  const Run run;
  const CpSpec& s = run.rs.cp;
  for (bool shards : {false, true}) {
    CAPTURE(shards);
    const Tensors t = run.tensors(shards);
    const Files files(t);
    const CheckData a = files.load(s), b = load_check_data(s, memory(t));
    CHECK(b.in.q.data == a.in.q.data);
    CHECK(b.in.dout.data == a.in.dout.data);
    for (CheckTensor c : kAllCheckTensors) CHECK(b.out[idx(c)].x.data == a.out[idx(c)].x.data);
    CHECK(b.out[idx(CheckTensor::dq)].source == (shards ? "outputs[{0..1}]['dq']" : "outputs['dq']"));
    const CheckReport ra = run_check(s, a), rb = run_check(s, b);
    CHECK(ra.verdict == "equivalent");
    CHECK(rb.verdict == ra.verdict);
    for (int i = 0; i < kCheckTensors; ++i) CHECK(rb.err[sz(i)] == ra.err[sz(i)]);
    CHECK(rb.where == ra.where);
  }
}

}  // namespace cplab::test
