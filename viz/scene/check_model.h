// check_model.h: a `cplab check --json` report, read for cplab-viz's check view (the error heat map).
//
// What it is: CheckModel, the parts of the report the heat map draws: the verdict, the first
// hypothesis that explains the error (if any), the "where the error lives" lines, and per output
// (o, lse, dq, dk, dv) its error map (values[rank][chunk][head] = max |x - ref| / max |ref| over
// the cell, null for infinite) with its tolerance and the chunk labels. load() reads the file with
// every field checked, naming the file and the field it finds wrong.
// What it is not: the check itself (reference/check/, app/cmd_check.cpp writes the report) or a
// drawing (view_check.cpp).
#pragma once

#include <cstdint>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <vector>

namespace cplab::viz {

// The limits of a report the check view draws, refused above with the limit named: a chunk's label
// (cplab check writes "tokens 0-3"; every cell's text holds it) and the cells of the error map over
// all its outputs (2^19: a headless picture of that many takes about 4 s and 0.6 GB; at the default
// size one cell is under a pixel long before)
inline constexpr size_t kMaxCheckLabelBytes = 200;
inline constexpr std::int64_t kMaxCheckReportBytes = std::int64_t{64} << 20;  // read and parsed before the counts
inline constexpr std::int64_t kMaxCheckCells = std::int64_t{1} << 19;

struct CheckModel {
  std::string source;  // "outputs: DIR" (the report's outputs_dir), else the report file
  std::string verdict, explained_by;  // explained_by: the first hypothesis that explains it ("": none)
  std::vector<std::string> where;
  int ranks = 0, chunks = 0;
  std::vector<std::vector<std::string>> chunk_labels;  // [rank][chunk]
  struct Output {
    std::string name;  // "o", "lse", "dq", "dk", "dv"
    int heads = 0;
    double tolerance = 0;
    std::vector<double> v;  // [(rank * chunks + chunk) * heads + head], +inf for null
    double at(int r, int c, int h, int n_chunks) const { return v[static_cast<size_t>((r * n_chunks + c) * heads + h)]; }
  };
  std::vector<Output> outputs;
  static CheckModel load(const std::string& path);  // throws cplab::Error
  // a report already parsed (the browser build's own check of dropped .npy files): the same checks,
  // `name` standing for the file in messages and as the source
  static CheckModel from_report(const nlohmann::json& report, const std::string& name);

 private:
  static CheckModel load_checked(const std::string& path);
};

}  // namespace cplab::viz
