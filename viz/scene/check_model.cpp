// check_model.cpp: reading a `cplab check --json` report (see check_model.h).
#include "check_model.h"

#include <cmath>
#include <filesystem>
#include <limits>
#include <nlohmann/json.hpp>

#include "core/checked.h"
#include "core/error.h"

namespace cplab::viz {

CheckModel CheckModel::load(const std::string& path) {
  try {
    return load_checked(path);
  } catch (const nlohmann::json::exception& e) {  // a field of a type the checks below did not foresee
    throw Error(path + ": not a `cplab check --json` report: a field has the wrong type (" + e.what() + ")");
  }
}

CheckModel CheckModel::load_checked(const std::string& path) {
  std::error_code ec;
  require(std::filesystem::exists(path, ec), path + ": cannot open the check report");
  const std::string text = read_text_file(path, "check report", kMaxCheckReportBytes);
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    throw Error(path + ": not JSON: " + e.what());
  }
  return from_report(j, path);
}

CheckModel CheckModel::from_report(const nlohmann::json& j, const std::string& path) {
  const std::string what = path + ": not a `cplab check --json` report";
  require(j.is_object() && j.contains("verdict") && j.contains("error_map") && j["verdict"].is_string(),
          what + " (it needs 'verdict' and 'error_map')");
  CheckModel m;
  m.source = path;  // the report names the outputs it checked: show those (cplab check --out draws from a temporary report)
  if (j.contains("outputs_dir") && j["outputs_dir"].is_string()) m.source = "outputs: " + j["outputs_dir"].get<std::string>();
  m.verdict = j["verdict"].get<std::string>();
  if (j.contains("diagnosis") && j["diagnosis"].is_array())
    for (size_t i = 0; i < j["diagnosis"].size(); ++i) {
      const nlohmann::json& h = j["diagnosis"][i];
      if (!h.is_object() || !h.contains("explains")) continue;
      require(h["explains"].is_boolean(), path + ": diagnosis[" + std::to_string(i) + "].explains is a JSON " +
                                              std::string(h["explains"].type_name()) + ", not true or false");
      if (h["explains"].get<bool>() && h.contains("name") && h["name"].is_string()) {
        m.explained_by = h["name"].get<std::string>();
        break;
      }
    }
  if (j.contains("where") && j["where"].is_array())
    for (const auto& w : j["where"])
      if (w.is_string()) m.where.push_back(w.get<std::string>());
  const nlohmann::json& em = j["error_map"];
  require(em.is_object(), what + " (error_map is not an object)");
  m.ranks = static_cast<int>(json_int(em.value("ranks", nlohmann::json()), path + ": error_map.ranks", 1, 256));
  m.chunks = static_cast<int>(json_int(em.value("chunks_per_rank", nlohmann::json()), path + ": error_map.chunks_per_rank", 1, 64));
  const nlohmann::json& labels = em.value("chunk_labels", nlohmann::json::array());
  for (int r = 0; r < m.ranks; ++r) {
    m.chunk_labels.emplace_back();
    for (int c = 0; c < m.chunks; ++c) {
      const bool ok = labels.is_array() && static_cast<int>(labels.size()) > r && labels[static_cast<size_t>(r)].is_array() &&
                      static_cast<int>(labels[static_cast<size_t>(r)].size()) > c && labels[static_cast<size_t>(r)][static_cast<size_t>(c)].is_string();
      m.chunk_labels.back().push_back(ok ? labels[static_cast<size_t>(r)][static_cast<size_t>(c)].get<std::string>() : "");
      require(m.chunk_labels.back().back().size() <= kMaxCheckLabelBytes,
              path + ": error_map.chunk_labels[" + std::to_string(r) + "][" + std::to_string(c) + "] is " +
                  std::to_string(m.chunk_labels.back().back().size()) + " bytes, more than the " +
                  std::to_string(kMaxCheckLabelBytes) +
                  " a chunk's label may have (cplab check writes e.g. \"tokens 0-3\")");
    }
  }
  std::int64_t cells = 0;
  const nlohmann::json& outs = em.value("outputs", nlohmann::json::object());
  require(outs.is_object(), what + " (error_map.outputs is not an object)");
  for (const char* name : {"o", "lse", "dq", "dk", "dv"}) {
    if (!outs.contains(name)) continue;
    const nlohmann::json& o = outs[name];
    const std::string at = path + ": error_map.outputs." + name;
    require(o.is_object() && o.contains("values") && o["values"].is_array(), at + " needs 'heads', 'tolerance' and 'values'");
    Output out;
    out.name = name;
    out.heads = static_cast<int>(json_int(o.value("heads", nlohmann::json()), at + ".heads", 1, 65536));
    out.tolerance = json_real(o.value("tolerance", nlohmann::json()), at + ".tolerance", 0, 1e30);
    cells += static_cast<std::int64_t>(m.ranks) * m.chunks * out.heads;
    require(cells <= kMaxCheckCells, path + ": the error map has " + std::to_string(cells) + " cells up to " + name +
                                         " (ranks x chunks x heads per output, added up), more than the " +
                                         std::to_string(kMaxCheckCells) +
                                         " the check view draws in seconds: check fewer heads or ranks at once");
    const nlohmann::json& v = o["values"];
    require(static_cast<int>(v.size()) == m.ranks, at + ".values has " + std::to_string(v.size()) + " ranks, not " + std::to_string(m.ranks));
    for (int r = 0; r < m.ranks; ++r) {
      const nlohmann::json& pr = v[static_cast<size_t>(r)];
      require(pr.is_array() && static_cast<int>(pr.size()) == m.chunks, at + ".values[" + std::to_string(r) + "] needs " + std::to_string(m.chunks) + " chunks");
      for (int c = 0; c < m.chunks; ++c) {
        const nlohmann::json& ph = pr[static_cast<size_t>(c)];
        require(ph.is_array() && static_cast<int>(ph.size()) == out.heads,
                at + ".values[" + std::to_string(r) + "][" + std::to_string(c) + "] needs " + std::to_string(out.heads) + " heads");
        for (const auto& x : ph)
          out.v.push_back(x.is_null() ? std::numeric_limits<double>::infinity()
                                      : json_real(x, at + ".values[" + std::to_string(r) + "][" + std::to_string(c) + "]", 0, 1e300));
      }
    }
    m.outputs.push_back(std::move(out));
  }
  require(!m.outputs.empty(), what + " (its error map has no output)");
  return m;
}

}  // namespace cplab::viz
