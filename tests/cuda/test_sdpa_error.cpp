// test_sdpa_error.cpp: the CPU side of the accuracy yardstick (sdpa_error.h), without a GPU or torch.
//
// What it is: doctest cases for write_case_inputs (the .npy round trip: shapes, and values exactly the
// dtype-rounded inputs of sequence 0), load_sdpa_samples + the shared-reference check (outputs made
// by the CPU reference itself, so SDPA's "error" is float32 rounding), judge (min over backends,
// PASS / FAIL at 1.5x, not measured), and run_sdpa_error with stand-in child commands (a child that
// fails like a missing torch; one that reports a run and a refused backend), including the removal
// of the temporary directory; also the device fill's fast path (input_bytes / input_rows, inputs.h)
// against the per-element input_value, bit for bit. Registered as ctest bench_sdpa_error_io (label bench).
// What it is not: a test of sdpa_error.py or of SDPA (that needs a GPU and torch).
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>

#include <cmath>
#include <filesystem>
#include <unistd.h>
#include <limits>
#include <string>
#include <vector>

#include "attention_check.h"
#include "core/dense_attention.h"
#include "inputs.h"
#include "run/npy.h"
#include "sdpa_error.h"

using namespace cplab;
using namespace cplab::bench;
namespace fs = std::filesystem;

namespace {

fs::path fresh_dir(const std::string& name) {
  const fs::path p = fs::temp_directory_path() / ("cplab-bench-test-" + name + "-" + std::to_string(::getpid()));
  fs::remove_all(p);
  fs::create_directories(p);
  return p;
}

Tensor3<double> read3(const fs::path& path) {
  const NpyArray a = npy_read(path.string());
  REQUIRE(a.shape.size() == 3);
  Tensor3<double> t(a.shape[0], a.shape[1], a.shape[2]);
  t.data = a.values;
  return t;
}

void write3(const fs::path& path, const Tensor3<double>& t, double factor = 1.0) {
  std::vector<float> f(t.data.size());
  for (std::size_t i = 0; i < f.size(); ++i) f[i] = static_cast<float>(t.data[i] * factor);
  npy_write(path.string(), {t.n, t.h, t.d}, f.data());
}

AttentionPlan tiny_plan(const Shape& x, DType dtype) {
  AttentionPlan p;
  p.dtype = dtype;
  p.shapes = {x};
  return p;
}

Shape tiny_shape(bool causal) {
  Shape x;
  x.b = 2;  // sequence 0 of 2: the files hold the first s tokens only
  x.s = 64;
  x.h = 4;
  x.hk = 2;
  x.d = 16;
  x.causal = causal;
  return x;
}

// the CPU reference's O, dQ, dK, dV of the whole tiny case, written as <backend>_*.npy (times factor)
void write_reference_outputs(const fs::path& dir, const std::string& backend, const Shape& x, double factor) {
  const Tensor3<double> q = read3(dir / "q.npy"), k = read3(dir / "k.npy"), v = read3(dir / "v.npy"),
                        dout = read3(dir / "dout.npy");
  const Mask mask = x.causal ? Mask::causal(0) : Mask::none();
  const double scale = default_scale(x.d);
  const AttnOut<double> fwd = dense_forward<double>(q, k, v, mask, scale);
  const AttnGrads<double> g = dense_backward<double>(q, k, v, fwd, dout, mask, scale);
  write3(dir / (backend + "_o.npy"), fwd.o, factor);
  write3(dir / (backend + "_dq.npy"), g.dq, factor);
  write3(dir / (backend + "_dk.npy"), g.dk, factor);
  write3(dir / (backend + "_dv.npy"), g.dv, factor);
}

double error_of(const CheckResult& c, const std::string& name) {
  for (const auto& [n, e] : c.errors)
    if (n == name) return e;
  return -1.0;
}

}  // namespace

