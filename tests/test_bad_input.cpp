// test_bad_input.cpp: issue 19's bad inputs that the command line cannot reach alone: the JSON
// readers (trace files read by the viz, length distributions, calibration files, `cplab schedule
// --json` files) and the checked sizes of layouts, DCP batches and plans, each refused with the
// message that names the file, the field and the rule.
// What it is not: the command-line cases (tests/bad_input_check.py runs those, also under ASan).
#include <doctest/doctest.h>

#include <unistd.h>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "dcp/dcp_batches.h"
#include "dcp/dcp_bounds.h"
#include "layout/thd.h"
#include "model.h"  // viz/scene (cplab_viz_scene)
#include "modes/cp_spec.h"
#include "plan/perf_model.h"
#include "plan/planner.h"
#include "sim/trace.h"

namespace {

using namespace cplab;
using nlohmann::json;
namespace fs = std::filesystem;

// A temp directory removed at scope exit; write() puts a file in it and returns its path.
struct Scratch {
  fs::path dir;
  Scratch() {
    static int counter = 0;
    dir = fs::temp_directory_path() /
          ("cplab_test_bad_input_" + std::to_string(::getpid()) + "_" + std::to_string(counter++));
    fs::create_directories(dir);
  }
  ~Scratch() {
    std::error_code ec;
    fs::remove_all(dir, ec);
  }
  std::string write(const std::string& name, const std::string& text) const {
    std::ofstream(dir / name) << text;
    return (dir / name).string();
  }
  std::string path() const { return dir.string(); }
};

// a valid two-rank trace with one message and one tile; the cases below break one field each
json good_trace() {
  return json::parse(R"({"format": "cplab-trace", "version": 1, "cp": 2, "meta": {"mode": "p2p"}, "events": [
    {"kind": "send", "phase": "fwd", "step": 0, "rank": 0, "peer": 1, "op": "p2p", "tensor": "kv", "bytes": 64},
    {"kind": "tile", "phase": "fwd", "step": 0, "rank": 1, "peer": 1, "section": "diagonal", "mask": "causal",
     "rows": [[4, 4, 1]], "cols": [[4, 4, 1]], "pairs": 10, "flops": 640, "dur_us": 0}]})");
}

}  // namespace

