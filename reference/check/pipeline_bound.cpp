// pipeline_bound.cpp: the emulated run of --precision and the bound it gives (pipeline_bound.h).
#include "check/pipeline_bound.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>

#include "core/dtype.h"
#include "core/interrupt.h"
#include "core/util.h"
#include "modes/mode_table.h"

namespace cplab {

namespace {

// the rounding of a value saved as d (none for float64)
std::optional<DType> saved_as(NpyDtype d) {
  switch (d) {
    case NpyDtype::f4: return DType::f32;
    case NpyDtype::f2: return DType::f16;
    case NpyDtype::bf16: return DType::bf16;
    case NpyDtype::f8: break;
  }
  return std::nullopt;
}

// "ring" (p2p), "a2a+p2p ring", else the mode's name
std::string mode_words(Mode m) {
  if (m == Mode::p2p) return "ring";
  if (m == Mode::a2a_p2p) return "a2a+p2p ring";
  return to_string(m);
}

// the bound's floor: kPipelineFloorUlps units of roundoff of the arithmetic, and never below float64's
// tolerance (error_map.h)
double bound_floor(const std::string& dtype) {
  const double u = dtype == "float" ? std::ldexp(1.0, -24) : std::ldexp(1.0, -53);
  return std::max(kPipelineFloorUlps * u, dtype_tolerance(CheckTensor::o, NpyDtype::f8));
}

}  // namespace

CpSpec pipeline_spec(const CpSpec& spec, const Precision& p) {
  CpFields f = spec.fields();
  apply_storage(p, f);
  return CpSpec(f);
}

PipelineBound pipeline_bound(const CpSpec& spec, const Inputs& in, bool backward, const Precision& p,
                             const std::array<ClaimedTensor, kCheckTensors>& out,
                             const std::array<Tensor3<double>, kCheckTensors>& ref, const std::array<double, kCheckTensors>& scale) {
  interruption_point();  // and every step of its run (sim/comm.h)
  const auto t0 = std::chrono::steady_clock::now();
  PipelineBound b;
  b.precision = p;
  if (!b.precision.accumulate) b.precision.accumulate = "float";  // the GPU's: fp32 unless fp64 is said
  b.stages = to_string(b.precision);
  b.dtype = *b.precision.accumulate;
  RunSpec rs;
  rs.cp = pipeline_spec(spec, p);
  rs.backward = backward;
  rs.dtype = b.dtype;
  rs.precision = b.stages;
  b.label = "a correct " + mode_words(spec.mode()) + " (" + b.stages + ") at cp " + num(spec.P());
  Inputs rounded = in;  // as the GPU sees them (a no-op when the files hold inputs= already)
  if (p.inputs) round_inputs(rounded, *p.inputs);
  const RunReport run = run_experiment(rs, rounded);
  std::array<Tensor3<double>, kCheckTensors> x;
  x[idx(CheckTensor::o)] = run.o;
  x[idx(CheckTensor::lse)] = lse_tensor(run.lse);
  x[idx(CheckTensor::dq)] = run.dq;
  x[idx(CheckTensor::dk)] = run.dk;
  x[idx(CheckTensor::dv)] = run.dv;
  const double floor = bound_floor(b.dtype);
  for (CheckTensor t : kAllCheckTensors) {
    const int i = idx(t);
    b.emulated[i] = b.bound[i] = std::numeric_limits<double>::quiet_NaN();
    if (!out[i].present || x[i].n == 0) continue;
    if (const std::optional<DType> d = saved_as(out[i].dtype)) round_in_place(x[i].data.data(), x[i].data.size(), *d);
    b.emulated[i] = cell_diff(x[i], ref[i], nullptr, t == CheckTensor::lse ? &spec.packing() : nullptr) / scale[i];
    b.bound[i] = std::max(kPipelineMargin * b.emulated[i], floor);
  }
  b.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return b;
}

std::vector<CheckLevel> pipeline_levels(const PipelineBound& b, const std::vector<CheckLevel>& dtype_levels,
                                        const std::array<ClaimedTensor, kCheckTensors>& out) {
  std::vector<CheckLevel> levels(1);
  levels[0].name = b.label;
  for (CheckTensor t : kAllCheckTensors)  // an output not given keeps the dtype level's (never compared)
    levels[0].tol[idx(t)] = out[idx(t)].present ? b.bound[idx(t)] : dtype_levels[0].tol[idx(t)];
  for (size_t k = 0; k < dtype_levels.size(); ++k) {
    CheckLevel l = dtype_levels[k];
    // the outputs' own dtypes' level reads as the dtype of O ("equivalent within bfloat16's tolerance only")
    if (k == 0 && l.name == "the outputs' dtypes") l.name = npy_dtype_name(out[idx(CheckTensor::o)].dtype);
    bool looser = false;
    for (CheckTensor t : kAllCheckTensors) {
      const double prev = levels.back().tol[idx(t)];
      l.tol[idx(t)] = std::max(l.tol[idx(t)], prev);
      looser = looser || (out[idx(t)].present && l.tol[idx(t)] > prev);
    }
    if (!looser) continue;
    if (levels.size() > 1 && levels.back().name == l.name) levels.back() = l;  // the same dtype twice: the looser
    else levels.push_back(l);
  }
  return levels;
}

std::pair<double, CheckTensor> pipeline_ratio(const PipelineBound& b, const std::array<double, kCheckTensors>& err) {
  std::pair<double, CheckTensor> w{0.0, CheckTensor::o};
  for (CheckTensor t : kAllCheckTensors) {
    const int i = idx(t);
    if (std::isnan(b.bound[i]) || std::isnan(err[i])) continue;
    const double r = err[i] / b.bound[i];
    if (r > w.first) w = {r, t};
  }
  return w;
}

namespace {

// "2.1" for a ratio
std::string ratio_text(double r) {
  char s[32];
  std::snprintf(s, sizeof s, r < 10 ? "%.1f" : "%.0f", r);
  return s;
}

}  // namespace

std::string pipeline_verdict(const std::string& verdict, const PipelineBound& b, const std::array<double, kCheckTensors>& err,
                             bool outputs_equivalent, const std::string& noise_level) {
  if (verdict == "equivalent") {
    std::string s;
    for (CheckTensor t : kAllCheckTensors)
      if (!std::isnan(b.bound[idx(t)])) s += std::string(s.empty() ? "" : ", ") + tensor_label(t) + " " + sci_text(b.bound[idx(t)]);
    return "equivalent (within the error " + b.label + " has on these inputs: " + s + ")";
  }
  if (outputs_equivalent) return verdict;  // d s_h wrong: not the bound's business
  const auto [r, t] = pipeline_ratio(b, err);
  if (!(r > 1)) return verdict;  // NaN / inf only: the finite values are within the bound
  const std::string above = tensor_label(t) + std::string(" ") + ratio_text(r) + "x above the error " + b.label + " has on these inputs";
  if (!noise_level.empty())
    return "NOT equivalent: " + above + " (within " + noise_level +
           "'s fixed tolerance: no known fault, a noisier computation or merge than this pipeline)";
  return verdict + " (" + above + ")";
}

std::vector<std::string> pipeline_lines(const PipelineBound& b, const std::array<double, kCheckTensors>& err) {
  std::vector<std::string> v;
  v.push_back("the tolerance is the error " + b.label + " has on these inputs: cplab's own CP run so (" + b.dtype +
              " arithmetic, outputs rounded to their files' dtypes), its error x " + approx(kPipelineMargin) + " (at least " +
              sci_text(bound_floor(b.dtype)) +
              "); " + approx(b.seconds) + " s");
  for (CheckTensor t : kAllCheckTensors) {
    const int i = idx(t);
    if (std::isnan(b.bound[i])) continue;
    char s[200];
    std::snprintf(s, sizeof s, "%-4s emulated %-8s bound %-8s claimed %-8s %sx the bound", tensor_label(t), sci_text(b.emulated[i]).c_str(),
                  sci_text(b.bound[i]).c_str(), sci_text(err[i]).c_str(), ratio_text(err[i] / b.bound[i]).c_str());
    v.push_back(s);
  }
  return v;
}

nlohmann::json pipeline_json(const PipelineBound& b, const std::array<double, kCheckTensors>& err) {
  using nlohmann::json;
  auto number = [](double x) { return std::isfinite(x) ? json(x) : json(nullptr); };
  json emulated = json::object(), bound = json::object(), ratio = json::object();
  for (CheckTensor t : kAllCheckTensors) {
    const int i = idx(t);
    if (std::isnan(b.bound[i])) continue;
    emulated[tensor_key(t)] = number(b.emulated[i]);
    bound[tensor_key(t)] = number(b.bound[i]);
    ratio[tensor_key(t)] = number(err[i] / b.bound[i]);
  }
  const auto [worst, t] = pipeline_ratio(b, err);
  return json{{"stages", b.stages}, {"label", b.label}, {"dtype", b.dtype}, {"margin", kPipelineMargin},
              {"emulated_errors", emulated}, {"bounds", bound}, {"ratios", ratio},
              {"worst", {{"output", tensor_key(t)}, {"ratio", number(worst)}}}, {"seconds", b.seconds}};
}

}  // namespace cplab
