// fuzz_options.cpp: the command lines of cplab and cplab-viz, parsed in-process.
//
// Random command lines are drawn from the CLI11 apps themselves (every option each app registers,
// with a value drawn for its type: INT and FLOAT edge values, and for text options the choices and
// file paths they take), so an option added later is fuzzed too. cplab runs with
// app::check_only set (each action stops once its inputs are checked); cplab-viz's parse_viz_args
// builds the models its view needs, as the real tool does.
#include <algorithm>
#include <filesystem>
#include <map>

#include "commands.h"
#include "fuzz.h"
#include "viz_cli.h"

namespace cplab::fuzz {

namespace {

// values for text options, by long name; an option not listed gets small integer lists and junk
std::map<std::string, std::vector<std::string>> text_pool(const std::string& scratch) {
  const std::string src = CPLAB_SOURCE_DIR;
  const std::vector<std::string> outputs = {scratch + "/out.json", scratch, scratch + "/missing/out.json", "/dev/full", ""};
  return {
      {"mode", {"p2p", "allgather", "a2a", "a2a+p2p", "ring", "", "P2P", "pass-q", "decode-pass-q", "decode-ag"}},
      {"kv-cache", {"0", "7", "1000", "-1", "3,5", "0,0,0", "9223372036854775807", "1,", "", "x"}},
      {"cache-layout", {"zigzag", "interleaved", "striped", ""}},
      {"layout", {"contiguous", "zigzag", "striped", "diagonal"}},
      {"merge", {"streaming", "fold", "x"}},
      {"dtype", {"float", "double", "bf16"}},
      {"hcp", {"2,2", "2,4", "4,2", "1,8", "3,2", "0,4", "4611686018427387904,4", "2,", ",", "2,2,2", "-2,-2"}},
      {"cu-seqlens", {"0,12,36,42", "0,16,48", "0,5", "0,1,2,3", "0", "5,10", "0,10,10", "0,-4", "0,9223372036854775807", "0,a"}},
      {"lengths", {"32768,16384,8192", "100,200", "1", "0", "-5", "9223372036854775807,9223372036854775807", "", "1,,2"}},
      {"cost-param", {"a=0.5,alpha=0.2,beta=0.3,o=1", "a=inf", "alpha=-1", "q=1", "a=", "a=1e308,beta=1e308"}},
      {"scheduler", {"megatron", "cplab", "x"}},
      {"cost", {"l2", "overhead", "x"}},
      {"gpu", {"h100", "h200", "h800", "a100"}},
      {"intra", {"nvlink4", "ib-ndr", "pcie5", "h800-nvlink", "eth100", "x"}},
      {"inter", {"nvlink4", "ib-ndr", "pcie5", "eth100", "x"}},
      {"link", {"nvlink4", "eth100", "ib-ndr", "", "x"}},
      {"view", {"ownership", "ring", "masks", "scheduler", "timeline", "x"}},
      {"phase", {"fwd", "bwd", "x"}},
      {"size", {"1280x720", "320x200", "1280x720x3", "x", "100x100", "9999999999x2"}},
      {"dist", {src + "/data/dcp/web_lognormal.json", src + "/data/dcp/batches.json", scratch, scratch + "/missing.json"}},
      {"calibration", {scratch, scratch + "/missing.json", src + "/data/dcp/web_lognormal.json"}},
      {"schedule-json", {scratch, scratch + "/missing.json", src + "/data/dcp/megatron_example.json"}},
      {"q", {scratch, scratch + "/missing.npy"}},
      {"k", {scratch, scratch + "/missing.npy"}},
      {"v", {scratch, scratch + "/missing.npy"}},
      {"do", {scratch, scratch + "/missing.npy"}},
      {"inputs", {scratch, scratch + "/missing", src + "/data/dcp"}},  // cplab check's folders
      {"outputs", {scratch, scratch + "/missing", src + "/data/dcp"}},
      {"trace", {scratch, scratch + "/missing.json"}},  // cplab-viz reads it; cplab writes it (check_only: never written)
      {"chrome-trace", outputs},
      {"out-dir", outputs},
      {"out", outputs},
  };
}

// small values that pass the rules, so that random command lines reach past the first check
const std::vector<std::string> kSmall = {"1", "2", "4", "8", "16", "32", "64", "128", "256", "4096", "0"};

std::vector<std::string> random_argv(CLI::App& app, Fuzz& fz, const std::map<std::string, std::vector<std::string>>& pool) {
  std::vector<std::string> argv;
  CLI::App* a = &app;
  const auto subs = app.get_subcommands([](CLI::App*) { return true; });
  if (!subs.empty()) {
    if (fz.coin(0.03)) argv.push_back(fz.pick(std::vector<std::string>{"rn", "", "--cp", "help"}));
    a = fz.pick(subs);
    argv.push_back(a->get_name());
  }
  std::vector<CLI::Option*> opts;
  for (CLI::Option* o : a->get_options())
    if (!o->get_lnames().empty() && o->get_lnames()[0] != "help") opts.push_back(o);
  const std::size_t k = 1 + fz.below(7);
  for (std::size_t i = 0; i < k && !opts.empty(); ++i) {
    CLI::Option* o = fz.pick(opts);
    // an option is drawn once (a repeated one is refused: the parse would end there), now and then twice
    if (!fz.coin(0.05)) opts.erase(std::find(opts.begin(), opts.end(), o));
    const std::string name = o->get_lnames()[0];
    argv.push_back("--" + name);
    if (o->get_expected_min() == 0) continue;  // a flag
    const std::string type = o->get_type_name();
    const auto it = pool.find(name);
    if (type == "FLOAT") argv.push_back(fz.real_text());
    else if (type == "INT" || type == "UINT") argv.push_back(fz.coin(0.6) ? fz.pick(kSmall) : fz.integer_text());
    else if (it != pool.end() && fz.coin(0.9)) argv.push_back(fz.pick(it->second));
    else argv.push_back(fz.coin() ? fz.integer_text() + "," + fz.integer_text() : fz.integer_text());
  }
  if (fz.coin(0.03)) argv.push_back(fz.pick(std::vector<std::string>{"--mdoe", "stray", "--cp"}));  // a typo, a stray word, a missing value
  return argv;
}

// argv[0] + args, as char pointers into args (which must outlive the result)
std::vector<const char*> c_argv(const std::vector<std::string>& args) {
  std::vector<const char*> v = {"fuzz"};
  for (const std::string& s : args) v.push_back(s.c_str());
  return v;
}

std::string joined(const std::vector<std::string>& args) {
  std::string s;
  for (const std::string& a : args) s += " '" + a + "'";
  return s;
}

}  // namespace

void fuzz_viz_options(Fuzz& fz, Tally& t, int n) {
  const auto pool = text_pool(fz.scratch);
  auto parse = [](const std::vector<std::string>& args) {
    CLI::App cli{"cplab-viz", "cplab-viz"};
    const auto v = c_argv(args);
    return viz::parse_viz_args(cli, static_cast<int>(v.size()), v.data());
  };
  // the reproducers of issue 19 that concern cplab-viz
  std::filesystem::create_directories(fz.scratch + "/dir");
  const std::string dir = fz.scratch + "/dir";
  const std::string big = fz.write("viz_batch_1e12.json",
                                   R"({"name": "x", "lognormal_mixture": [{"weight": 1, "median": 1024, "sigma": 1}],
                                       "min": 128, "max": 32768, "batch_size": 1e12})");
  const std::vector<std::pair<std::string, std::vector<std::string>>> named = {
      {"--size 1280x720x3", {"--size", "1280x720x3"}},
      {"a directory as --trace", {"--view", "timeline", "--trace", dir}},
      {"a directory as --dist", {"--view", "scheduler", "--dist", dir}},
      {"a directory as --schedule-json", {"--view", "scheduler", "--schedule-json", dir}},
      {"batch_size 1e12 in --dist", {"--view", "scheduler", "--dist", big}},
      {"--batch-size 1e12", {"--view", "scheduler", "--dist", CPLAB_SOURCE_DIR "/data/dcp/web_lognormal.json", "--batch-size", "1000000000000"}},
      {"--max-seqlen-per-rank 2^62", {"--view", "scheduler", "--max-seqlen-per-rank", "4611686018427387904"}},
      {"--cp 2^62 with padding", {"--cp", "4611686018427387904", "--cu-seqlens", "0,5", "--pad"}},
      {"--frames 1e9", {"--frames", "1000000000"}},
      // issue 39
      {"--step 2^31", {"--view", "ring", "--step", "2147483648"}},
      {"--bench-frames 0", {"--bench-frames", "0"}},
      {"--zoom-from 2^31", {"--view", "ownership", "--cp", "4", "--seq", "32", "--zoom-from", "2147483648"}},
      {"--cp given twice", {"--cp", "4", "--cp", "8"}},
      {"--lesson 2^31", {"--lesson", "2147483648"}},
  };
  for (const auto& [name, args] : named) t.must_refuse(name, [&] { parse(args); });
  CLI::App shape{"cplab-viz", "cplab-viz"};  // the options, for random_argv (--help ends the parse)
  try {
    const std::vector<std::string> help = {"--help"};
    const auto v = c_argv(help);  // pointers into help, which outlives the parse
    viz::parse_viz_args(shape, static_cast<int>(v.size()), v.data());
  } catch (const CLI::CallForHelp&) {
  }
  for (int i = 0; i < n; ++i) {
    const std::vector<std::string> args = random_argv(shape, fz, pool);
    t.run("cplab-viz" + joined(args), [&] { return parse(args), std::string(); });
  }
}

