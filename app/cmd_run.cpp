// cmd_run.cpp: `cplab run`, one CP configuration checked against dense attention.
//
// What it is: option parsing for a RunSpec, optional .npy inputs (Q, K, V, dO) and outputs (O, LSE,
// dQ, dK, dV), trace files, and the human table or --json report of reference/run/experiment.h.
// The files (inputs read header first, outputs checked before the run and committed together after
// it succeeded, so a failed run leaves every existing output as it was) are run_files.h's.
// --plan-only writes the trace of reference/plan/trace_plan.h instead and prints the same per-rank
// table from it, computing nothing. The mask options (--window, --chunk, --sinks, --sink-logits)
// are mask_options.h's. With --kv-cache the run is an inference step instead (cmd_run_infer.h).
// For the Python binding (embedded.h: embedded_run set) the same action reads Q, K, V, dO and the
// sink logits from memory instead of files, keeps a float run's float32 outputs, and leaves its
// report (or RunFailed) instead of printing or writing anything.
// What it is not: an algorithm, or a benchmark (times are those of the CPU reference).
#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <map>
#include <memory>
#include <utility>
#include <nlohmann/json.hpp>

#include "commands.h"
#include "run_text.h"
#include "core/error.h"
#include "cmd_run_infer.h"
#include "embedded_context.h"
#include "cp_options.h"
#include "infer_options.h"
#include "run/experiment.h"
#include "run/npy.h"
#include "run_files.h"
#include "spec_from_tensors.h"
#include "run/precision.h"
#include "layout/thd.h"
#include "plan/trace_plan.h"

