// cmd_run_infer.cpp: `cplab run --kv-cache P` (cmd_run_infer.h).
#include "cmd_run_infer.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>

#include "commands.h"
#include "core/error.h"
#include "core/util.h"
#include "infer/infer_plan.h"
#include "infer/infer_run.h"
#include "run_text.h"

namespace cplab::app {

namespace {

// a closed form as docs write it, without its markdown code quotes
std::string plain(std::string x) {
  x.erase(std::remove(x.begin(), x.end(), '`'), x.end());
  return x;
}

std::string mib(std::int64_t bytes) { return fmt("%.1f MiB", static_cast<double>(bytes) / (1 << 20)); }

// the mask as the report names it: "causal", "causal, window 9", "non-causal", "non-causal, sinks", ...
std::string mask_text(const InferSpec& s) {
  std::string m = s.mask_name();
  if (m.rfind("none", 0) == 0) return "non-causal" + m.substr(4);
  return s.fields().causal ? m : "non-causal, " + m;
}

void print_header(const InferRunSpec& rs) {
  const InferSpec& s = rs.spec;
  const InferInfo& info = s.info();
  std::cout << "cplab run (inference): mode " << info.title << ", " << info.travels << " travels, cache layout "
            << to_string(s.fields().cache_layout) << ", new tokens "
            << (info.decode_layout ? std::string("round-robin by position") : "split " + to_string(s.fields().layout))
            << ", " << mask_text(s) << ", cp " << s.N() << ", heads " << s.h() << " (kv " << s.hk() << "), head-dim "
            << s.d() << " (v " << s.dv() << "), " << rs.dtype << ", forward\n";
  std::cout << (s.B() == 1 ? "1 request" : std::to_string(s.B()) + " requests")
            << ": P = " << join_counts(s.fields().cached) << " cached, T = " << join_counts(s.fields().fresh)
            << " new (query rows " << s.T() << ", KV rows " << s.KV()
            << ": per request the cache, then the new tokens)\n";
  std::cout << "shards: the most new tokens on a rank Mq = " << s.Mq()
            << ", the most KV rows (cache + new) Mkv = " << s.Mkv()
            << (info.ring ? std::string("; the ring's messages are padded to the largest shard, as the paper does (") +
                                (std::string(info.travels) == "KV" ? "Mkv" : "Mq") + " rows)"
                          : std::string(""))
            << "\n";
}

// the per-rank table, the totals, what travelled (summed from the trace by operation and tensor)
// and the closed forms of infer_table.h against the trace
void print_ranks(const InferReport& r) {
  const InferSpec& s = r.spec.spec;
  const std::int64_t e = r.spec.dtype == "float" ? 4 : 8;
  std::cout << "\nrank  new tokens   KV rows  cache rows   FLOPs       bytes sent     bytes recv   messages\n";
  std::int64_t tf = 0, tb = 0, tm = 0;
  std::vector<index_t> off;
  for (index_t k = 0; k < s.N(); ++k) {
    const size_t i = static_cast<size_t>(k);
    std::printf("%4lld %11zu %9zu %11zu %11.4g %14lld %14lld %10lld\n", static_cast<long long>(k), s.q_rows(k).size(),
                s.kv_rows(k).size(), s.cache_rows(k).size(), static_cast<double>(r.flops[i]),
                static_cast<long long>(r.bytes_sent[i]), static_cast<long long>(r.bytes_recv[i]),
                static_cast<long long>(r.messages[i]));
    tf += r.flops[i], tb += r.bytes_sent[i], tm += r.messages[i];
    const CommPerRank c = s.comm_per_rank(k, e);
    if (c.fwd_bytes != r.bytes_sent[i] || c.fwd_msgs != r.messages[i]) off.push_back(k);
  }
  std::fflush(stdout);
  std::cout << "\nwork ratio (max / min FLOPs over ranks): "
            << (std::isfinite(r.work_ratio) ? fmt("%.2f", r.work_ratio) : std::string("inf (a rank has no work)"))
            << "\nFLOPs: ranks sum to " << fmt("%.4g", static_cast<double>(tf))
            << ", dense attention with the offset needs " << fmt("%.4g", static_cast<double>(r.dense_flops))
            << (tf == r.dense_flops ? " (equal: no visible pair computed twice, none missed)" : " (they differ)")
            << "\ncommunication: " << tb << " bytes in " << tm << " messages; the closed forms of " << s.info().name
            << " (infer_table.h: " << plain(s.info().readme[0]) << " messages, " << plain(s.info().readme[1])
            << " bytes per rank) "
            << (off.empty() ? "equal the trace on every rank" : "DIFFER from the trace on rank " + join_counts(off))
            << "\n";
  // what travelled: messages sent, by operation and payload
  std::map<std::pair<std::string, std::string>, std::pair<std::int64_t, std::int64_t>> by;
  for (const Event& ev : r.trace.events())
    if (ev.kind == EventKind::send) {
      auto& [n, b] = by[{ev.op, ev.tensor}];
      ++n, b += ev.bytes;
    }
  std::cout << "what travelled:" << (by.empty() ? " nothing (one rank)" : "") << "\n";
  for (const auto& [key, v] : by)
    std::cout << "  " << key.first << " " << key.second << ": " << v.first << " message" << (v.first == 1 ? "" : "s")
              << ", " << v.second << " bytes\n";
}

// the sink logits of a step whose q, k, v come from files: --sink-logits, else drawn from --seed as
// make_infer_inputs draws them for generated inputs (so the same seed gives the same sinks)
std::vector<double> sinks_of(const InferRunSpec& rs) {
  const InferFields& f = rs.spec.fields();
  if (!f.sinks) return {};
  if (!f.sink_logits.empty()) return f.sink_logits;
  return make_infer_inputs(rs).sinks;
}

// --plan-only: the trace the step would record (infer_plan.h) and the table summed from it
int plan_action(const InferRunArgs& a, const InferRunSpec& rs) {
  const std::pair<const char*, const std::string*> tensors[] = {
      {"q", &a.files.q}, {"k", &a.files.k}, {"v", &a.files.v}, {"out-dir", &a.files.out_dir}};
  for (const auto& [name, path] : tensors)
    require(path->empty(),
            std::string("--") + name + " cannot go with --plan-only (a planned run reads and writes no tensors)");
  InferReport r{rs, {}, {}, {}, {}, {}, {}, {}, 0, 0, 0, 0, Trace(static_cast<int>(rs.spec.N())), {}, {}};
  r.trace = infer_plan_trace(rs);
  prepare_outputs(a.files, false);
  if (check_only) return 0;
  r.flops = r.trace.flops_per_rank();
  r.bytes_sent = r.trace.bytes_sent_per_rank();
  r.bytes_recv = r.trace.bytes_recv_per_rank();
  r.messages = r.trace.messages_sent_per_rank();
  r.dense_flops = infer_dense_flops(rs.spec);
  const auto [lo, hi] = std::minmax_element(r.flops.begin(), r.flops.end());
  r.work_ratio = *lo > 0 ? static_cast<double>(*hi) / static_cast<double>(*lo) : INFINITY;
  RunReport holder;  // write_outputs' carrier: the trace files only (no --out-dir here)
  holder.trace = r.trace;
  write_outputs(a.files, holder, false, false);
  if (a.json) {
    nlohmann::json j = infer_report_json(r);
    j["planned"] = true;  // nothing computed: no errors, no times
    for (const char* k : {"seconds", "reference_seconds"}) j[k] = nullptr;
    std::cout << j.dump(2) << "\n";
    return 0;
  }
  print_header(rs);
  std::cout << "\nPLANNED ONLY (--plan-only): no attention was computed and no result checked; the figures\n"
               "below are summed from the trace this step would record (tile durations 0).\n";
  print_ranks(r);
  return 0;
}

}  // namespace

int run_infer_action(InferRunArgs& a) {
  require(a.files.dout.empty() || a.backward,
          "--do cannot go with --kv-cache: an inference step has no backward (no dO)");
  InferFields f = infer_fields(a.cp, a.io, a.backward);
  InferRunSpec rs{InferSpec(f), a.dtype, a.seed, a.allow_long};
  if (a.plan_only) return plan_action(a, rs);
  const bool any_in = !a.files.q.empty() || !a.files.k.empty() || !a.files.v.empty();
  require(!any_in || (!a.files.q.empty() && !a.files.k.empty() && !a.files.v.empty()),
          "--q, --k and --v must be given together");
  prepare_outputs(a.files, false);  // every output checked before anything is read or run
  // the --q, --k, --v files (a header is read when header3 first looks at it)
  const TensorSource qf = TensorSource::file(a.files.q), kf = TensorSource::file(a.files.k), vf = TensorSource::file(a.files.v);
  if (any_in) {
    // the sizes come from the files (a size also given must agree); T too, unless --seq or
    // --cu-seqlens says it; the rows of k and v must then be the spec's P + T
    auto given = [&](const char* name, index_t v) { return a.cp.given(name) ? v : index_t{0}; };
    index_t t = 0, kv = 0, kv_v = 0, h = given("heads", f.heads), hk = given("kv-heads", f.kv_heads);
    index_t d = given("head-dim", f.head_dim), dv = given("v-head-dim", f.v_head_dim);
    header3(qf, "Q", t, h, d);
    header3(kf, "K", kv, hk, d);
    header3(vf, "V", kv_v, hk, dv);
    f.heads = h, f.kv_heads = hk, f.head_dim = d, f.v_head_dim = dv;
    if (!a.cp.given("seq") && !a.cp.given("cu-seqlens")) f.fresh = {t};
    rs.spec = InferSpec(f);
    const InferSpec& s = rs.spec;
    const std::string shapes = "; " + infer_input_shapes(s);
    require(t == s.T(), a.files.q + ": Q holds " + num(t) + " new tokens but the step has T = " + num(s.T()) + shapes);
    require(kv == s.KV(), a.files.k + ": K holds " + num(kv) + " tokens but the step has P + T = " + num(s.KV()) +
                              " (per request the cache, then the new tokens)" + shapes);
    require(kv_v == s.KV(), a.files.v + ": V holds " + num(kv_v) + " tokens but the step has P + T = " + num(s.KV()) +
                                " (per request the cache, then the new tokens)" + shapes);
  }
  validate(rs);  // dtype, the memory estimate and the CPU work, before anything big is allocated
  if (check_only) return 0;
  InferInputs in;
  if (any_in) {
    in.q = load3(qf, "Q");
    in.k = load3(kf, "K");
    in.v = load3(vf, "V");
    in.sinks = sinks_of(rs);
  } else {
    in = make_infer_inputs(rs);
  }
  InferReport r = run_infer(rs, in);
  std::string failed;
  if (r.err_o && !std::isfinite(*r.err_o))
    failed = "O";
  else if (r.err_lse && !std::isfinite(*r.err_lse))
    failed = "LSE";
  const std::string json = a.json ? infer_report_json(r).dump(2) : std::string();
  if (failed.empty()) {
    RunReport holder;  // write_outputs' carrier: o.npy (T, h, dv), lse.npy (h, T) and the traces
    holder.o = std::move(r.o);
    holder.lse = std::move(r.lse);
    holder.trace = std::move(r.trace);
    write_outputs(a.files, holder, false, rs.dtype == "float");
    r.trace = std::move(holder.trace);
  }
  if (a.json) {
    std::cout << json << "\n";
  } else {
    print_header(rs);
    std::cout << "\nerror vs dense attention with the offset (max|x - ref| / max|ref|):";
    if (r.err_o) std::cout << "  O " << fmt("%.2e", *r.err_o);
    if (r.err_lse) std::cout << "  LSE " << fmt("%.2e", *r.err_lse);
    std::cout << "\n";
    print_ranks(r);
    std::cout << "memory estimate: " << mib(infer_memory_estimate(rs))
              << " (inputs and results, then the larger of the ranks' shards and partials or the oracle's request)\n"
              << times_text(r.seconds, r.reference_seconds);
  }
  if (!failed.empty()) {
    std::cerr << "cplab: check failed: the error of " << failed << " is not finite";
    if (!r.non_finite.empty())
      std::cerr
          << " (the CP run's output holds a NaN or an infinity where the dense reference is finite: it overflowed in "
          << rs.dtype << ")";
    std::cerr << "; no output file was written\n";
    return 1;
  }
  return 0;
}

}  // namespace cplab::app