void fuzz_cplab_options(Fuzz& fz, Tally& t, int n) {
  const auto pool = text_pool(fz.scratch);
  app::check_only = true;
  auto parse = [](const std::vector<std::string>& args) {
    CLI::App cli{"cplab", "cplab"};
    int status = 0;
    app::setup_cplab(cli, status);
    const auto v = c_argv(args);
    cli.parse(static_cast<int>(v.size()), v.data());
    return status;
  };
  const std::vector<std::pair<std::string, std::vector<std::string>>> named = {
      {"--hcp 2^62,4", {"run", "--mode", "a2a+p2p", "--cp", "4", "--seq", "32", "--hcp", "4611686018427387904,4"}},
      {"--cp 2^62 --pad", {"run", "--cp", "4611686018427387904", "--cu-seqlens", "0,5", "--pad"}},
      {"--cp 2^61 --pad, 3 sequences", {"run", "--cp", "2305843009213693952", "--cu-seqlens", "0,1,2,3", "--pad"}},
      {"schedule --max-seqlen-per-rank 2^62", {"schedule", "--lengths", "100,200", "--ranks", "8", "--max-seqlen-per-rank", "4611686018427387904"}},
      {"plan --gpus 2^63-2", {"plan", "--gpus", "9223372036854775806", "--gpus-per-node", "2"}},
      {"plan --gpus-per-node 2^63-1", {"plan", "--gpus-per-node", "9223372036854775807"}},
      {"run --seed 1e23", {"run", "--seed", "99999999999999999999999"}},
      {"plan --seq 2^63", {"plan", "--seq", "9223372036854775808"}},
      {"plan --tau-us inf", {"plan", "--tau-us", "inf"}},
      {"schedule --batch-size -1", {"schedule", "--dist", CPLAB_SOURCE_DIR "/data/dcp/web_lognormal.json", "--batch-size", "-1"}},
      {"schedule --batch-size 2^63-1", {"schedule", "--dist", CPLAB_SOURCE_DIR "/data/dcp/web_lognormal.json", "--batch-size", "9223372036854775807"}},
      {"schedule --seed -1", {"schedule", "--dist", CPLAB_SOURCE_DIR "/data/dcp/web_lognormal.json", "--seed", "-1"}},
      {"run --scale 1e300", {"run", "--cp", "2", "--seq", "8", "--scale", "1e300"}},
      {"a directory as --dist", {"schedule", "--dist", fz.scratch}},
      {"a directory as --calibration", {"plan", "--calibration", fz.scratch}},
      {"rn", {"rn"}},
      {"--mdoe p2p", {"run", "--mdoe", "p2p"}},
      // issue 39
      {"run --seq given twice", {"run", "--cp", "2", "--seq", "8", "--seq", "16"}},
      {"schedule --dist --scheduler zz", {"schedule", "--dist", CPLAB_SOURCE_DIR "/data/dcp/web_lognormal.json", "--scheduler", "zz"}},
  };
  for (const auto& [name, args] : named) t.must_refuse(name, [&] { parse(args); });
  CLI::App shape{"cplab", "cplab"};
  int unused = 0;
  app::setup_cplab(shape, unused);
  for (int i = 0; i < n; ++i) {
    const std::vector<std::string> args = random_argv(shape, fz, pool);
    t.run("cplab" + joined(args), [&] { return parse(args), std::string(); });
  }
  app::check_only = false;
}

}  // namespace cplab::fuzz
