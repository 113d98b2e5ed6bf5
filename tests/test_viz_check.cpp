// test_viz_check.cpp: cplab-viz's check view (viz/scene/check_model.h, view_check.cpp) without a
// display: a report's error map becomes one cell per output x rank's chunk x head, each with its
// value and a colour on the right side of the tolerance; a malformed report names the field.
// What it is not: a test of cplab check (test_check.cpp, check_cli.py) or of PNGs.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "views.h"

using namespace cplab;
using namespace cplab::viz;

namespace {

// a report of 2 ranks x 2 chunks: O within tolerance, dK above it at rank 1 chunk 0 head 1, one infinite cell
nlohmann::json report() {
  nlohmann::json o = {{"heads", 2}, {"tolerance", 1e-10}, {"values", {{{1e-16, 2e-16}, {1e-15, 3e-16}}, {{1e-16, 1e-16}, {4e-16, 5e-16}}}}};
  nlohmann::json dk = {{"heads", 2}, {"tolerance", 1e-10}, {"values", {{{1e-16, 2e-16}, {1e-15, nullptr}}, {{1e-16, 0.5}, {4e-16, 5e-16}}}}};
  return {{"verdict", "NOT equivalent: test"},
          {"diagnosis", {{{"name", "a fault"}, {"explains", true}}}},
          {"where", {"dK: 2 of 8 cells above 1e-10"}},
          {"error_map", {{"ranks", 2}, {"chunks_per_rank", 2}, {"chunk_labels", {{"chunk 0", "chunk 3"}, {"chunk 1", "chunk 2"}}},
                         {"outputs", {{"o", o}, {"dk", dk}}}}}};
}

CheckModel load(const nlohmann::json& j) {
  const auto path = std::filesystem::temp_directory_path() / "cplab_test_viz_check.json";
  std::ofstream(path) << j.dump();
  try {
    CheckModel m = CheckModel::load(path.string());
    std::filesystem::remove(path);
    return m;
  } catch (...) {
    std::filesystem::remove(path);
    throw;
  }
}

}  // namespace

TEST_CASE("viz check view: one cell per output x rank's chunk x head, coloured by its error against the tolerance") {
  const CheckModel m = load(report());
  CHECK(m.verdict == "NOT equivalent: test");
  CHECK(m.explained_by == "a fault");
  REQUIRE(m.outputs.size() == 2);
  const Scene s = check_view(m, ViewState{}, 1200, 640);
  const auto cells = s.find("check_cell");
  REQUIRE(cells.size() == 2u * 2 * 2 * 2);
  int above = 0;
  for (const Prim* p : cells) {
    const bool red_side = p->fill.r > p->fill.g || (p->fill.r > 200 && p->fill.b > 200);  // yellow..red, magenta: above
    const bool expect_above = p->info.find("error 0.5") != std::string::npos || p->info.find("error inf") != std::string::npos;
    INFO(p->info);
    CHECK(red_side == expect_above);
    above += red_side ? 1 : 0;
  }
  CHECK(above == 2);
  CHECK(s.title.find("NOT equivalent: test") == 0);
  CHECK(s.notes.front() == "explained by: a fault");
}

TEST_CASE("viz check view: a malformed report names the file and the field") {
  nlohmann::json j = report();
  j["error_map"]["outputs"]["o"]["values"][1] = nlohmann::json::array();
  CHECK_THROWS_WITH_AS(load(j), doctest::Contains("values[1] needs 2 chunks"), Error);
  j = report();
  j.erase("verdict");
  CHECK_THROWS_WITH_AS(load(j), doctest::Contains("not a `cplab check --json` report"), Error);
  j = report();
  j["error_map"]["ranks"] = 2.5;
  CHECK_THROWS_WITH_AS(load(j), doctest::Contains("error_map.ranks"), Error);
}
