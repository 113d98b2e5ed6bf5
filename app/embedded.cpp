// embedded.cpp: the commands for another front end (embedded.h): the whole `cplab` command line
// built as main.cpp builds it (setup_cplab), parsed from a list of words, its parse errors turned
// into cplab::Error with the command line's message (cli_common.h parse_error_text).
#include "embedded.h"

#include <iostream>
#include <sstream>

#include "cli_common.h"
#include "commands.h"
#include "core/error.h"
#include "embedded_context.h"

namespace cplab::app {

namespace {

// `cplab WORDS...` parsed and its action run; returns its exit status
int parse_cplab(const std::vector<std::string>& words) {
  CLI::App app{"cplab", "cplab"};
  int status = 0;
  setup_cplab(app, status);
  std::vector<std::string> argv_s{"cplab"};
  argv_s.insert(argv_s.end(), words.begin(), words.end());
  std::vector<const char*> argv;
  for (const std::string& w : argv_s) argv.push_back(w.c_str());
  const int argc = static_cast<int>(argv.size());
  try {
    app.parse(argc, argv.data());
  } catch (const CLI::CallForHelp&) {
    throw Error("--help is the command line's; the Python functions' docstrings document their arguments");
  } catch (const CLI::CallForAllHelp&) {
    throw Error("--help-all is the command line's; the Python functions' docstrings document their arguments");
  } catch (const CLI::ParseError& e) {
    throw Error(parse_error_text(app, e, argc, argv.data()));
  }
  return status;
}

// standard output captured for a scope (the commands print with std::cout)
struct CaptureCout {
  std::ostringstream buf;
  std::streambuf* old;
  CaptureCout() : old(std::cout.rdbuf(buf.rdbuf())) {}
  ~CaptureCout() { std::cout.rdbuf(old); }
  CaptureCout(const CaptureCout&) = delete;
  CaptureCout& operator=(const CaptureCout&) = delete;
};

// restores a thread_local context pointer however the parse ends
template <class T>
struct ContextScope {
  T*& slot;
  ContextScope(T*& s, T* value) : slot(s) { slot = value; }
  ~ContextScope() { slot = nullptr; }
  ContextScope(const ContextScope&) = delete;
  ContextScope& operator=(const ContextScope&) = delete;
};

std::vector<std::string> with_command(const char* command, const std::vector<std::string>& args) {
  std::vector<std::string> w{command};
  w.insert(w.end(), args.begin(), args.end());
  return w;
}

}  // namespace

RunReport run_embedded(const std::vector<std::string>& args, const RunArrays& arrays, InputsSeen* seen) {
  EmbeddedRun ctx{&arrays, seen, {}};
  ContextScope scope(embedded_run, &ctx);
  parse_cplab(with_command("run", args));
  if (!ctx.report) throw Error("cplab run did not run (an option that only prints was given)");
  return std::move(*ctx.report);
}

CheckReport check_embedded(const std::vector<std::string>& args, const CheckSources& sources, double max_flops,
                           const std::string& where) {
  EmbeddedCheck ctx{&sources, {}, max_flops, where};
  ContextScope scope(embedded_check, &ctx);
  // --inputs and --outputs are required on the command line; here the arrays stand for them
  std::vector<std::string> words = with_command("check", args);
  for (const char* w : {"--inputs", "(arrays)", "--outputs", "(arrays)"}) words.emplace_back(w);
  parse_cplab(words);
  if (!ctx.report) throw Error("cplab check did not run");
  return std::move(*ctx.report);
}

int cli_capture(const std::vector<std::string>& args, std::string& out) {
  // only the commands that read and write no files (run and check have their own entries above)
  require(!args.empty() && (args[0] == "layout" || args[0] == "schedule" || args[0] == "plan"),
          "cli_capture runs cplab layout, schedule or plan");
  int status = 0;
  {
    CaptureCout capture;
    status = parse_cplab(args);
    std::cout.flush();
    out = capture.buf.str();
  }
  return status;
}

std::vector<std::pair<std::string, bool>> command_options(const std::string& command) {
  CLI::App app{"cplab", "cplab"};
  int status = 0;
  setup_cplab(app, status);
  CLI::App* sub = nullptr;
  for (CLI::App* s : app.get_subcommands({}))
    if (s->get_name() == command) sub = s;
  require(sub != nullptr, "cplab has no command '" + command + "'");
  std::vector<std::pair<std::string, bool>> out;
  for (const CLI::Option* o : sub->get_options())
    for (const std::string& name : o->get_lnames()) out.emplace_back(name, o->get_expected_max() == 0);
  return out;
}

}  // namespace cplab::app
