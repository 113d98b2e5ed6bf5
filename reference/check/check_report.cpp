// check_report.cpp: the text and JSON forms of a CheckReport (check.h).
#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <sstream>

#include "check/check.h"
#include "core/util.h"

namespace cplab {

namespace {

std::string sci(double x) { return sci_text(x); }

nlohmann::json number(double x) { return std::isfinite(x) ? nlohmann::json(x) : nlohmann::json(nullptr); }

const char* pred_name(PredKind k) {
  return k == PredKind::reference ? "reference" : k == PredKind::faulted ? "faulted" : "not checked";
}

// the spec's mask as the report names it: "causal", "causal, window 9", "non-causal, sinks", ...
std::string mask_text(const CpSpec& s) {
  std::string m = s.mask_name();
  if (m.rfind("none", 0) == 0) m = "non-causal" + m.substr(4);
  else if (!s.causal()) m = "non-causal, " + m;
  return m;
}

std::string spec_line(const CpSpec& s) {
  std::ostringstream o;
  o << "cplab check: mode " << to_string(s.mode()) << ", layout " << to_string(s.layout()) << ", "
    << mask_text(s) << ", cp " << s.P() << ", seq " << s.S() << ", heads " << s.h() << " (kv "
    << s.hk() << "), head-dim " << s.d() << " (v " << s.dv() << "), scale " << s.scale();
  if (s.thd()) {
    o << ", cu_seqlens";
    for (size_t i = 0; i < s.packing().cu_seqlens.size(); ++i) o << (i ? "," : " ") << s.packing().cu_seqlens[i];
    if (s.packing().has_padding()) {
      o << " (padded";
      for (size_t i = 0; i < s.packing().cu_seqlens_padded.size(); ++i) o << (i ? "," : " ") << s.packing().cu_seqlens_padded[i];
      o << ")";
    }
  }
  return o.str();
}

std::string counts(const std::vector<index_t>& v) {
  std::string out;
  for (size_t i = 0; i < v.size(); ++i) out += (i ? "," : "") + num(v[i]);
  return out;
}

// an inference step (--kv-cache): the variant, both layouts, the requests' P and T
std::string infer_spec_line(const InferSpec& s) {
  std::ostringstream o;
  std::string m = s.mask_name();
  if (m.rfind("none", 0) == 0) m = "non-causal" + m.substr(4);
  else if (!s.fields().causal) m = "non-causal, " + m;
  o << "cplab check (inference): mode " << s.info().name << ", cache layout " << to_string(s.fields().cache_layout)
    << ", new tokens " << (s.info().decode_layout ? std::string("round-robin by position") : "split " + to_string(s.fields().layout))
    << ", " << m << ", cp " << s.N() << ", P " << counts(s.fields().cached) << " cached, T " << counts(s.fields().fresh)
    << " new, heads " << s.h() << " (kv " << s.hk() << "), head-dim " << s.d() << " (v " << s.dv() << "), scale " << s.scale();
  return o.str();
}

// one line per output of a hypothesis: how its prediction compares
void evidence(std::ostream& o, const CheckReport& r, const HypothesisResult& h, int level) {
  for (CheckTensor t : kAllCheckTensors) {
    const int i = idx(t);
    if (!r.out[i].present) continue;
    o << "     " << tensor_label(t) << ": ";
    if (h.kind[i] == PredKind::unchecked) {
      o << "not checked under this hypothesis (error vs the reference " << sci(r.err[i]) << ")\n";
      continue;
    }
    const bool ok = level >= 0 && h.err[i] <= r.levels[sz(level)].tol[i];
    if (h.kind[i] == PredKind::reference) o << "as the reference, error " << sci(h.err[i]);
    else if (!h.pair_a.empty())  // two faults: each one's share
      o << "as the two faults predict, error " << sci(h.err[i]) << " (fault 1 moves it " << sci(h.moved_a[i]) << ", then fault 2 "
        << sci(h.moved_b[i]) << ")";
    else o << "as the fault predicts, error " << sci(h.err[i]) << " (the fault itself moves it " << sci(h.fault[i]) << ")";
    if (h.compared[i] > 0) o << " at " << h.compared[i] << " sampled tokens";
    o << (level >= 0 ? (ok ? "" : "  ABOVE TOLERANCE") : "") << "\n";
  }
  o << "     how: " << h.method << "\n";
}

}  // namespace

std::string check_text(const CheckReport& r) {
  std::ostringstream o;
  o << r.verdict << "\n\n" << (r.infer ? infer_spec_line(*r.infer) : spec_line(r.spec)) << "\n";
  if (r.arrays)  // the Python binding's arrays
    o << "inputs:  " << r.inputs_dir << "['q'], ['k'], ['v']" << (r.has_do ? ", ['do']" : "") << " (arrays, "
      << npy_dtype_name(r.input_dtypes[0]) << ")\n";
  else
    o << "inputs:  " << r.inputs_dir << ": q.npy, k.npy, v.npy" << (r.has_do ? ", do.npy" : "") << " ("
      << npy_dtype_name(r.input_dtypes[0]) << ")\n";
  if (!r.sink_logits.empty()) {
    o << "sinks:   ";
    for (size_t i = 0; i < r.sink_logits.size() && i < 8; ++i) o << (i ? ", " : "") << approx(r.sink_logits[i]);
    o << (r.sink_logits.size() > 8 ? ", ..." : "") << " (one logit per query head)\n";
  }
  o << "outputs: " << r.outputs_dir << (r.arrays ? " (arrays)" : "") << "\n";
  o << "\nerror vs the reference (dense attention in double; max|x - ref| / max|ref| per output):\n";
  for (CheckTensor t : kAllCheckTensors) {
    const int i = idx(t);
    char b[256];
    if (!r.out[i].present && r.infer && t != CheckTensor::lse) continue;  // inference: no gradients to give
    if (!r.out[i].present) {
      std::snprintf(b, sizeof b, "  %-4s not given\n", tensor_label(t));
    } else {
      std::snprintf(b, sizeof b, "  %-4s %-8s tolerance %s (%s)  %-5s %s\n", tensor_label(t), sci(r.err[i]).c_str(),
                    sci(r.levels[0].tol[i]).c_str(), npy_dtype_name(r.out[i].dtype).c_str(),
                    r.err[i] <= r.levels[0].tol[i] && r.map.nonfinite_total[i].total() == 0 ? "ok" : "WRONG", r.out[i].source.c_str());
    }
    o << b;
  }
  if (r.pipeline) {
    o << "\nprecision: " << r.pipeline->stages << "\n";
    for (const std::string& l : pipeline_lines(*r.pipeline, r.err)) o << "  " << l << "\n";
  }
  const std::vector<std::string> nf = nonfinite_lines(r.map);
  if (!nf.empty()) {
    o << "\nNaN / inf in the outputs (where the reference is finite; the errors above cover the finite values):\n";
    for (const std::string& l : nf) o << "  " << l << "\n";
  }
  if (r.dsinks.present) {
    char b[256];
    std::snprintf(b, sizeof b, "  %-4s %-8s tolerance %s (%s)  %-5s %s\n", "dS_h", sci(r.dsinks.err).c_str(), sci(r.dsinks.tol).c_str(),
                  npy_dtype_name(r.dsinks.dtype).c_str(), r.dsinks.ok() ? "ok" : "WRONG", r.dsinks.source.c_str());
    o << b;
    if (!r.dsinks.ok()) o << "       d s_h: " << (r.dsinks.fault.empty() ? "no known fault explains it (tested: the sign, cp times, one rank's rows)" : r.dsinks.fault) << "\n";
  }
  if (!r.outputs_equivalent) {
    const std::vector<const HypothesisResult*> ex = r.explaining();
    o << "\ndiagnosis: " << r.hypotheses.size() << " hypotheses tested";
    if (!r.skipped.empty()) {
      o << " (skipped, as every output they change is right:";
      for (size_t k = 0; k < r.skipped.size(); ++k) o << (k ? ", " : " ") << r.skipped[k];
      o << ")";
    }
    if (r.pairs.ran)
      o << "; " << r.pairs.tried << " pairs of two faults tried (no single fault explains them: " << r.pairs.firsts.size()
        << " faults tried first, " << r.pairs.suggested << " of them suggested by their partial fits"
        << (r.pairs.budget_cut ? ", the rest cut by the time budget" : "") << ")";
    const std::string them = r.map.any_nonfinite() ? " the finite values" : " them";  // NaN / inf: listed above
    o << "; " << (ex.empty() ? "none explains every output\n" : std::to_string(ex.size()) + " explain" + (ex.size() == 1 ? "s" : "") + them + ":\n");
    int n = 0;
    for (const HypothesisResult* h : ex) {
      o << "  " << ++n << ". " << h->name;
      if (h->level > 0) o << " (within " << r.levels[sz(h->level)].name << "'s tolerance)";
      o << "\n";
      evidence(o, r, *h, h->level);
    }
    if (ex.empty()) {  // the hypotheses that get the most wrong outputs right
      std::vector<std::pair<int, const HypothesisResult*>> partial;
      for (const HypothesisResult& h : r.hypotheses) {
        int fixed = 0;
        for (CheckTensor t : kAllCheckTensors) {
          const int i = idx(t);
          fixed += h.kind[i] == PredKind::faulted && r.err[i] > r.levels[0].tol[i] && h.err[i] <= r.levels[0].tol[i] ? 1 : 0;
        }
        if (fixed > 0) partial.emplace_back(fixed, &h);
      }
      std::stable_sort(partial.begin(), partial.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
      if (!partial.empty()) o << "  partly explained (some wrong outputs fit, others do not):\n";
      for (size_t k = 0; k < partial.size() && k < 3; ++k) {
        o << "  - " << partial[k].second->name << "\n";
        evidence(o, r, *partial[k].second, 0);
      }
    }
  }
  // the error map, worst over heads per rank and chunk
  const index_t rows = r.map.ranks * r.map.chunks;
  o << "\nerror map (worst over heads per rank and chunk; * above tolerance" << (r.map.any_nonfinite() ? "; NaN / inf: cells holding some)" : ")");
  std::vector<bool> show(sz(rows), rows <= 32);
  for (index_t k = 0; k < rows && rows > 32; ++k)
    for (CheckTensor t : kAllCheckTensors)
      for (index_t i = 0; i < r.map.heads[idx(t)]; ++i)
        if (r.map.at(t, k / r.map.chunks, k % r.map.chunks, i) > r.levels[0].tol[idx(t)] ||
            r.map.nonfinite_at(t, k / r.map.chunks, k % r.map.chunks, i).total() > 0)
          show[sz(k)] = true;
  o << (rows > 32 ? ", rows with an error above tolerance only" : "") << ":\n";
  auto rstrip = [](std::string x) { return x.erase(x.find_last_not_of(' ') + 1) + "\n"; };
  std::string head = "rank  chunk    ";
  for (CheckTensor t : kAllCheckTensors)
    if (r.out[idx(t)].present) head += "  " + std::string(tensor_label(t)) + std::string(9 - std::string(tensor_label(t)).size(), ' ');
  o << rstrip(head);
  for (index_t k = 0; k < rows; ++k) {
    if (!show[sz(k)]) continue;
    const index_t rk = k / r.map.chunks, ck = k % r.map.chunks;
    char b[64];
    std::snprintf(b, sizeof b, "%4lld  %-9s", static_cast<long long>(rk), r.chunks.label(rk, ck, r.map.ranks).c_str());
    std::string line = b;
    for (CheckTensor t : kAllCheckTensors) {
      if (!r.out[idx(t)].present) continue;
      double m = 0;
      NonFinite n;
      for (index_t i = 0; i < r.map.heads[idx(t)]; ++i) {
        m = std::max(m, r.map.at(t, rk, ck, i));
        const NonFinite c = r.map.nonfinite_at(t, rk, ck, i);
        n.nan += c.nan, n.pos_inf += c.pos_inf, n.neg_inf += c.neg_inf;
      }
      const std::string cell = n.total() > 0 ? std::string(n.nan > 0 ? "NaN*" : "inf*") : sci(m) + (m > r.levels[0].tol[idx(t)] ? "*" : "");
      line += "  " + cell + std::string(cell.size() < 9 ? 9 - cell.size() : 0, ' ');
    }
    o << rstrip(line);
  }
  if (!r.where.empty()) {
    o << "\nwhere the error lives:\n";
    for (const std::string& w : r.where) o << "  " << w << "\n";
  }
  char b[128];
  std::snprintf(b, sizeof b, "\ntime: reference %.2f s, diagnosis %.2f s\n", r.reference_seconds, r.hypotheses_seconds);
  o << b;
  return o.str();
}

nlohmann::json check_json(const CheckReport& r) {
  using nlohmann::json;
  const CpSpec& s = r.spec;
  json j;
  j["verdict"] = r.verdict;
  // the outputs are correct for another spec (the best explaining hypothesis's, hypotheses.h spec_hint)
  const bool hint = !r.outputs_equivalent && !r.hypotheses.empty() && r.hypotheses.front().level >= 0;
  j["spec_hint"] = hint && !r.hypotheses.front().spec_hint.empty() ? json(r.hypotheses.front().spec_hint) : json(nullptr);
  j["equivalent"] = r.equivalent;
  j["exit_status"] = r.exit_status();
  if (r.infer) {
    const InferSpec& f = *r.infer;
    j["spec"] = {{"inference", true}, {"mode", f.info().name}, {"cache_layout", to_string(f.fields().cache_layout)},
                 {"layout", f.info().decode_layout ? json("round-robin") : json(to_string(f.fields().layout))},
                 {"causal", f.fields().causal}, {"mask", f.mask_name()}, {"cp", f.N()}, {"kv_cache", f.fields().cached},
                 {"new_tokens", f.fields().fresh}, {"heads", f.h()}, {"kv_heads", f.hk()}, {"head_dim", f.d()},
                 {"v_head_dim", f.dv()}, {"scale", f.scale()}};
  } else {
    j["spec"] = {{"mode", to_string(s.mode())}, {"layout", to_string(s.layout())}, {"causal", s.causal()}, {"cp", s.P()},
                 {"seq", s.S()}, {"heads", s.h()}, {"kv_heads", s.hk()}, {"head_dim", s.d()}, {"v_head_dim", s.dv()},
                 {"scale", s.scale()}, {"cu_seqlens", s.fields().cu_seqlens},
                 {"cu_seqlens_padded", s.thd() ? s.packing().cu_seqlens_padded : std::vector<index_t>{}}};
  }
  const char* in_names[] = {"q", "k", "v", "do"};
  json in_dtypes;
  for (int i = 0; i < (r.has_do ? 4 : 3); ++i) in_dtypes[in_names[i]] = npy_dtype_name(r.input_dtypes[sz(i)]);
  j["inputs"] = {{"dir", r.inputs_dir}, {"dtypes", in_dtypes}};
  json outs = json::object();
  for (CheckTensor t : kAllCheckTensors) {
    const int i = idx(t);
    if (!r.out[i].present) continue;
    const NonFinite& n = r.map.nonfinite_total[i];
    outs[tensor_key(t)] = {{"source", r.out[i].source}, {"dtype", npy_dtype_name(r.out[i].dtype)}, {"error", number(r.err[i])},
                           {"tolerance", r.levels[0].tol[i]}, {"ok", r.err[i] <= r.levels[0].tol[i] && n.total() == 0},
                           {"nonfinite", {{"nan", n.nan}, {"+inf", n.pos_inf}, {"-inf", n.neg_inf}}}};
  }
  j["outputs_dir"] = r.outputs_dir;
  j["outputs"] = outs;
  j["sink_logits"] = r.sink_logits;
  if (r.dsinks.present)
    j["dsinks"] = {{"source", r.dsinks.source}, {"dtype", npy_dtype_name(r.dsinks.dtype)}, {"error", number(r.dsinks.err)},
                   {"tolerance", r.dsinks.tol}, {"ok", r.dsinks.ok()}, {"fault", r.dsinks.fault.empty() ? json(nullptr) : json(r.dsinks.fault)}};
  json levels = json::array();
  for (const CheckLevel& L : r.levels) {
    json tol;
    for (CheckTensor t : kAllCheckTensors) tol[tensor_key(t)] = L.tol[idx(t)];
    levels.push_back({{"name", L.name}, {"tolerances", tol}});
  }
  j["levels"] = levels;
  if (r.pipeline) j["precision"] = pipeline_json(*r.pipeline, r.err);
  json diag = json::array();
  for (const HypothesisResult& h : r.hypotheses) {
    json per = json::object();
    for (CheckTensor t : kAllCheckTensors) {
      const int i = idx(t);
      if (!r.out[i].present) continue;
      per[tensor_key(t)] = {{"prediction", pred_name(h.kind[i])}, {"error", number(h.err[i])}, {"fault", number(h.fault[i])},
                            {"compared_tokens", h.compared[i] > 0 ? json(h.compared[i]) : json("all")},
                            {"nonfinite_seen", h.nonfinite_seen[i]}, {"nonfinite_matched", h.nonfinite_matched[i]}};
    }
    json pair = nullptr;  // two faults: their ids and how far each moves every output (pairs.h)
    if (!h.pair_a.empty()) {
      json ma = json::object(), mb = json::object();
      for (CheckTensor t : kAllCheckTensors)
        if (r.out[idx(t)].present) ma[tensor_key(t)] = number(h.moved_a[idx(t)]), mb[tensor_key(t)] = number(h.moved_b[idx(t)]);
      pair = {{"first", h.pair_a}, {"second", h.pair_b}, {"moved_by_first", ma}, {"moved_by_second", mb}};
    }
    diag.push_back({{"id", h.id}, {"name", h.name}, {"method", h.method}, {"priority", h.priority}, {"explains", h.level >= 0},
                    {"spec_hint", h.spec_hint.empty() ? json(nullptr) : json(h.spec_hint)},
                    {"level", h.level >= 0 ? json(r.levels[sz(h.level)].name) : json(nullptr)}, {"outputs", per},
                    {"pair", pair}});
  }
  j["diagnosis"] = diag;
  json labels = json::array(), maps = json::object();
  for (index_t rk = 0; rk < r.map.ranks; ++rk) {
    json l = json::array();
    for (index_t c = 0; c < r.map.chunks; ++c) l.push_back(r.chunks.label(rk, c, r.map.ranks));
    labels.push_back(l);
  }
  for (CheckTensor t : kAllCheckTensors) {
    if (r.map.heads[idx(t)] == 0) continue;
    json v = json::array(), nf_cells = json::array();
    for (index_t rk = 0; rk < r.map.ranks; ++rk) {
      json per_rank = json::array(), nf_rank = json::array();
      for (index_t c = 0; c < r.map.chunks; ++c) {
        json heads = json::array(), nf_heads = json::array();
        for (index_t i = 0; i < r.map.heads[idx(t)]; ++i) {
          heads.push_back(number(r.map.at(t, rk, c, i)));
          nf_heads.push_back(r.map.nonfinite_at(t, rk, c, i).total());
        }
        per_rank.push_back(heads), nf_rank.push_back(nf_heads);
      }
      v.push_back(per_rank), nf_cells.push_back(nf_rank);
    }
    maps[tensor_key(t)] = {{"heads", r.map.heads[idx(t)]}, {"tolerance", r.levels[0].tol[idx(t)]}, {"values", v}};
    if (r.map.nonfinite_total[idx(t)].total() > 0) maps[tensor_key(t)]["nonfinite"] = nf_cells;  // NaN / inf per cell
  }
  j["error_map"] = {{"normalization", "max |x - ref| over the cell's finite tokens and dims / max |ref| over the whole output (null: "
                                      "infinite); nonfinite: the cell's claimed NaN / inf where the reference is finite"},
                    {"index", "values[rank][chunk][head]"}, {"ranks", r.map.ranks}, {"chunks_per_rank", r.map.chunks},
                    {"chunk_labels", labels}, {"outputs", maps}};
  j["where"] = r.where;
  j["nonfinite"] = nonfinite_lines(r.map);
  j["skipped_families"] = r.skipped;
  j["pair_search"] = r.pairs.ran ? json{{"tried", r.pairs.tried}, {"first_faults", r.pairs.firsts}, {"suggested", r.pairs.suggested},
                                         {"budget_cut", r.pairs.budget_cut}, {"seconds", r.pairs.seconds}}
                                  : json(nullptr);
  j["sampled_rows"] = r.sampled_rows;
  j["sampled_keys"] = r.sampled_keys;
  j["reference_seconds"] = r.reference_seconds;
  j["diagnosis_seconds"] = r.hypotheses_seconds;
  return j;
}

}  // namespace cplab
