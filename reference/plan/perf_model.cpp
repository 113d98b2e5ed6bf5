// perf_model.cpp: presets, calibration and the step-by-step prediction (see perf_model.h).
#include "plan/perf_model.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "core/checked.h"
#include "core/error.h"

namespace cplab {

using nlohmann::json;

namespace {

const std::vector<LinkPreset>& links() {
  static const std::vector<LinkPreset> v = {
      {"nvlink4", "H100/H200 NVLink 4 + NVSwitch: NCCL send/recv and all-gather ~370 GB/s (nccl-tests #212), all-to-all 320 GB/s (GTC25 S72583); alpha: a 10-20 us placeholder",
       370, 370, 320, 15},
      {"ib-ndr", "InfiniBand NDR 400G, one NIC per GPU: 46-48 GB/s per NIC (nccl-tests #290), all-to-all 48 GB/s at 32 GPUs (GTC25); alpha: a 20-50 us placeholder",
       46, 46, 48, 35},
      {"pcie5", "PCIe Gen5 x16: 64 GB/s line rate per direction, assumed 80% achieved; not measured", 51, 51, 51, 20},
      {"h800-nvlink", "H800 NVLink: ~160 GB/s per direction measured (DeepSeek-V3 #28), the link of ring-flash-attention's table", 160, 160, 160, 15},
      {"eth100", "100 GbE RoCE v2, one 100G NIC per GPU: 12.5 GB/s line rate per direction, assumed ~92% achieved by NCCL on large messages (11.5 GB/s) for send/recv and all-gather, all-to-all assumed 10 GB/s (many flows, congestion control); alpha: a 30-50 us placeholder; not measured",
       11.5, 11.5, 10, 40},
  };
  return v;
}

const std::vector<GpuPreset>& gpus() {
  static const std::vector<GpuPreset> v = {
      {"h100", "H100 SXM, FA2-class kernel (mma.sync): ~350 TF forward, ~300 TF backward at d=128 (FA2's bars in the FlashAttention-3 paper, arXiv 2407.08608); HBM ~3 TB/s in practice", 350, 300, 3.0},
      {"h200", "H200: the H100's compute (attention is compute-bound), HBM 4.8 TB/s spec, assumed 90% achieved", 350, 300, 4.3},
      {"h800", "H800: the H100's compute and HBM, slower NVLink (use link h800-nvlink)", 350, 300, 3.0},
  };
  return v;
}

template <class P>
const P& find_preset(const std::vector<P>& all, const std::string& name, const char* what) {
  for (const P& p : all)
    if (p.name == name) return p;
  std::string names;
  for (const P& p : all) names += (names.empty() ? "" : ", ") + p.name;
  throw Error(std::string(what) + " '" + name + "' is not one of: " + names);
}

}  // namespace

LinkPreset link_preset(const std::string& name) { return find_preset(links(), name, "link preset"); }
GpuPreset gpu_preset(const std::string& name) { return find_preset(gpus(), name, "gpu preset"); }
std::vector<std::string> link_preset_names() {
  std::vector<std::string> v;
  for (const LinkPreset& p : links()) v.push_back(p.name);
  return v;
}
std::vector<std::string> gpu_preset_names() {
  std::vector<std::string> v;
  for (const GpuPreset& p : gpus()) v.push_back(p.name);
  return v;
}

double Calibration::tflops(Phase pass, bool causal, double rows) const {
  double best = 0, dist = INFINITY;
  for (int strict = 1; strict >= 0 && best == 0; --strict)
    for (const Point& p : points) {
      if (p.pass != pass || (strict && p.causal != causal)) continue;
      const double d = std::abs(std::log(std::max(rows, 1.0) / p.rows));
      if (d < dist) dist = d, best = p.tflops;
    }
  return best;
}

Calibration read_calibration(const std::string& path) {
  const std::string file = "calibration file '" + path + "'";
  std::error_code ec;
  require(std::filesystem::exists(path, ec), file + " cannot be read");
  const std::string text = read_text_file(path, "calibration file", kMaxCalibrationFileBytes);
  json j;
  try {
    j = json::parse(text);
  } catch (const json::exception& e) {
    throw Error(file + " is not JSON: " + e.what());
  }
  const json& rows = j.is_object() && j.contains("rows") ? j["rows"] : j;
  require(rows.is_array(), file + " needs an array of rows (or {\"rows\": [...]})");
  Calibration c;
  c.source = path;
  for (size_t i = 0; i < rows.size(); ++i) {
    const json& r = rows[i];
    const std::string row = file + ": row " + std::to_string(i);
    require(r.is_object() && r.contains("pass") && r.contains("s") && r.contains("tflops") && r.contains("causal"),
            file + ": every row needs pass, causal, s and tflops");
    require(r["pass"].is_string(),
            row + ": pass is a JSON " + std::string(r["pass"].type_name()) + ", not \"fwd\" or \"bwd\"");
    const std::string pass = r["pass"].get<std::string>();
    require(pass == "fwd" || pass == "bwd", file + ": pass '" + pass + "' is not fwd or bwd");
    require(r["causal"].is_boolean(),
            row + ": causal is a JSON " + std::string(r["causal"].type_name()) + ", not true or false");
    const double s = json_real(r["s"], row + ": s", -kMaxCalibrationRows, kMaxCalibrationRows);
    const double tf = json_real(r["tflops"], row + ": tflops", -kMaxCalibrationTflops, kMaxCalibrationTflops);
    require(s > 0 && tf > 0, file + ": s and tflops must be positive");
    c.points.push_back({pass == "fwd" ? Phase::fwd : Phase::bwd, r["causal"].get<bool>(), s, tf});
  }
  require(!c.points.empty(), file + " has no rows");
  return c;
}

json PerfAssumptions::to_json() const {
  auto link = [](const LinkPreset& l) {
    return json{{"name", l.name}, {"p2p_GBps", l.p2p_GBps}, {"allgather_GBps", l.allgather_GBps}, {"a2a_GBps", l.a2a_GBps},
                {"alpha_us", l.alpha_us}, {"source", l.source}};
  };
  return json{{"gpu", {{"name", gpu.name}, {"fwd_tflops", gpu.fwd_tflops}, {"bwd_tflops", gpu.bwd_tflops}, {"hbm_TBps", gpu.hbm_TBps}, {"source", gpu.source}}},
              {"intra_node", link(intra)}, {"inter_node", link(inter)}, {"gpus_per_node", gpus_per_node},
              {"bytes_per_element", bytes_per_element}, {"tau_us", tau_us},
              {"calibration", calibration.empty() ? json(nullptr) : json(calibration.source)}};
}

// the trace's messages carry the run's dtype (float or double); the model sends bf16 (or
// bytes_per_element), dK/dV included, as Transformer Engine does
double wire_scale(const RunSpec& spec, const PerfAssumptions& a) { return a.bytes_per_element / (spec.dtype == "double" ? 8.0 : 4.0); }

TraceShape trace_shape(const RunSpec& spec) {
  return TraceShape{static_cast<double>(spec.cp.d()), static_cast<double>(spec.cp.dv()), spec.dtype == "double" ? 8.0 : 4.0,
                    static_cast<double>(spec.cp.S()), spec.cp.causal()};
}

PerfPrediction predict(const Trace& trace, const RunSpec& spec, const PerfAssumptions& a) { return predict(trace, trace_shape(spec), a); }

PerfPrediction predict(const Trace& trace, const TraceShape& shape, const PerfAssumptions& a) {
  require(a.gpus_per_node >= 1, "gpus per node must be >= 1");
  require(a.gpu.fwd_tflops > 0 && a.gpu.bwd_tflops > 0 && a.gpu.hbm_TBps > 0, "the GPU's TFLOP/s and HBM TB/s must be positive");
  const int N = trace.cp();
  const double d = shape.d, dv = shape.dv;
  auto rate = [&](Phase p, bool causal, double rows) {
    const double preset = p == Phase::fwd ? a.gpu.fwd_tflops : a.gpu.bwd_tflops;
    const double cal = a.calibration.empty() ? 0 : a.calibration.tflops(p, causal, rows);
    return (cal > 0 ? cal : preset) * 1e12;
  };
  auto node = [&](int r) { return r / a.gpus_per_node; };
  auto bandwidth = [](const LinkPreset& l, const std::string& op) {
    return (op == "all_to_all" ? l.a2a_GBps : op == "p2p" ? l.p2p_GBps : l.allgather_GBps) * 1e9;
  };
  const double elem_scale = a.bytes_per_element / shape.trace_bytes_per_element;
  const auto steps = trace.steps();
  std::map<std::pair<Phase, int>, size_t> index;
  for (size_t i = 0; i < steps.size(); ++i) index[steps[i]] = i;
  // per step, per rank: compute (us) and comm seconds per link class (0 intra, 1 inter) before alpha
  std::vector<std::vector<double>> compute(steps.size(), std::vector<double>(static_cast<size_t>(N), 0.0));
  std::vector<std::vector<std::array<double, 2>>> comm(steps.size(), std::vector<std::array<double, 2>>(static_cast<size_t>(N), {0.0, 0.0}));
  std::vector<std::vector<std::array<bool, 2>>> used(steps.size(), std::vector<std::array<bool, 2>>(static_cast<size_t>(N), {false, false}));
  std::vector<char> merged(static_cast<size_t>(N), 0);
  double useful[2] = {0, 0};
  PerfPrediction p;
  p.tile_us.assign(trace.events().size(), 0.0);
  for (size_t i = 0; i < trace.events().size(); ++i) {
    const Event& e = trace.events()[i];
    const size_t s = index.at({e.phase, e.step});
    const auto r = static_cast<size_t>(e.rank);
    if (e.kind == EventKind::tile) {
      if (e.flops <= 0) continue;
      double rows = 0;
      for (const Span& sp : e.rows) rows += static_cast<double>(sp.count);
      const bool causal = e.mask != "none";
      double& t = p.tile_us[i];
      t = static_cast<double>(e.flops) / rate(e.phase, causal, rows) * 1e6 + a.tau_us;
      compute[s][r] += t;
      useful[e.phase == Phase::fwd ? 0 : 1] += static_cast<double>(e.flops);
      if (e.phase == Phase::fwd) {
        if (merged[r]) {  // every forward partial after the first is merged into the accumulator
          const double heads = static_cast<double>(e.flops) / (2.0 * static_cast<double>(e.pairs) * (d + dv));
          const double merge = rows * heads * (dv * (a.bytes_per_element + 8) + 12) / (a.gpu.hbm_TBps * 1e12) * 1e6;
          compute[s][r] += merge;
          t += merge;
        }
        merged[r] = 1;
      }
    } else if (e.kind == EventKind::send) {
      const int cls = node(e.rank) == node(e.peer) ? 0 : 1;
      const LinkPreset& l = cls == 0 ? a.intra : a.inter;
      comm[s][r][static_cast<size_t>(cls)] += static_cast<double>(e.bytes) * elem_scale / bandwidth(l, e.op) * 1e6;
      used[s][r][static_cast<size_t>(cls)] = true;
    }
  }
  for (size_t s = 0; s < steps.size(); ++s) {
    StepTime st{steps[s].first, steps[s].second, 0, 0, 0, compute[s], std::vector<double>(static_cast<size_t>(N), 0.0)};
    for (size_t r = 0; r < static_cast<size_t>(N); ++r) {
      double c = 0;
      for (int cls = 0; cls < 2; ++cls)
        if (used[s][r][static_cast<size_t>(cls)]) c = std::max(c, (cls == 0 ? a.intra : a.inter).alpha_us + comm[s][r][static_cast<size_t>(cls)]);
      st.rank_comm_us[r] = c;
      st.compute_us = std::max(st.compute_us, compute[s][r]);
      st.comm_us = std::max(st.comm_us, c);
      st.time_us = std::max(st.time_us, std::max(compute[s][r], c));
    }
    (st.phase == Phase::fwd ? p.fwd_us : p.bwd_us) += st.time_us;
    p.exposed_comm_us += st.time_us - st.compute_us;
    p.steps.push_back(st);
  }
  const double rows_per_rank = shape.query_rows / N;
  if (p.fwd_us > 0) p.efficiency_fwd = useful[0] / (N * rate(Phase::fwd, shape.causal, rows_per_rank) * p.fwd_us * 1e-6);
  if (p.bwd_us > 0) p.efficiency_bwd = useful[1] / (N * rate(Phase::bwd, shape.causal, rows_per_rank) * p.bwd_us * 1e-6);
  return p;
}

}  // namespace cplab