// the device fill's fast path (one to_dtype per run of elements; cplab-bench attention and cp) against
// the per-element path (to_dtype of input_value), bit for bit, in token order and in a rank's order
TEST_CASE("input_bytes / input_rows: the bytes of to_dtype(input_value) per element") {
  auto one = [](Input t, std::uint64_t i, DType dtype) { return to_dtype({input_value(t, i, dtype)}, dtype); };
  auto bytes = [](const std::vector<std::byte>& v, std::size_t at, std::size_t es) {
    return std::vector<std::byte>(v.begin() + static_cast<std::ptrdiff_t>(at), v.begin() + static_cast<std::ptrdiff_t>(at + es));
  };
  for (const DType dtype : {DType::f16, DType::bf16, DType::f32}) {
    const std::size_t es = dtype_size(dtype);
    for (const Input t : {Input::q, Input::k, Input::v, Input::dout}) {
      for (const std::uint64_t i0 : {std::uint64_t{0}, std::uint64_t{1} << 40}) {
        const std::size_t n = 4096;
        std::vector<std::byte> fast(n * es);
        input_bytes(t, i0, n, dtype, fast.data());
        std::size_t same = 0;
        for (std::size_t i = 0; i < n; ++i) same += one(t, i0 + i, dtype) == bytes(fast, i * es, es);
        CHECK(same == n);
      }
      const std::int64_t width = 96;  // 61 tokens in a scrambled order, as a rank's part.indices(r)
      std::vector<std::int64_t> tokens(61);
      for (std::size_t r = 0; r < tokens.size(); ++r) tokens[r] = static_cast<std::int64_t>((r * 37 + 5) % 127) + 4000000;
      std::vector<std::byte> rows(tokens.size() * static_cast<std::size_t>(width) * es);
      input_rows(t, tokens.data(), tokens.size(), width, dtype, rows.data());
      std::size_t same = 0;
      for (std::size_t r = 0; r < tokens.size(); ++r)
        for (std::int64_t c = 0; c < width; ++c) {
          const std::size_t at = (r * static_cast<std::size_t>(width) + static_cast<std::size_t>(c)) * es;
          same += one(t, static_cast<std::uint64_t>(tokens[r] * width + c), dtype) == bytes(rows, at, es);
        }
      CHECK(same == tokens.size() * static_cast<std::size_t>(width));
    }
  }
}

TEST_CASE("write_case_inputs: sequence 0's exact inputs as float32 .npy") {
  for (const DType dtype : {DType::bf16, DType::f16}) {
    const Shape x = tiny_shape(false);
    const fs::path dir = fresh_dir("inputs");
    write_case_inputs((dir / "case").string(), x, dtype, true);
    const struct {
      const char* file;
      Input input;
      std::int64_t heads;
    } files[] = {{"q.npy", Input::q, x.h}, {"k.npy", Input::k, x.hk}, {"v.npy", Input::v, x.hk},
                 {"dout.npy", Input::dout, x.h}};
    for (const auto& f : files) {
      const NpyArray a = npy_read((dir / "case" / f.file).string());
      CHECK(a.dtype == NpyDtype::f4);
      CHECK(a.shape == std::vector<std::int64_t>{x.s, f.heads, x.d});
      std::size_t exact = 0;
      for (std::size_t i = 0; i < a.values.size(); ++i) {
        const double want = input_value(f.input, i, dtype);
        exact += a.values[i] == want && round_to(a.values[i], dtype) == a.values[i] ? 1 : 0;
      }
      CHECK(exact == a.values.size());
    }
    write_case_inputs((dir / "fwd").string(), x, dtype, false);  // --pass fwd: no dO
    CHECK(!fs::exists(dir / "fwd" / "dout.npy"));
    fs::remove_all(dir);
  }
}

