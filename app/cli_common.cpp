// cli_common.cpp: strict numbers, parse-error messages and the exception boundary of both tools.
#include "cli_common.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <limits>
#include <new>
#include <string_view>
#include <vector>

#include "core/checked.h"
#include "core/error.h"

namespace cplab::app {

namespace {

// a validator that checks (and rewrites to plain decimal, since CLI11 converts with strtoll base 0,
// which reads "010" as 8) the text of one value of an INT, UINT or FLOAT option
CLI::Validator strict(const std::string& type) {
  return CLI::Validator(
      [type](std::string& text) -> std::string {
        if (type == "FLOAT") {
          try {  // core/checked.h's parse: a finite number (inf and nan refused)
            char b[64];
            std::snprintf(b, sizeof b, "%.17g", parse_real(text, "value"));
            text = b;
            return {};
          } catch (const Error& e) {
            return e.what();
          }
        }
        try {  // core/checked.h's parse: whole decimal, no clamping (UINT: >= 0)
          const std::int64_t lo = type == "UINT" ? 0 : std::numeric_limits<std::int64_t>::min();
          text = std::to_string(parse_int(text, "value", lo, kInt64Max));
          return {};
        } catch (const Error& e) {
          return e.what();
        }
      },
      "");  // no description: the help keeps its INT / FLOAT
}

// Levenshtein distance, for "did you mean"
std::size_t distance(std::string_view a, std::string_view b) {
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diag = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diag = up;
    }
  }
  return row[b.size()];
}

// the closest of names to word, if it is close enough to be a likely typo
std::string closest(const std::string& word, const std::vector<std::string>& names) {
  std::string best;
  std::size_t d = std::numeric_limits<std::size_t>::max();
  for (const std::string& n : names) {
    const std::size_t k = distance(word, n);
    if (k < d) d = k, best = n;
  }
  return d <= std::max<std::size_t>(2, word.size() / 3) ? best : std::string();
}

std::string join(const std::vector<std::string>& v) {
  std::string s;
  for (const std::string& x : v) s += (s.empty() ? "" : ", ") + x;
  return s;
}

// the long names (--x) of app's options
std::vector<std::string> option_names(const CLI::App& app) {
  std::vector<std::string> names;
  for (const CLI::Option* o : app.get_options())
    for (const std::string& n : o->get_lnames()) names.push_back("--" + n);
  return names;
}

// the innermost subcommand that was parsed (app itself when none was)
const CLI::App* active(const CLI::App& app) {
  for (const CLI::App* s : app.get_subcommands()) return active(*s);
  return &app;
}

std::string where(const CLI::App& a) {
  return a.get_parent() ? " of '" + a.get_name() + "'" : "";
}

}  // namespace

void strict_numbers(CLI::App& app) {
  for (CLI::Option* o : app.get_options()) {
    const std::string t = o->get_type_name();
    if (o->get_expected_min() > 0 && (t == "INT" || t == "UINT" || t == "FLOAT")) o->check(strict(t));
  }
  for (CLI::App* s : app.get_subcommands([](CLI::App*) { return true; })) strict_numbers(*s);
}

CLI::Option* int_range(CLI::Option* o, std::int64_t lo, std::int64_t hi, const std::string& rule) {
  return o->check(CLI::Validator(
      [lo, hi, rule](std::string& text) -> std::string {
        try {  // CLI11 names the option: "--step: value 2147483648 is out of range: it must be in [0, ...]"
          text = std::to_string(parse_int(text, "value", lo, hi));
          return {};
        } catch (const Error& e) {
          return rule.empty() ? std::string(e.what()) : "value " + text.substr(0, 40) + " " + rule;
        }
      },
      ""));
}

