// url_args.cpp: a page address of cplab-viz, the URL's query as the command line's words and back
// (url_args.h).
#include "url_args.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <new>

#include "cli_common.h"
#include "core/error.h"
#include "layout/layout.h"
#include "modes/mode_table.h"
#include "views.h"

namespace cplab::viz {

namespace {

// the options that set the display, not the picture: the page is the display (and --help a text)
const std::vector<std::string> kNotInUrl = {"headless", "out", "size", "controls", "frames",
                                            "bench-frames", "scene-json", "help", "h"};

// a parameter quoted in a message: its first 200 bytes
std::string clip(const std::string& s) { return s.size() <= 200 ? s : s.substr(0, 200) + "..."; }

int hex(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// the shortest decimal text that reads back as x
std::string shortest(double x) {
  char buf[40];
  for (int prec = 1; prec <= 17; ++prec) {
    std::snprintf(buf, sizeof buf, "%.*g", prec, x);
    if (std::strtod(buf, nullptr) == x) break;
  }
  return buf;
}

std::string join(const std::vector<index_t>& v) {
  std::string t;
  for (size_t i = 0; i < v.size(); ++i) t += (i ? "," : "") + std::to_string(v[i]);
  return t;
}

}  // namespace

std::string url_decode(const std::string& s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '+') {
      out += ' ';
    } else if (s[i] == '%') {
      require(i + 2 < s.size() && hex(s[i + 1]) >= 0 && hex(s[i + 2]) >= 0,
              "URL parameter text '" + clip(s) + "': '%' must be followed by two hex digits");
      out += static_cast<char>(hex(s[i + 1]) * 16 + hex(s[i + 2]));
      i += 2;
    } else {
      out += s[i];
    }
  }
  return out;
}

std::string url_encode(const std::string& s) {
  static const char* digits = "0123456789ABCDEF";
  std::string out;
  for (const char c : s) {
    const auto u = static_cast<unsigned char>(c);
    if (std::isalnum(u) || c == '-' || c == '_' || c == '.' || c == '~' || c == ',' || c == ':') {
      out += c;
    } else {
      out += '%';
      out += digits[u >> 4];
      out += digits[u & 15];
    }
  }
  return out;
}

std::vector<std::string> query_words(const std::string& query) {
  std::string q = query;
  if (!q.empty() && q[0] == '?') q.erase(0, 1);
  std::vector<std::string> words;
  size_t at = 0;
  while (at <= q.size() && !q.empty()) {
    size_t end = q.find('&', at);
    if (end == std::string::npos) end = q.size();
    const std::string part = q.substr(at, end - at);
    at = end + 1;
    if (part.empty()) {
      if (end == q.size()) break;
      continue;  // "a=1&&b": an empty part, as browsers allow
    }
    const size_t eq = part.find('=');
    const std::string key = url_decode(part.substr(0, eq));
    require(!key.empty(), "URL parameter '" + clip(part) + "' has no name (write name=value, e.g. cp=4)");
    require(key[0] != '-', "URL parameter '" + clip(key) + "': write its name without dashes (e.g. cp=4 for --cp 4)");
    require(std::find(kNotInUrl.begin(), kNotInUrl.end(), key) == kNotInUrl.end(),
            "URL parameter '" + key + "' is a display option: the page is the display (its size is the window's)");
    words.push_back("--" + key);
    if (eq != std::string::npos) {
      const std::string value = url_decode(part.substr(eq + 1));
      if (!value.empty()) words.push_back(value);  // "?causal=" is the flag, as "?causal"
    }
    if (end == q.size()) break;
  }
  return words;
}

UrlOpen open_url(const std::string& query) {
  UrlOpen u;
  try {
    u.words = query_words(query);
  } catch (const std::exception& e) {
    u.error = std::string("cplab-viz: error: ") + e.what();
    return u;
  }
  std::vector<const char*> argv = {"cplab-viz"};
  for (const std::string& w : u.words) argv.push_back(w.c_str());
  const int argc = static_cast<int>(argv.size());
  CLI::App cli{"cplab-viz", "cplab-viz"};
  try {  // the messages of app/cli_common.h's cli_main, as `cplab-viz WORDS` prints them
    u.launch = parse_viz_args(cli, argc, argv.data());
  } catch (const CLI::ParseError& e) {
    u.error = "cplab-viz: error: " + app::parse_error_text(cli, e, argc, argv.data());
  } catch (const std::bad_alloc&) {
    u.error = "cplab-viz: error: out of memory (the configuration is too large for this machine)";
  } catch (const std::exception& e) {
    u.error = std::string("cplab-viz: error: ") + e.what();
  }
  return u;
}