namespace cplab::app {

namespace {

struct RunOptions {
  CpOptions cp;   // the CP layer as given (cp_options.h; modes/cp_spec.h validates it once)
  InferOptions infer;  // --kv-cache, --cache-layout: an inference step (infer_options.h, cmd_run_infer.cpp)
  RunSpec spec;   // the harness (dtype, backward, allow_long); spec.cp is built from `cp`
  RunFiles files;  // --q --k --v --do --out-dir --trace --chrome-trace (run_files.h)
  std::string precision;  // --precision (run/precision.h): "" none
  bool json = false, plan_only = false;
  std::map<std::string, CLI::Option*> given;  // this command's own file options, to tell "given" from "default"
  long long seed = 0;
};

// the run's description; r: the padding check of a computed run (null when planned)
void print_header(const RunSpec& run, const RunReport* r) {
  const CpSpec& s = run.cp;
  std::cout << "cplab run: mode " << to_string(s.mode()) << ", layout " << to_string(s.layout()) << ", "
            << (s.causal() ? "causal" : "non-causal") << (s.window() > 0 ? ", window " + std::to_string(s.window()) : "")
            << (s.chunk() > 0 ? ", chunk " + std::to_string(s.chunk()) : "") << (s.sinks() ? ", sinks" : "") << ", cp " << s.P() << ", seq " << s.S() << ", heads "
            << s.h() << " (kv " << s.hk() << "), head-dim " << s.d() << " (v " << s.dv() << "), "
            << run.dtype << ", merge " << to_string(s.merge()) << (run.backward ? ", forward + backward" : ", forward") << "\n";
  if (!run.precision.empty())
    std::cout << "precision (emulated): " << run.precision
              << " (inputs= rounds the inputs the run and the oracle read; partials= each ring step's outputs,\n"
                 "merge= the running sums across steps, as a GPU pipeline stores them; LSE in the run's dtype)\n";
  if (s.mode() == Mode::a2a_p2p)
    std::cout << "hierarchical: all-to-all groups of " << s.icp() << " adjacent ranks, " << s.icp() << " rings of " << s.ocp()
              << " ranks strided by " << s.icp() << "\n";
  if (s.ring_hops() >= 0 && s.ring_hops() < (s.mode() == Mode::a2a_p2p ? s.ocp() : s.P()) - 1)
    std::cout << "the ring stops early: " << s.ring_hops() << " hop" << (s.ring_hops() == 1 ? "" : "s") << " of "
              << (s.mode() == Mode::a2a_p2p ? s.ocp() : s.P()) - 1
              << " (no tile past them has a visible pair), in the forward and the backward\n";
  if (s.kv_replication() > 1)
    std::cout << "--replicate-kv: each of the " << s.hk() << " KV heads is repeated " << s.kv_replication()
              << " times for the all-to-all (their gradients are summed back)\n";
  if (s.thd()) {
    const Packing& pk = s.packing();
    std::string a, b;
    for (size_t i = 0; i < pk.cu_seqlens.size(); ++i)
      a += (i ? "," : "") + std::to_string(pk.cu_seqlens[i]), b += (i ? "," : "") + std::to_string(pk.cu_seqlens_padded[i]);
    std::cout << "packed: " << pk.num_seqs() << " sequences, cu_seqlens " << a << ", padded " << b;
    if (r) std::cout << "; largest |output| on padding: " << fmt("%g", r->padding_max_abs) << " (must be 0)";
    std::cout << "\n";
  }
}

// the per-rank table and the totals under it, from the trace's summaries in r
void print_ranks(const RunReport& r) {
  std::cout << "\n" << "rank   fwd FLOPs   bwd FLOPs     bytes sent     bytes recv   messages\n";
  std::int64_t tf = 0, tb = 0, tm = 0;
  for (size_t i = 0; i < r.flops.size(); ++i) {
    std::printf("%4zu %11.4g %11.4g %14lld %14lld %10lld\n", i, static_cast<double>(r.flops_fwd[i]),
                static_cast<double>(r.flops_bwd[i]), static_cast<long long>(r.bytes_sent[i]),
                static_cast<long long>(r.bytes_recv[i]), static_cast<long long>(r.messages[i]));
    tf += r.flops[i];
    tb += r.bytes_sent[i];
    tm += r.messages[i];
  }
  std::fflush(stdout);
  std::cout << "\nwork ratio (max / min FLOPs over ranks): "
            << (std::isfinite(r.work_ratio) ? fmt("%.2f", r.work_ratio) : std::string("inf (a rank has no work)"))
            << "\nFLOPs: ranks sum to " << fmt("%.4g", static_cast<double>(tf)) << ", dense attention needs "
            << fmt("%.4g", static_cast<double>(r.dense_flops))
            << (tf == r.dense_flops ? " (equal: no tile computed twice, none missed)" : " (MISMATCH)")
            << "\ncommunication: " << tb << " bytes in " << tm << " messages";
}

void print_human(const RunReport& r) {
  print_header(r.spec, &r);
  std::cout << "\nerror vs dense attention (max|x - ref| / max|ref|):";
  const std::pair<const char*, std::optional<double>> errs[] = {
      {"O", r.err_o}, {"LSE", r.err_lse}, {"dQ", r.err_dq}, {"dK", r.err_dk}, {"dV", r.err_dv}, {"dsinks", r.err_dsinks}};
  for (const auto& [name, e] : errs)
    if (e) std::cout << "  " << name << " " << fmt("%.2e", *e);
  std::cout << "\n";
  print_ranks(r);
  std::cout << "\n" << times_text(r.seconds, r.reference_seconds);
}

// --plan-only: the trace the run would record (trace_plan.h) and the table summed from it
int plan_action(const RunOptions& o) {
  const RunSpec& s = o.spec;
  const std::pair<const char*, const std::string*> tensors[] = {
      {"q", &o.files.q}, {"k", &o.files.k}, {"v", &o.files.v}, {"do", &o.files.dout}, {"out-dir", &o.files.out_dir}};
  for (const auto& [name, path] : tensors)
    require(path->empty(), std::string("--") + name + " cannot go with --plan-only (a planned run reads and writes no tensors)");
  RunReport r;
  r.spec = s;
  r.trace = plan_trace(s);  // checks s like validate(), without the CPU reference's limits
  prepare_outputs(o.files, s.backward);
  if (check_only) return 0;  // tests/fuzz: the inputs are checked
  write_outputs(o.files, r, s.backward, false);
  summarize_trace(r);
  r.dense_flops = dense_flops(s);
  if (o.json) {
    nlohmann::json j = report_json(r);
    j["planned"] = true;  // nothing computed: no errors, no padding check, no times
    for (const char* k : {"padding_max_abs", "seconds", "reference_seconds"}) j[k] = nullptr;
    std::cout << j.dump(2) << "\n";
    return 0;
  }
  print_header(s, nullptr);
  std::cout << "\nPLANNED ONLY (--plan-only): no attention was computed and no result checked; the figures\n"
               "below are summed from the trace this run would record (tile durations 0).\n";
  print_ranks(r);
  std::cout << "\n";
  return 0;
}

int run_action(RunOptions& o) {
  RunSpec& s = o.spec;
  require(o.seed >= 0, "seed " + std::to_string(o.seed) + " must be >= 0");
  s.seed = static_cast<std::uint64_t>(o.seed);
  for (const char* name : {"out-dir", "trace", "chrome-trace"})
    require(o.given.at(name)->count() == 0 || !o.given.at(name)->as<std::string>().empty(),
            std::string("--") + name + " needs a value, got an empty string");
  const Precision prec = o.given.at("precision")->count() > 0 ? parse_precision(o.precision) : Precision{};
  EmbeddedRun* const emb = embedded_run;  // the Python binding's call (embedded.h): arrays, no files, no printing
  if (emb) {
    require(!infer_wanted(o.cp, o.infer), "inference steps (--kv-cache) are not in the Python binding yet; use cplab run --kv-cache");
    const RunFiles& fl = o.files;
    for (const std::string* path : std::initializer_list<const std::string*>{&fl.q, &fl.k, &fl.v, &fl.dout, &fl.out_dir, &fl.trace, &fl.chrome, &o.cp.mask.sink_logits})
      require(path->empty(), "--q, --k, --v, --do, --out-dir, --trace, --chrome-trace and --sink-logits are the command line's "
                             "files: the Python binding takes arrays and returns the results");
    require(!o.json && !o.plan_only, "--json and --plan-only are the command line's");
  }
  if (infer_wanted(o.cp, o.infer)) {  // --kv-cache: an inference step (cmd_run_infer.cpp)
    require(prec.empty(), "--precision is not modelled for inference steps (--kv-cache); it emulates a training ring's storage");
    InferRunArgs a{o.cp, o.infer, o.files, s.dtype, s.seed, s.backward, s.allow_long, o.json, o.plan_only};
    return run_infer_action(a);
  }
  CpFields f = cp_fields(o.cp);  // mode, layout, merge, --hcp, --cu-seqlens and --seq (cp_options.h)
  if (emb && emb->arrays->sinks) {  // the sink logits as an array (the command line's --sink-logits FILE)
    const TensorSource& sk = *emb->arrays->sinks;
    require(sk.shape().size() == 1, sk.name + " has shape " + npy_shape_string(sk.shape()) + ": the sink logits are 1-d, (heads,)");
    f.sinks = true;
    f.sink_logits = sk.values();
  }
  apply_storage(prec, f);        // --precision partials=, merge=: the ring's storage between steps
  s.precision = to_string(prec);
  if (prec.accumulate) {
    require(o.given.at("dtype")->count() == 0 || s.dtype == *prec.accumulate,
            "--precision accumulate=" + std::string(*prec.accumulate == "float" ? "fp32" : "fp64") + " and --dtype " + s.dtype +
                " disagree (give one of them)");
    s.dtype = *prec.accumulate;
  }
  if (o.plan_only) {
    s.cp = CpSpec(f);
    return plan_action(o);
  }
  const RunArrays* arr = emb ? emb->arrays : nullptr;
  const bool has_do = arr ? arr->dout != nullptr : !o.files.dout.empty();
  require(!has_do || s.backward, arr ? "do needs backward=True (--backward)" : "--do needs --backward");
  const bool any_in = arr ? (arr->q || arr->k || arr->v) : (!o.files.q.empty() || !o.files.k.empty() || !o.files.v.empty());
  require(!any_in || (arr ? (arr->q && arr->k && arr->v) : (!o.files.q.empty() && !o.files.k.empty() && !o.files.v.empty())),
          arr ? "q, k and v must be given together (or none: the seeded random inputs)" : "--q, --k and --v must be given together");
  // the outputs' paths (checked, nothing created or truncated): an output that is an input, or a
  // folder that cannot be written, fails now, before anything is read or run
  prepare_outputs(o.files, s.backward);
  // .npy inputs: every header first (shapes checked against each other and the options), then the
  // run's rules and memory estimate, and only then the data
  // (a file's header is read when header3 first looks at it)
  // (the binding's arrays: app/embedded.h; a float64 one is then read in place, run/tensor_source.h)
  auto source = [&](const TensorSource* a, const std::string& path) { return a ? *a : TensorSource::file(path); };
  const TensorSource q = source(arr ? arr->q : nullptr, o.files.q), k = source(arr ? arr->k : nullptr, o.files.k);
  const TensorSource v = source(arr ? arr->v : nullptr, o.files.v), dout = source(arr ? arr->dout : nullptr, o.files.dout);
  if (any_in) run_sizes(f, given_sizes(o.cp, f), q, k, v);  // sizes come from the files; a size also given must agree
  s.cp = CpSpec(f);
  o.files.dsinks = s.cp.sinks() && s.backward;  // --out-dir also writes dsinks.npy
  if (s.backward && has_do) {
    index_t seq = s.cp.S(), h = s.cp.h(), dv = s.cp.dv();
    header3(dout, "dO", seq, h, dv);
  }
  s.keep_run_dtype = emb != nullptr;  // the binding hands out the float run's own float32 buffers
  validate(s);  // the memory estimate counts the inputs: nothing big is allocated before this
  if (check_only) return 0;  // tests/fuzz: the inputs are checked
  Inputs in;
  if (any_in) {
    in.q = load3(q, "Q");
    in.k = load3(k, "K");
    in.v = load3(v, "V");
  } else {
    in = make_inputs(s);
  }
  in.sinks = sink_inputs(s);
  if (s.backward) {
    if (has_do) {
      in.dout = load3(dout, "dO");
    } else if (in.dout.n == 0) {
      RunSpec only_do = s;
      in.dout = make_inputs(only_do).dout;
    }
  }
  if (prec.inputs) round_inputs(in, *prec.inputs);  // as the GPU sees them; the oracle reads the same
  if (emb && emb->seen) {  // what the run reads its inputs from (tests of zero-copy)
    const Tensor3<double>* xs[] = {&in.q, &in.k, &in.v, &in.dout};
    for (int i = 0; i < 4; ++i)
      if (xs[i]->n > 0) emb->seen->address[i] = xs[i]->data.data(), emb->seen->borrowed[i] = xs[i]->borrowed();
  }
  RunReport r = run_experiment(s, std::as_const(in));
  // a run whose check failed writes nothing: an existing output stays as it was
  std::string failed;
  const std::pair<const char*, std::optional<double>> errs[] = {
      {"O", r.err_o}, {"LSE", r.err_lse}, {"dQ", r.err_dq}, {"dK", r.err_dk}, {"dV", r.err_dv}, {"dsinks", r.err_dsinks}};
  for (const auto& [name, e] : errs)
    if (failed.empty() && e && !std::isfinite(*e)) failed = name;
  std::string why;  // the failed check, as the command line says it
  if (!failed.empty()) {
    std::string key = failed;  // report_json's name of the tensor
    for (char& c : key) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    const bool overflowed = std::find(r.non_finite.begin(), r.non_finite.end(), key) != r.non_finite.end();
    why = "check failed: the error of " + failed + " is not finite";
    if (overflowed)
      why += " (the CP run's " + failed + " holds a NaN or an infinity where the dense reference is finite: it overflowed in " + s.dtype + ")";
  }
  if (emb) {  // the binding: the report, or the failure with it; nothing printed or written
    if (!why.empty()) throw RunFailed(why, std::move(r));
    emb->report = std::move(r);
    return 0;
  }
  if (failed.empty()) write_outputs(o.files, r, s.backward, s.dtype == "float");
  if (o.json) std::cout << report_json(r).dump(2) << "\n";
  else print_human(r);
  if (!why.empty()) {
    std::cerr << "cplab: " << why << "; no output file was written\n";
    return 1;
  }
  return 0;
}

}  // namespace

void setup_run(CLI::App& app, int& status) {
  auto o = std::make_shared<RunOptions>();
  CLI::App* sub = app.add_subcommand(
      "run", "Run one CP configuration on simulated ranks and check it against dense attention.\n"
             "Prints the error of O and LSE (and dQ, dK, dV with --backward), FLOPs per rank and the\n"
             "max/min work ratio, bytes and messages sent per rank. Error = max|x - ref| / max|ref|.");
  RunSpec& s = o->spec;
  add_cp_options(sub, o->cp);  // --mode ... --scale, shared with cplab check (cp_options.h)
  add_infer_options(sub, o->infer);  // --kv-cache, --cache-layout (infer_options.h)
  sub->add_flag("--backward", s.backward, "also run the backward pass and check dQ, dK, dV");
  o->given["dtype"] = sub->add_option("--dtype", s.dtype, "float | double (the oracle is always double)")->capture_default_str();
  o->given["precision"] = sub->add_option(
      "--precision", o->precision,
      "emulate a GPU pipeline's storage, e.g. inputs=bf16,accumulate=fp32,partials=bf16,merge=bf16:\n"
      "inputs rounded to inputs=, arithmetic accumulate= (= --dtype), each ring step's outputs\n"
      "rounded to partials=, the running sums across steps to merge= (p2p, a2a+p2p)");
  sub->add_option("--seed", o->seed, "seed of the random Q, K, V, dO in [-1, 1] (>= 0)")->capture_default_str();
  sub->add_option("--q", o->files.q, "read Q from a .npy (seq, heads, head_dim) float16/bfloat16/float32/float64 file\n"
                                     "(with --kv-cache: the T new tokens, (T, heads, head_dim))");
  sub->add_option("--k", o->files.k, "read K from a .npy (seq, kv_heads, head_dim) (with --kv-cache: (P+T, ...),\n"
                                     "per request its cache, then its new tokens)");
  sub->add_option("--v", o->files.v, "read V from a .npy (seq, kv_heads, v_head_dim) (with --kv-cache: (P+T, ...))");
  sub->add_option("--do", o->files.dout, "read dO from a .npy (seq, heads, v_head_dim); needs --backward");
  o->given["out-dir"] = sub->add_option("--out-dir", o->files.out_dir, "write o.npy, lse.npy (heads, seq) and dq/dk/dv.npy here, in sequence order\n"
                                                                    "(with --kv-cache: o.npy (T, heads, v_head_dim), lse.npy (heads, T))");
  o->given["trace"] = sub->add_option("--trace", o->files.trace, "write the trace (every message and tile) as cplab JSON (docs/trace.md)");
  o->given["chrome-trace"] = sub->add_option("--chrome-trace", o->files.chrome, "write the trace as Chrome trace-event JSON (Perfetto)");
  sub->add_flag("--allow-long", s.allow_long, "run even if it needs more than 4 TFLOP of CPU work (minutes);\n"
                                              "with --plan-only: plan past the planner's own limit");
  sub->add_flag("--plan-only", o->plan_only, "compute nothing: write --trace / --chrome-trace with the trace the run\n"
                                             "would record (every message and tile, durations 0) and print its\n"
                                             "per-rank table; no CPU-work or memory limit of the reference applies");
  sub->add_flag("--json", o->json, "print one JSON object instead of the table");
  sub->callback([o, &status] { status = run_action(*o); });
}

}  // namespace cplab::app