std::string parse_error_text(const CLI::App& app, const CLI::ParseError& e, int argc, const char* const* argv) {
  const CLI::App* a = active(app);
  // a word where a subcommand belongs: `cplab rn`
  if (a == &app && !app.get_subcommands([](const CLI::App*) { return true; }).empty()) {
    std::vector<std::string> cmds;
    for (const CLI::App* s : app.get_subcommands([](const CLI::App*) { return true; })) cmds.push_back(s->get_name());
    for (int i = 1; i < argc; ++i) {
      const std::string w = argv[i];
      if (w.empty() || w[0] == '-') continue;
      const std::string near = closest(w, cmds);
      return "'" + w + "' is not a " + app.get_name() + " command" + (near.empty() ? "" : " (did you mean '" + near + "'?)") +
             "; the commands are: " + join(cmds);
    }
  }
  // a single-valued option given twice (MultiOptionPolicy::Throw)
  if (dynamic_cast<const CLI::ArgumentMismatch*>(&e)) {
    std::vector<std::pair<const CLI::Option*, int>> seen;
    for (int i = 1; i < argc; ++i) {
      const std::string w = std::string(argv[i]).substr(0, std::string(argv[i]).find('='));
      if (w.size() < 2 || w[0] != '-' || std::isdigit(static_cast<unsigned char>(w[1])) || w[1] == '.') continue;
      const CLI::Option* o = a->get_option_no_throw(w);
      if (o == nullptr || o->get_expected_min() == 0) continue;  // a flag may be repeated
      auto it = std::find_if(seen.begin(), seen.end(), [o](const auto& x) { return x.first == o; });
      if (it == seen.end())
        seen.emplace_back(o, 1);
      else if (++it->second == 2)
        return o->get_name() + where(*a) +
               " is given more than once: each option takes one value, give it once "
               "(a repeated option is refused, not the last one taken)";
    }
  }
  if (dynamic_cast<const CLI::ExtrasError*>(&e)) {
    const std::vector<std::string> names = option_names(*a);
    for (int i = 1; i < argc; ++i) {
      std::string w = argv[i];
      if (w.size() < 2 || w[0] != '-' || std::isdigit(static_cast<unsigned char>(w[1])) || w[1] == '.') continue;  // a word or -2
      w = w.substr(0, w.find('='));
      if (std::find(names.begin(), names.end(), w) != names.end() || w == "-h" || w == "--help") continue;
      if (a->get_option_no_throw(w)) continue;  // a short name (-x) it knows
      const std::string near = closest(w, names);
      return "unknown option " + w + where(*a) + (near.empty() ? "" : " (did you mean " + near + "?)") + "; " +
             (a->get_parent() ? app.get_name() + " " + a->get_name() : app.get_name()) + " --help lists them";
    }
    const std::vector<std::string> extra = a->remaining();
    return "unexpected argument" + std::string(extra.size() > 1 ? "s " : " ") + join(extra) + where(*a) +
           " (every value belongs to an option, e.g. --seq 4096)";
  }
  return e.what();
}

namespace {

// the status of a tool whose body returned status: 2 if its standard output could not be written
// (/dev/full, a closed pipe), naming it; what it printed is its report, and a lost report is no success
int stdout_checked(const char* tool, int status) {
  errno = 0;
  std::cout.flush();  // (synced with stdio: this is fflush(stdout), and its errno)
  int e = errno;
  if (std::fflush(stdout) != 0 && e == 0) e = errno;
  if (!std::ferror(stdout) && !std::cout.fail()) return status;
  std::cerr << tool << ": error: cannot write to standard output (" << (e != 0 ? std::strerror(e) : "a write failed")
            << "): the report is lost\n";
  std::clearerr(stdout);
  return 2;
}

// body's status, every exception turned into its message and exit 2
int run_body(const char* tool, CLI::App& app, int argc, const char* const* argv, const std::function<int()>& body) {
  try {
    return body();
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::cerr << tool << ": error: " << parse_error_text(app, e, argc, argv) << "\n";
    return 2;
  } catch (const std::bad_alloc&) {
    std::cerr << tool << ": error: out of memory (the configuration is too large for this machine; "
                         "every size limit is checked first, so this one was not foreseen: please report it)\n";
    return 2;
  } catch (const Error& e) {
    std::cerr << tool << ": error: " << e.what() << "\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << tool << ": error: " << e.what() << "\n";
    return 2;
  } catch (...) {
    std::cerr << tool << ": error: an unknown exception ended the run\n";
    return 2;
  }
}

}  // namespace

int cli_main(const char* tool, CLI::App& app, int argc, const char* const* argv, const std::function<int()>& body) {
  return stdout_checked(tool, run_body(tool, app, argc, argv, body));
}

}  // namespace cplab::app