TEST_CASE("SDPA's outputs read back and checked on the same rows against the same reference") {
  for (const bool causal : {false, true}) {
    const Shape x = tiny_shape(causal);
    const AttentionPlan plan = tiny_plan(x, DType::bf16);
    const fs::path dir = fresh_dir("outputs");
    write_case_inputs(dir.string(), x, plan.dtype, true);
    write_reference_outputs(dir, "flash", x, 1.0);
    write_reference_outputs(dir, "cudnn", x, 1.01);  // 1 % off everywhere: error 1e-2

    const GpuSamples fwd = load_sdpa_samples(dir.string(), "flash", x, Pass::fwd);
    CHECK(!fwd.has_lse);
    CHECK(fwd.rows == sample_rows(x.s));
    CHECK(fwd.o.size() == fwd.rows.size() * static_cast<std::size_t>(x.d));
    const GpuSamples fwd_off = load_sdpa_samples(dir.string(), "cudnn", x, Pass::fwd);
    const std::vector<CheckResult> f = check_forward(plan, x, {&fwd, &fwd_off});
    REQUIRE(f.size() == 2);
    CHECK(f[0].errors.size() == 1);  // O only: no LSE
    CHECK(error_of(f[0], "O") < 1e-6);
    CHECK(error_of(f[1], "O") == doctest::Approx(1e-2).epsilon(1e-3));

    const GpuSamples bwd = load_sdpa_samples(dir.string(), "flash", x, Pass::bwd);
    CHECK(bwd.full);
    CHECK(bwd.dq.size() == static_cast<std::size_t>(x.s * (x.h / x.hk) * x.d));
    const GpuSamples bwd_off = load_sdpa_samples(dir.string(), "cudnn", x, Pass::bwd);
    const std::vector<CheckResult> b = check_backward(plan, x, {&bwd, &bwd_off});
    for (const char* name : {"dQ", "dK", "dV"}) {
      CHECK(error_of(b[0], name) < 1e-6);
      CHECK(error_of(b[1], name) == doctest::Approx(1e-2).epsilon(1e-3));
    }

    // a wrong file shape is an error naming the file, not a silent comparison
    const std::vector<float> zeros(static_cast<std::size_t>(x.s * (x.h - 1) * x.d));
    npy_write((dir / "bad_o.npy").string(), {x.s, x.h - 1, x.d}, zeros.data());
    CHECK_THROWS_WITH_AS(load_sdpa_samples(dir.string(), "bad", x, Pass::fwd), doctest::Contains("bad_o.npy: shape"),
                         cplab::Error);
    CHECK_THROWS_AS(load_sdpa_samples(dir.string(), "missing", x, Pass::fwd), cplab::Error);
    fs::remove_all(dir);
  }
}

TEST_CASE("judge: ours / min over the backends that ran, PASS at <= 1.5x") {
  CheckResult ours;
  ours.errors = {{"O", 3e-3}, {"LSE", 1e-5}};
  CheckResult flash, cudnn;
  flash.errors = {{"O", 2.5e-3}};
  cudnn.errors = {{"O", 2.1e-3}};  // 3e-3 / 2.1e-3 = 1.43
  Yardstick y = judge(ours, {{"flash", flash}, {"cudnn", cudnn}}, {});
  CHECK(y.status == "PASS");
  REQUIRE(y.tensors.size() == 2);
  CHECK(y.tensors[0].ratio == doctest::Approx(3e-3 / 2.1e-3));
  CHECK(y.tensors[0].status == "PASS");
  CHECK(y.tensors[1].status == "not measured");  // SDPA gives no LSE
  CHECK(y.tensors[1].note == "SDPA does not give LSE");

  cudnn.errors = {{"O", 1.5e-3}};  // 3e-3 / 1.5e-3 = 2 > 1.5
  y = judge(ours, {{"flash", flash}, {"cudnn", cudnn}}, {});
  CHECK(y.status == "FAIL");
  CHECK(y.tensors[0].status == "FAIL");

  cudnn.errors = {{"O", std::numeric_limits<double>::infinity()}};  // a non-finite SDPA error is no yardstick
  y = judge(ours, {{"flash", flash}, {"cudnn", cudnn}}, {});
  CHECK(y.status == "PASS");
  CHECK(y.tensors[0].ratio == doctest::Approx(3e-3 / 2.5e-3));

  y = judge(ours, {{"flash", flash}}, {{"cudnn", "RuntimeError: no kernel"}});  // one backend refused
  CHECK(y.status == "PASS");
  CHECK(y.backend_errors.size() == 1);

  y = judge(ours, {}, {{"flash", "refused"}, {"cudnn", "refused too"}});
  CHECK(y.status == "not measured");
  CHECK(y.reason == "flash: refused; cudnn: refused too");

  CheckResult zero;
  zero.errors = {{"O", 0.0}};
  CHECK(judge(zero, {{"flash", zero}}, {}).status == "PASS");  // 0 / 0
  CHECK(judge(ours, {{"flash", zero}}, {}).status == "FAIL");  // e / 0
  CheckResult nan_ours;
  nan_ours.errors = {{"O", std::nan("")}};
  CHECK(judge(nan_ours, {{"flash", flash}}, {}).status == "FAIL");
}

