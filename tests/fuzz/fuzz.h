// fuzz.h: the fuzz test of cplab's input parsers (ctest `fuzz_parsers`): what its parts share.
//
// What it is: a seeded generator (Fuzz), mutators of bytes and of JSON trees that favour the values
// that break parsers (0, -1, 2^31, 2^63 - 1, 1.5, 1e30, "3", null, a directory ...), and Tally,
// which runs one case and classifies it: accepted, refused with a cplab::Error (or a CLI11 parse
// error) naming the rule, or FAILED (any other exception, or an accepted input whose result breaks
// an invariant). Sanitizer reports abort the whole program (halt_on_error), which fails the test.
// The parsers: .npy files (fuzz_npy.cpp), the JSON files cplab reads (fuzz_json.cpp), and the
// options of cplab and cplab-viz (fuzz_options.cpp). Each has named cases first (the reproducers
// of issue 19), then random ones.
// What it is not: coverage-guided (no libFuzzer: a fixed seed and a fixed count keep CI
// reproducible and bounded), or a check of correct results (the other tests do that).
#pragma once

#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <vector>

namespace cplab::fuzz {

struct Fuzz {
  std::mt19937_64 g;
  std::string scratch;  // a folder for the files of this run
  explicit Fuzz(std::uint64_t seed, std::string dir) : g(seed), scratch(std::move(dir)) {}
  std::size_t below(std::size_t n) { return n ? static_cast<std::size_t>(g() % n) : 0; }
  bool coin(double p = 0.5) { return std::uniform_real_distribution<double>(0, 1)(g) < p; }
  template <class T>
  const T& pick(const std::vector<T>& v) { return v[below(v.size())]; }
  std::string integer_text();  // an integer as text, edge values favoured, sometimes not an integer at all
  std::string real_text();     // a number as text: 0, -1, 1e308, inf, nan, 1e-320, "1,5" ...
  nlohmann::json value();      // a JSON value of any type, edge values favoured
  std::string mutate_bytes(std::string s);             // 1 to 4 byte-level edits
  nlohmann::json mutate_json(nlohmann::json j);        // 1 to 3 edits of the tree (replace, delete, duplicate)
  std::string write(const std::string& name, const std::string& bytes);  // the file's path
};

struct Tally {
  std::string parser;
  int cases = 0, accepted = 0, refused = 0;
  std::vector<std::string> failures;
  // run f; label says what the case was (for a failure report). f returns "" when the accepted
  // result is consistent, else what is wrong with it
  void run(const std::string& label, const std::function<std::string()>& f);
  // a named case that must be refused: accepted counts as a failure too
  void must_refuse(const std::string& name, const std::function<void()>& f);
};

void fuzz_npy(Fuzz& fz, Tally& t, int n);
void fuzz_json_trace(Fuzz& fz, Tally& t, int n);
void fuzz_json_dist(Fuzz& fz, Tally& t, int n);
void fuzz_json_calibration(Fuzz& fz, Tally& t, int n);
void fuzz_json_schedule(Fuzz& fz, Tally& t, int n);
void fuzz_viz_options(Fuzz& fz, Tally& t, int n);
void fuzz_cplab_options(Fuzz& fz, Tally& t, int n);

}  // namespace cplab::fuzz
