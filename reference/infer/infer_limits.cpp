// infer_limits.cpp: an inference run's limits, memory estimate, trace meta and JSON report (see
// infer_run.h).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <omp.h>

#include "core/attention_kernel.h"
#include "core/error.h"
#include "core/flops.h"
#include "core/util.h"
#include "infer/infer_run.h"
#include "run/experiment.h"
#include "run/memory_estimate.h"

namespace cplab {

namespace {

double dtype_bytes(const std::string& dtype) { return dtype == "float" ? 4.0 : 8.0; }

std::string gib(double bytes) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.1f GiB", bytes / (1024.0 * 1024.0 * 1024.0));
  return buf;
}

}  // namespace

double infer_cpu_flops_estimate(const InferRunSpec& rs) {
  const InferSpec& s = rs.spec;
  double pairs = 0;  // every query sees at most its request's P + T keys (in floating point: no overflow)
  for (index_t b = 0; b < s.B(); ++b)
    pairs += static_cast<double>(s.fields().fresh[static_cast<size_t>(b)]) *
             static_cast<double>(s.fields().cached[static_cast<size_t>(b)] + s.fields().fresh[static_cast<size_t>(b)]);
  const double h = static_cast<double>(s.h()), d = static_cast<double>(s.d()), dv = static_cast<double>(s.dv());
  return 2.0 * (fwd_flops(pairs, h, d, dv) + 30.0 * pairs * h);  // the variant and the dense oracle
}

// What run_infer allocates (infer_run.cpp, infer_pass_*.cpp, infer_decode_ag.cpp), at the peak of
// its two phases (the ranks' shards are freed before the oracle runs):
//   always      the double q, k, v (inputs), and the CP run's O, LSE in double (results)
//   the CP run  every rank's q, k, v in the run's dtype (shards: all of q, k, v once more), and
//     pass-KV   each rank's held shard and its message in flight, padded: 2 N Mkv hk (d + dv)
//     pass-Q    the visiting Q blocks and messages (2 N Mq h d) and the partials of every block on
//               every rank, their all-to-all blocks and what the owners receive: 3 N T h (dv + 1)
//     decode-ag the gathered Q on every rank and its messages (2 N T h d), the partials as pass-Q
//     and the kernel's score blocks per thread, the token masks (two int64 per query row)
//   the oracle  one request's k and v copied (the longest), its q, O, LSE, and the full O, LSE
// Measured (tests/memory_check.py style, /usr/bin/time's peak RSS, 2 threads): see docs/inference.md.
std::int64_t infer_memory_estimate(const InferRunSpec& rs) {
  const InferSpec& s = rs.spec;
  const double e = dtype_bytes(rs.dtype), N = static_cast<double>(s.N()), T = static_cast<double>(s.T());
  const double KV = static_cast<double>(s.KV()), h = static_cast<double>(s.h()), hk = static_cast<double>(s.hk());
  const double d = static_cast<double>(s.d()), dv = static_cast<double>(s.dv());
  const double inputs = 8.0 * (T * h * d + KV * hk * (d + dv));
  const double results = 8.0 * T * h * (dv + 1);
  const double shards = e * (T * h * d + KV * hk * (d + dv));
  double variant = 0;
  switch (s.mode()) {
    case InferMode::pass_kv: variant = 2.0 * e * N * static_cast<double>(s.Mkv()) * hk * (d + dv); break;
    case InferMode::pass_q:
    case InferMode::decode_pass_q:
      variant = 2.0 * e * N * static_cast<double>(s.Mq()) * h * d + 3.0 * e * N * T * h * (dv + 1); break;
    case InferMode::decode_ag: variant = 2.0 * e * N * T * h * d + 3.0 * e * N * T * h * (dv + 1); break;
  }
  const double threads = std::min(h, static_cast<double>(std::max(1, omp_get_max_threads())));
  const double scratch = threads * (2.0 * 8.0 * static_cast<double>(kRowBlock) * static_cast<double>(kKeyBlock) + 1048576.0);
  const double masks = 4.0 * 16.0 * T * (s.mode() == InferMode::decode_ag ? N : 1.0);
  const double cp_run = shards + variant + e * T * h * (dv + 1) + scratch + masks;
  index_t longest = 0, longest_t = 0;  // the oracle's largest request
  for (index_t b = 0; b < s.B(); ++b) {
    longest = std::max(longest, s.fields().cached[static_cast<size_t>(b)] + s.fields().fresh[static_cast<size_t>(b)]);
    longest_t = std::max(longest_t, s.fields().fresh[static_cast<size_t>(b)]);
  }
  const double lt = static_cast<double>(longest_t);
  const double oracle = 8.0 * (static_cast<double>(longest) * hk * (d + dv) + lt * h * (d + dv + 1)) + results + scratch;
  const double total = inputs + results + std::max(cp_run, oracle);
  return static_cast<std::int64_t>(1.05 * total + 16.0 * 1024 * 1024);  // the allocator's share, as memory_estimate.cpp
}

