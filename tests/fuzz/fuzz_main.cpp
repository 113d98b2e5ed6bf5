// fuzz_main.cpp: the fuzz test's driver: every parser, a fixed seed, a fixed number of cases each.
//
//   fuzz_parsers SCRATCH_DIR [CASES_PER_PARSER=1000] [SEED=19] [ONLY: parsers whose name contains it]
// Prints one line per parser (cases, accepted, refused, failed) and every failure with its case;
// exits 1 if any case failed. ctest runs it in both builds; the sanitizer build is where it counts.
// What it is not: a benchmark (it prints no times; ctest's TIMEOUT is its hang guard).
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>

#include "fuzz.h"

using namespace cplab::fuzz;

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: fuzz_parsers SCRATCH_DIR [CASES_PER_PARSER] [SEED]\n");
    return 2;
  }
  const std::string dir = argv[1];
  const int n = argc > 2 ? std::atoi(argv[2]) : 1000;
  const std::uint64_t seed = argc > 3 ? std::strtoull(argv[3], nullptr, 10) : 19;
  const std::string only = argc > 4 ? argv[4] : "";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  Fuzz fz(seed, dir);
  const std::pair<const char*, void (*)(Fuzz&, Tally&, int)> parsers[] = {
      {".npy", fuzz_npy},
      {"trace JSON (cplab-viz --trace)", fuzz_json_trace},
      {"length distribution JSON (--dist)", fuzz_json_dist},
      {"calibration JSON (plan --calibration)", fuzz_json_calibration},
      {"schedule JSON (cplab-viz --schedule-json)", fuzz_json_schedule},
      {"cplab-viz options", fuzz_viz_options},
      {"cplab options", fuzz_cplab_options},
  };
  int failed = 0;
  std::printf("fuzz_parsers: seed %llu, %d random cases per parser after its named cases\n",
              static_cast<unsigned long long>(seed), n);
  for (const auto& [name, f] : parsers) {
    if (std::string(name).find(only) == std::string::npos) continue;
    Tally t{name, 0, 0, 0, {}};
    f(fz, t, n);
    std::printf("  %-44s %6d cases: %6d accepted, %6d refused, %d FAILED\n", name, t.cases, t.accepted, t.refused,
                static_cast<int>(t.failures.size()));
    for (const std::string& s : t.failures) std::printf("    FAIL %s\n", s.c_str());
    failed += static_cast<int>(t.failures.size());
    std::fflush(stdout);
  }
  std::printf(failed ? "fuzz_parsers: %d FAILED\n" : "fuzz_parsers: nothing found\n", failed);
  return failed ? 1 : 0;
}
