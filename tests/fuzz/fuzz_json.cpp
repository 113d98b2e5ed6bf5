// fuzz_json.cpp: the JSON files cplab and cplab-viz read, each from valid documents edited at the
// tree level (a value replaced, a member deleted, an element duplicated) or at the byte level.
//   trace         cplab-viz --trace (sim/trace.h Trace::from_json, then the timeline's model)
//   distribution  --dist (dcp/dcp_batches.h read_length_dist, then a batch drawn from it)
//   calibration   cplab plan --calibration (plan/perf_model.h read_calibration)
//   schedule      cplab-viz --schedule-json (the batch of a `cplab schedule --json` file, scheduled)
#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/checked.h"
#include "dcp/dcp_batches.h"
#include "fuzz.h"
#include "model.h"
#include "plan/perf_model.h"
#include "plan/trace_plan.h"

namespace cplab::fuzz {

namespace {

// a valid document, then edited: 3 in 4 at the tree level, else at the byte level
std::string variant(Fuzz& fz, const nlohmann::json& seed, std::string& label) {
  if (fz.coin(0.75)) {
    const nlohmann::json j = fz.mutate_json(seed);
    label = "tree-edited";
    return j.dump();
  }
  label = "byte-edited";
  return fz.mutate_bytes(seed.dump());
}

nlohmann::json planned_trace(Mode mode, index_t cp, bool backward) {
  CpFields f = viz::VizParams::default_fields();
  f.mode = mode;
  f.cp = cp;
  f.seq = 8 * cp;
  f.heads = f.kv_heads = 4;
  RunSpec s{CpSpec(f)};
  s.backward = backward;
  return plan_trace(s).to_json();
}

}  // namespace

void fuzz_json_trace(Fuzz& fz, Tally& t, int n) {
  auto model = [&](const std::string& path) {
    viz::VizParams p;
    p.trace_file = path;
    return viz::RunModel::build(p);
  };
  t.must_refuse("directory as --trace", [&] { model(fz.scratch); });
  const nlohmann::json seed = planned_trace(Mode::p2p, 2, true);
  for (const auto& [name, cp] : {std::pair<const char*, nlohmann::json>{"cp 2147483647", 2147483647},
                                 {"cp 1000000000", 1000000000}, {"cp 4.5", 4.5}, {"cp -1", -1}}) {
    nlohmann::json j = seed;
    j["cp"] = cp;
    const std::string path = fz.write("named_trace.json", j.dump());
    t.must_refuse(std::string("trace with ") + name, [&] { model(path); });
  }
  const std::vector<nlohmann::json> seeds = {seed, planned_trace(Mode::a2a, 2, false), planned_trace(Mode::allgather, 4, true)};
  for (int i = 0; i < n; ++i) {
    std::string label;
    const std::string path = fz.write("trace.json", variant(fz, fz.pick(seeds), label));
    t.run("trace case " + std::to_string(i) + " (" + label + ")", [&] {
      const viz::RunModel m = model(path);
      return m.lanes.size() == 2 * static_cast<std::size_t>(m.trace.cp()) ? std::string() : std::string("lanes != 2 cp");
    });
  }
}

void fuzz_json_dist(Fuzz& fz, Tally& t, int n) {
  t.must_refuse("directory as --dist", [&] { read_length_dist(fz.scratch); });
  std::vector<nlohmann::json> seeds;
  for (const auto& e : std::filesystem::directory_iterator(std::string(CPLAB_SOURCE_DIR) + "/data/dcp")) {
    const nlohmann::json j = nlohmann::json::parse(read_text_file(e.path().string(), "seed"));
    if (j.contains("lognormal_mixture") || j.contains("lengths")) seeds.push_back(j);
  }
  {
    nlohmann::json j = seeds.at(0);
    j["batch_size"] = 1e12;
    const std::string path = fz.write("named_dist.json", j.dump());
    t.must_refuse("batch_size 1e12", [&] { read_length_dist(path); });
  }
  for (const char* field : {"sigma", "median"}) {  // issue 39: sigma 1e300 was accepted (every draw clamped)
    nlohmann::json j = seeds.at(0);
    if (!j.contains("lognormal_mixture")) break;
    j["lognormal_mixture"][0][field] = 1e300;
    const std::string path = fz.write("named_dist.json", j.dump());
    t.must_refuse(std::string(field) + " 1e300", [&] { read_length_dist(path); });
  }
  for (int i = 0; i < n; ++i) {
    std::string label;
    const std::string path = fz.write("dist.json", variant(fz, fz.pick(seeds), label));
    t.run("distribution case " + std::to_string(i) + " (" + label + ")", [&]() -> std::string {
      const LengthDist d = read_length_dist(path);
      std::mt19937_64 rng(1);
      const std::vector<std::int64_t> b = sample_batch(d, std::min<std::int64_t>(d.batch_size, 64), rng);
      for (std::int64_t L : b)
        if (L < 1) return "a drawn length " + std::to_string(L) + " < 1";
      return {};
    });
  }
}

void fuzz_json_calibration(Fuzz& fz, Tally& t, int n) {
  t.must_refuse("directory as --calibration", [&] { read_calibration(fz.scratch); });
  const nlohmann::json seed = {{"rows",
                                {{{"pass", "fwd"}, {"causal", true}, {"s", 4096}, {"tflops", 350.5}},
                                 {{"pass", "bwd"}, {"causal", false}, {"s", 16384}, {"tflops", 290.0}}}}};
  {
    nlohmann::json j = seed;
    j["rows"][0]["s"] = "4096";
    const std::string path = fz.write("named_cal.json", j.dump());
    t.must_refuse("a row's s is a string", [&] { read_calibration(path); });
  }
  for (int i = 0; i < n; ++i) {
    std::string label;
    const std::string path = fz.write("cal.json", variant(fz, fz.coin(0.2) ? seed["rows"] : seed, label));
    t.run("calibration case " + std::to_string(i) + " (" + label + ")", [&]() -> std::string {
      const Calibration c = read_calibration(path);
      for (const auto& p : c.points)
        if (!(p.rows > 0 && p.tflops > 0) || !std::isfinite(p.rows) || !std::isfinite(p.tflops)) return "a row with s or tflops not positive and finite";
      return {};
    });
  }
}

void fuzz_json_schedule(Fuzz& fz, Tally& t, int n) {
  auto model = [&](const std::string& path) {
    viz::VizParams p;
    p.schedule_json = path;
    return viz::SchedModel::build(p);
  };
  t.must_refuse("directory as --schedule-json", [&] { model(fz.scratch); });
  const nlohmann::json seed = {{"lengths", {32768, 16384, 8192, 4096, 4096, 2048}}, {"ranks", 8}, {"max_seqlen_per_rank", 8192}};
  {
    nlohmann::json j = seed;
    j["max_seqlen_per_rank"] = 4611686018427387904LL;
    const std::string path = fz.write("named_sched.json", j.dump());
    t.run("[max_seqlen_per_rank 2^62]", [&] { return model(path), std::string(); });
  }
  for (int i = 0; i < n; ++i) {
    std::string label;
    const std::string path = fz.write("sched.json", variant(fz, seed, label));
    t.run("schedule case " + std::to_string(i) + " (" + label + ")", [&] { return model(path), std::string(); });
  }
}

}  // namespace cplab::fuzz