void validate(const InferRunSpec& rs) {
  require(rs.dtype == "double" || rs.dtype == "float", "dtype '" + rs.dtype + "' is not one of: double, float");
  const InferSpec& s = rs.spec;
  const double mem = static_cast<double>(infer_memory_estimate(rs));
  require(mem <= kMaxRunMemory, "this inference step needs about " + gib(mem) + " in the CPU reference at its peak (mode " +
                                    to_string(s.mode()) + ", cp " + num(s.N()) + ", " + num(s.P_total()) + " cached + " +
                                    num(s.T()) + " new tokens, heads " + num(s.h()) + ", kv-heads " + num(s.hk()) +
                                    ", head-dim " + num(s.d()) + ", " + rs.dtype + "); the limit is 16 GiB");
  const double work = infer_cpu_flops_estimate(rs);
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.1f TFLOP", work * 1e-12);
  require(rs.allow_long || work <= kMaxCpuFlops,
          std::string("this run needs about ") + buf + " of CPU work (CP variant + dense oracle), more than the " +
              "4 TFLOP limit (a few minutes on 2 cores); pass --allow-long to run it anyway");
}

std::map<std::string, std::string> infer_trace_meta(const InferRunSpec& rs) {
  const InferSpec& s = rs.spec;
  std::string cached, fresh;
  for (index_t b = 0; b < s.B(); ++b) {
    cached += (b ? "," : "") + num(s.fields().cached[static_cast<size_t>(b)]);
    fresh += (b ? "," : "") + num(s.fields().fresh[static_cast<size_t>(b)]);
  }
  return {{"mode", to_string(s.mode())}, {"inference", "1"}, {"kv_cache", cached}, {"new_tokens", fresh},
          {"cache_layout", to_string(s.fields().cache_layout)},
          {"layout", s.info().decode_layout ? "round-robin" : to_string(s.fields().layout)},
          {"mask", s.mask_name()}, {"heads", num(s.h())}, {"kv_heads", num(s.hk())}, {"head_dim", num(s.d())},
          {"v_head_dim", num(s.dv())}, {"dtype", rs.dtype}, {"cp", num(s.N())}};
}

nlohmann::json infer_report_json(const InferReport& r) {
  using nlohmann::json;
  auto opt = [](const std::optional<double>& e) { return e ? json(*e) : json(nullptr); };
  const InferSpec& s = r.spec.spec;
  std::int64_t total_msgs = 0;
  for (auto m : r.messages) total_msgs += m;
  json owners = json::array();
  for (index_t rank = 0; rank < s.N(); ++rank)
    owners.push_back({{"new_tokens", static_cast<index_t>(s.q_rows(rank).size())},
                      {"kv_rows", static_cast<index_t>(s.kv_rows(rank).size())}});
  return json{{"inference", true}, {"mode", to_string(s.mode())}, {"cp", s.N()},
              {"kv_cache", s.fields().cached}, {"new_tokens", s.fields().fresh},
              {"cache_layout", to_string(s.fields().cache_layout)},
              {"layout", s.info().decode_layout ? "round-robin" : to_string(s.fields().layout)},
              {"travels", s.info().travels}, {"causal", s.fields().causal},
              {"window", s.fields().window ? json(*s.fields().window) : json(nullptr)},
              {"chunk", s.fields().chunk ? json(*s.fields().chunk) : json(nullptr)}, {"sinks", s.sinks()},
              {"heads", s.h()}, {"kv_heads", s.hk()}, {"head_dim", s.d()}, {"v_head_dim", s.dv()},
              {"dtype", r.spec.dtype}, {"seed", r.spec.seed}, {"scale", s.scale()},
              {"errors", {{"o", opt(r.err_o)}, {"lse", opt(r.err_lse)}}},
              {"flops_per_rank", r.flops}, {"dense_flops", r.dense_flops},
              {"work_ratio", std::isfinite(r.work_ratio) ? json(r.work_ratio) : json(nullptr)},
              {"bytes_sent_per_rank", r.bytes_sent}, {"bytes_recv_per_rank", r.bytes_recv},
              {"messages_per_rank", r.messages}, {"messages", total_msgs}, {"ranks", owners},
              {"pad_rows", {{"q", s.Mq()}, {"kv", s.Mkv()}}}, {"non_finite", r.non_finite},
              {"memory_estimate", {{"bytes", infer_memory_estimate(r.spec)}}},
              {"seconds", r.seconds}, {"reference_seconds", r.reference_seconds}};
}

}  // namespace cplab