TEST_CASE("bad input: a trace file's cp, ranks, peers, phases, kinds, steps, spans and counts") {
  CHECK(Trace::from_json(good_trace()).events().size() == 2);
  auto with = [](const std::string& pointer, const json& v) {
    json j = good_trace();
    j[json::json_pointer(pointer)] = v;
    return j;
  };
  CHECK_THROWS_WITH_AS(Trace::from_json(with("/cp", 2147483647)),
                       "trace cp = 2147483647 is out of range: it must be an integer in [1, 256]", Error);
  CHECK_THROWS_WITH_AS(Trace::from_json(with("/cp", 1000000000)),
                       "trace cp = 1000000000 is out of range: it must be an integer in [1, 256]", Error);
  CHECK_THROWS_WITH_AS(Trace::from_json(with("/cp", 4.5)),
                       "trace cp = 4.5 is not an integer: it must be an integer in [1, 256]", Error);
  CHECK_THROWS_WITH_AS(Trace::from_json(with("/version", "1")),
                       doctest::Contains("version is a JSON string, not a number"), Error);
  CHECK_THROWS_WITH_AS(Trace::from_json(with("/events/0/peer", -1)),
                       "events[0].peer (cp 2) = -1 is out of range: it must be an integer in [0, 1]", Error);
  CHECK_THROWS_WITH_AS(Trace::from_json(with("/events/1/peer", 2)),
                       "events[1].peer (cp 2) = 2 is out of range: it must be an integer in [0, 1]", Error);
  CHECK_THROWS_WITH_AS(Trace::from_json(with("/events/1/rank", 1.5)),
                       "events[1].rank (cp 2) = 1.5 is not an integer: it must be an integer in [0, 1]", Error);
  CHECK_THROWS_WITH_AS(Trace::from_json(with("/events/0/phase", "sideways")),
                       "events[0].phase 'sideways' is not fwd or bwd", Error);
  CHECK_THROWS_WITH_AS(Trace::from_json(with("/events/0/kind", "teleport")),
                       "unknown trace event kind 'teleport' (events[0].kind must be send, recv or tile)", Error);
  CHECK_THROWS_WITH_AS(Trace::from_json(with("/events/0/op", "broadcast")),
                       "events[0].op 'broadcast' is not one of: p2p, all_gather, all_to_all, reduce_scatter", Error);
  CHECK_THROWS_WITH_AS(
      Trace::from_json(with("/events/0/step", 4)),
      "events[0].step (a trace of cp 2 has steps 0..3) = 4 is out of range: it must be an integer in [0, 3]", Error);
  CHECK_THROWS_WITH_AS(Trace::from_json(with("/events/0/bytes", -64)),
                       doctest::Contains("events[0].bytes = -64 is out of range"), Error);
  CHECK_THROWS_WITH_AS(Trace::from_json(with("/events/1/dur_us", -1.0)),
                       doctest::Contains("events[1].dur_us = -1 is out of range"), Error);
  CHECK_THROWS_WITH_AS(Trace::from_json(with("/events/1/rows", json::parse("[[4, 4, 0]]"))),
                       "events[1].rows[0] stride = 0 is out of range: it must be an integer in [1, 1099511627776]",
                       Error);
  CHECK_THROWS_WITH_AS(
      Trace::from_json(with("/events/1/cols", json::parse("[[1099511627776, 2, 1]]"))),
      "events[1].cols[0] = [1099511627776, 2, 1] reaches past position 2^40 (the most tokens cplab takes)", Error);
  CHECK_THROWS_WITH_AS(Trace::from_json(with("/events/1/rows", json::parse("[[4, 4]]"))),
                       "events[1].rows[0] is not a span [begin, count, stride]", Error);
  CHECK_THROWS_WITH_AS(Trace::from_json(with("/meta/mode", 3)), "meta.mode is a JSON number, not a string", Error);
  json missing = good_trace();
  missing["events"][1].erase("peer");
  CHECK_THROWS_WITH_AS(Trace::from_json(missing), "events[1] has no field 'peer'", Error);
  json big = good_trace();  // two tiles of 2^62 - 1 FLOPs each: their sum would not fit 64 bits
  big["events"][1]["flops"] = kMaxTraceTotal - 1;
  big["events"].push_back(big["events"][1]);
  CHECK_THROWS_WITH_AS(Trace::from_json(big),
                       "the events' flops add up to more than 2^62 (a trace's 64-bit sums overflow)", Error);
}

TEST_CASE("bad input: the viz's trace and schedule files name the file, the field and the rule") {
  const Scratch s;
  viz::VizParams p;
  p.trace_file = s.path();
  CHECK_THROWS_WITH_AS(viz::RunModel::build(p), ("trace file " + s.path() + ": is a directory, not a file").c_str(),
                       Error);
  json huge = good_trace();
  huge["cp"] = 2147483647;  // once made a 2^31-rank lane table (bad_alloc)
  p.trace_file = s.write("cp.json", huge.dump());
  CHECK_THROWS_WITH_AS(
      viz::RunModel::build(p),
      (p.trace_file + ": trace cp = 2147483647 is out of range: it must be an integer in [1, 256]").c_str(), Error);

  viz::VizParams q;
  q.schedule_json = s.write("fraction.json", R"({"ranks": 8, "max_seqlen_per_rank": 4096, "lengths": [1.5, 2.5]})");
  CHECK_THROWS_WITH_AS(viz::SchedModel::build(q),
                       (q.schedule_json + ": lengths[0] (ranks x max_seqlen_per_rank = 32768) = 1.5 is not an integer: "
                                          "it must be an integer in [1, 32768]")
                           .c_str(),
                       Error);
  q.schedule_json = s.write("ranks.json", R"({"ranks": "8", "max_seqlen_per_rank": 4096, "lengths": [100]})");
  CHECK_THROWS_WITH_AS(viz::SchedModel::build(q), doctest::Contains("ranks.json: ranks is a JSON string, not a number"),
                       Error);
  q.schedule_json =
      s.write("huge.json", R"({"ranks": 8, "max_seqlen_per_rank": 4611686018427387904, "lengths": [100]})");
  CHECK_THROWS_WITH_AS(viz::SchedModel::build(q),
                       doctest::Contains("huge.json: max_seqlen_per_rank = 4611686018427387904 is out of range"),
                       Error);
  q.schedule_json = s.path();
  CHECK_THROWS_WITH_AS(viz::SchedModel::build(q),
                       ("schedule file " + s.path() + ": is a directory, not a file").c_str(), Error);
  viz::VizParams d;
  d.dist = CPLAB_SOURCE_DIR "/data/dcp/web_lognormal.json";
  d.batch_size = 9223372036854775807;
  CHECK_THROWS_WITH_AS(viz::SchedModel::build(d),
                       "batch size 9223372036854775807 is more than the 1000000 samples a DCP batch may hold", Error);
}