std::string state_query(const UrlState& s) {
  std::vector<std::pair<std::string, std::string>> kv;  // in this order; value "" = a flag
  auto add = [&](const std::string& k, const std::string& v) { kv.emplace_back(k, v); };
  if (s.lesson > 0) {
    add("lesson", std::to_string(s.lesson));
    add("page", std::to_string(s.page));
  } else {
    const std::string view = view_names()[static_cast<size_t>(s.view)];
    const VizParams& p = s.params;
    const VizParams d;
    const CpFields &f = p.cp, &df = d.cp;
    add("view", view);
    const bool run = view != "scheduler" && view != "check";
    if (run) {
      if (p.inference()) {
        add("mode", p.infer_mode);
        add("kv-cache", p.kv_cache);
        if (p.cache_layout != d.cache_layout) add("cache-layout", p.cache_layout);
      } else if (f.mode != df.mode) {
        add("mode", to_string(f.mode));
      }
      if (f.cp != df.cp) add("cp", std::to_string(f.cp));
      if (f.icp > 0) add("hcp", std::to_string(f.icp) + "," + std::to_string(f.ocp));
      if (!f.cu_seqlens.empty()) add("cu-seqlens", join(f.cu_seqlens));
      if (f.seq != df.seq) add("seq", std::to_string(f.seq));
      if (f.pad) add("pad", "");
      if (f.heads != df.heads) add("heads", std::to_string(f.heads));
      if (f.kv_heads != df.kv_heads) add("kv-heads", std::to_string(f.kv_heads));
      if (f.head_dim != df.head_dim) add("head-dim", std::to_string(f.head_dim));
      if (f.replicate_kv) add("replicate-kv", "");
      if (f.layout != df.layout) add("layout", to_string(f.layout));
      if (f.causal != df.causal) add(f.causal ? "causal" : "no-causal", "");
      if (f.window) add("window", std::to_string(*f.window));
      if (f.chunk) add("chunk", std::to_string(*f.chunk));
      if (p.dtype != d.dtype) add("dtype", p.dtype);
      if (!p.inference() && p.backward != d.backward) add(p.backward ? "backward" : "no-backward", "");
      if (s.ring_step && view == "ring") {
        if (s.ring_step->first == Phase::bwd) add("phase", "bwd");
        if (s.ring_step->second != 0) add("step", std::to_string(s.ring_step->second));
      }
      if (view == "ownership" && s.zoom0 > 0) add("zoom-from", std::to_string(s.zoom0));
      if (!p.trace_file.empty()) add("trace", p.trace_file);
      if (!p.inference() && view == "timeline") {
        const PerfOptions &o = p.perf, &od = d.perf;
        if (o.gpu != od.gpu) add("gpu", o.gpu);
        if (o.intra != od.intra) add("intra", o.intra);
        if (o.inter != od.inter) add("inter", o.inter);
        if (o.gpus_per_node != od.gpus_per_node) add("gpus-per-node", std::to_string(o.gpus_per_node));
        if (o.tau_us != od.tau_us) add("tau-us", shortest(o.tau_us));
      }
    } else if (view == "scheduler") {
      if (p.ranks != d.ranks) add("ranks", std::to_string(p.ranks));
      if (p.max_per_rank != d.max_per_rank) add("max-seqlen-per-rank", std::to_string(p.max_per_rank));
      if (!p.schedule_json.empty()) {
        add("schedule-json", p.schedule_json);
      } else if (!p.dist.empty()) {
        add("dist", p.dist);
        if (p.batch_size != d.batch_size) add("batch-size", std::to_string(p.batch_size));
        if (p.seed != d.seed) add("seed", std::to_string(p.seed));
      } else if (p.lengths != d.lengths) {
        add("lengths", p.lengths);
      }
      if (p.cost != d.cost) add("cost", p.cost);
      if (!p.cost_params.empty()) add("cost-param", p.cost_params);
    } else if (!s.check_report.empty()) {
      add("check-report", s.check_report);
    }
  }
  std::string q;
  for (const auto& [k, v] : kv) q += (q.empty() ? "" : "&") + k + (v.empty() ? "" : "=" + url_encode(v));
  return q;
}

UrlState url_state(const VizLaunch& L) {
  UrlState s;
  s.params = L.params;
  s.view = L.view;
  if (L.run && L.step >= 0 && L.step < static_cast<int>(L.run->steps.size())) s.ring_step = L.run->steps[static_cast<size_t>(L.step)];
  s.zoom0 = L.zoom0;
  s.check_report = L.check_report;
  return s;
}

}  // namespace cplab::viz