TEST_CASE("run_sdpa_error: a child without torch makes the yardstick 'not measured', the temporary dir goes") {
  const Shape x = tiny_shape(true);
  AttentionPlan plan = tiny_plan(x, DType::f16);
  plan.sdpa_error_cmd = "echo '{\"error\": \"fake: no torch\"}'; exit 2; :";
  std::string dir;
  {
    const SdpaErrorRun run = run_sdpa_error(plan);
    CHECK(run.error == "fake: no torch");
    CHECK(!run.kept);
    REQUIRE(run.cases.size() == 1);
    CHECK(fs::exists(fs::path(run.cases[0].dir) / "q.npy"));
    CHECK(run.command.find("--dtype fp16 --pass both --case '") != std::string::npos);
    dir = run.dir;
    CHECK(fs::is_directory(dir));
    GpuSamples ours;
    ours.rows = sample_rows(x.s);
    Yardstick yard;
    (void)check_with_yardstick(plan, x, Pass::fwd, ours, run, yard);
    CHECK(yard.selected);
    CHECK(yard.status == "not measured");
    CHECK(yard.reason == "fake: no torch");
  }
  CHECK(!fs::exists(dir));  // removed with the last copy of the run
}

TEST_CASE("run_sdpa_error + check_with_yardstick: a child that ran flash and was refused by cuDNN") {
  const Shape x = tiny_shape(false);
  AttentionPlan plan = tiny_plan(x, DType::bf16);
  const fs::path keep = fresh_dir("keep");
  plan.keep_io = keep.string();
  const std::string case_dir = (keep / "00_d16_s64_noncausal").string();
  plan.sdpa_error_cmd = "echo '{\"info\": \"fake torch\"}'; "
                        "echo '{\"case\": \"" + case_dir + "\", \"backend\": \"flash\", \"outputs\": [\"o\"]}'; "
                        "echo '{\"case\": \"" + case_dir + "\", \"backend\": \"cudnn\", "
                        "\"error\": \"RuntimeError: refused\"}'; :";
  const SdpaErrorRun run = run_sdpa_error(plan);
  CHECK(run.error.empty());
  CHECK(run.info == "fake torch");
  CHECK(run.kept);
  REQUIRE(run.find(x) != nullptr);
  CHECK(run.find(x)->dir == case_dir);
  write_reference_outputs(case_dir, "flash", x, 1.0);  // what the child would have written

  // ours: 1 % off (error 1e-2) against SDPA's ~1e-7: FAIL; ours = SDPA's outputs: PASS
  write_reference_outputs(case_dir, "ours", x, 1.01);
  GpuSamples ours = load_sdpa_samples(case_dir, "ours", x, Pass::fwd);
  Yardstick yard;
  CheckResult c = check_with_yardstick(plan, x, Pass::fwd, ours, run, yard);
  CHECK(error_of(c, "O") == doctest::Approx(1e-2).epsilon(1e-3));
  CHECK(yard.selected);
  CHECK(yard.status == "FAIL");
  REQUIRE(yard.backend_errors.size() == 1);
  CHECK(yard.backend_errors[0].second == "RuntimeError: refused");

  GpuSamples same = load_sdpa_samples(case_dir, "flash", x, Pass::bwd);
  c = check_with_yardstick(plan, x, Pass::bwd, same, run, yard);
  CHECK(yard.status == "PASS");
  CHECK(yard.tensors.size() == 3);

  Shape other = x;  // not a yardstick shape of this run: our check only
  other.s = 128;
  GpuSamples none;
  none.rows = sample_rows(other.s);
  (void)check_with_yardstick(plan, other, Pass::fwd, none, run, yard);
  CHECK(!yard.selected);
  fs::remove_all(keep);
}