TEST_CASE("bad input: a length distribution's fields are whole numbers in range, from a file") {
  const Scratch s;
  auto dist = [&](const std::string& fields) {
    return s.write(
        "d.json", R"({"name": "t", "lognormal_mixture": [{"weight": 1, "median": 1024, "sigma": 1}], )" + fields + "}");
  };
  CHECK(read_length_dist(dist(R"("min": 1, "max": 100, "batch_size": 8)")).batch_size == 8);
  std::string f = dist(R"("min": 1.5, "max": 2.5)");
  CHECK_THROWS_WITH_AS(read_length_dist(f),
                       (f + ": min = 1.5 is not an integer: it must be an integer in [1, 4503599627370496]").c_str(),
                       Error);
  f = dist(R"("min": 1, "max": 1e30)");
  CHECK_THROWS_WITH_AS(read_length_dist(f),
                       (f + ": max = 1e+30 is not an integer: it must be an integer in [1, 4503599627370496]").c_str(),
                       Error);
  f = dist(R"("min": 1, "max": 100, "batch_size": 9223372036854775807)");
  CHECK_THROWS_WITH_AS(
      read_length_dist(f),
      (f + ": batch_size = 9223372036854775807 is out of range: it must be an integer in [1, 1000000]").c_str(), Error);
  f = s.write("w.json",
              R"({"name": "t", "min": 1, "max": 9, "lognormal_mixture": [{"weight": "1", "median": 1, "sigma": 1}]})");
  CHECK_THROWS_WITH_AS(read_length_dist(f),
                       (f + ": lognormal_mixture[0].weight is a JSON string, not a number").c_str(), Error);
  CHECK_THROWS_WITH_AS(read_length_dist(s.path()),
                       ("length distribution " + s.path() + ": is a directory, not a file").c_str(), Error);
  std::mt19937_64 rng(0);
  CHECK_THROWS_WITH_AS(sample_batch(read_length_dist(dist(R"("min": 1, "max": 100)")), 1000001, rng),
                       "batch size 1000001 must be in [1, 1000000]", Error);
}

TEST_CASE("bad input: a calibration file's rows name the file, the row and the field") {
  const Scratch s;
  std::string f = s.write("c.json", R"([{"pass": "fwd", "causal": true, "s": "4096", "tflops": 300}])");
  CHECK_THROWS_WITH_AS(read_calibration(f),
                       ("calibration file '" + f + "': row 0: s is a JSON string, not a number").c_str(), Error);
  f = s.write(
      "c2.json",
      R"([{"pass": "fwd", "causal": true, "s": 4096, "tflops": 300}, {"pass": 1, "causal": true, "s": 1, "tflops": 1}])");
  CHECK_THROWS_WITH_AS(read_calibration(f),
                       ("calibration file '" + f + "': row 1: pass is a JSON number, not \"fwd\" or \"bwd\"").c_str(),
                       Error);
  f = s.write("c3.json", R"([{"pass": "bwd", "causal": "yes", "s": 4096, "tflops": 300}])");
  CHECK_THROWS_WITH_AS(read_calibration(f),
                       ("calibration file '" + f + "': row 0: causal is a JSON string, not true or false").c_str(),
                       Error);
  f = s.write("c4.json", R"([{"pass": "bwd", "causal": true, "s": 4096, "tflops": 1e300}])");
  CHECK_THROWS_WITH_AS(read_calibration(f),
                       doctest::Contains("row 0: tflops = 1.0000000000000001e+300 is out of range"), Error);
  CHECK_THROWS_WITH_AS(read_calibration(s.path()),
                       ("calibration file " + s.path() + ": is a directory, not a file").c_str(), Error);
}

TEST_CASE("bad input: sizes are checked before anything is derived from them") {
  CpFields f;
  CHECK_THROWS_WITH_AS(parse_hcp("4611686018427387904,4", f),
                       "--hcp '4611686018427387904,4': size 4611686018427387904 is more than the 256 ranks cplab takes "
                       "(ICP x OCP must equal cp)",
                       Error);
  f.mode = Mode::a2a_p2p;
  f.cp = 4, f.seq = 32, f.icp = 4611686018427387904, f.ocp = 4;  // fields filled without parse_hcp
  CHECK_THROWS_WITH_AS(
      CpSpec{f}, "--hcp 4611686018427387904,4 multiplies to more than cp, not cp = 4 (ICP x OCP must equal cp)", Error);
  CpFields g;
  g.seq = 32, g.head_dim = 9223372036854775807;
  CHECK_THROWS_WITH_AS(
      CpSpec{g}, "head-dim 9223372036854775807 is more than 65536 (cplab's limit on head counts and head dims)", Error);
  g.head_dim = 64, g.seq = 9223372036854775800;
  CHECK_THROWS_WITH_AS(CpSpec{g}, "seq 9223372036854775800 is more than 2^40 tokens, the most cplab takes", Error);
  CHECK_THROWS_WITH_AS(Packing::padded({0, 1, 2}, 4611686018427387904),
                       "padding factor 4611686018427387904 must be in [1, 512] (2*cp with cp <= 256)", Error);
  CHECK_THROWS_WITH_AS(parse_cu_seqlens("0,5,-9223372036854775808"),
                       "cu_seqlens must strictly increase (sequence 1 would end at -9223372036854775808)", Error);
  CHECK_THROWS_WITH_AS(check_batch({100, 200}, 8, 4611686018427387904),
                       "max-seqlen-per-rank 4611686018427387904 is more than 2^40 = 1099511627776 tokens", Error);
  CHECK_THROWS_WITH_AS(lower_bounds({100}, 8, 4611686018427387904, CostModel{}),
                       "max-seqlen-per-rank 4611686018427387904 is more than 2^40 = 1099511627776 tokens", Error);
  CHECK_THROWS_WITH_AS(
      check_batch_size(8192, 4096, "--batch-size"),
      "--batch-size 8192 on 4096 ranks is more than 2^24 (rank, sample) pairs (the schedulers' records of "
      "what each rank runs; at most 4096 samples on 4096 ranks)",
      Error);
  check_batch_size(4096, 4096, "--batch-size");  // the largest batch on 4096 ranks passes
  PlanProblem p;
  p.gpus = 9223372036854775806;
  CHECK_THROWS_WITH_AS(
      check_plan_problem(p, 2),
      "gpus 9223372036854775806 is more than 256 (a plan traces every rank, as the CPU reference simulates them)",
      Error);
  p.gpus = 8;
  CHECK_THROWS_WITH_AS(plan_options(p,
                                    [] {
                                      PerfAssumptions a;
                                      a.gpus_per_node = 9223372036854775807;
                                      return a;
                                    }()),
                       "gpus-per-node 9223372036854775807 is more than 4096 (more than any NVLink domain)", Error);
}
