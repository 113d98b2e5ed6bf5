// cli_common.h: what the command lines of `cplab` and `cplab-viz` share around CLI11.
//
// What it is:
//   strict_numbers(app)    attaches, to every numeric option of app and its subcommands, a check
//                          that the text is a whole number in the range of its variable's type
//                          (CLI11 2.1 clamps 99999999999999999999999 to INT64_MAX) or a finite
//                          real (inf and nan refused), naming the option
//   parse_error_text(...)  one line for a CLI11 parse error that names what was wrong and, for an
//                          unknown command or option, suggests the closest known one
//   cli_main(...)          runs a tool's body and turns every exception into "<tool>: error: ..."
//                          and exit 2 (bad_alloc into "out of memory"), so no tool aborts; a
//                          standard output that could not be written (/dev/full) is exit 2 too
// Exit statuses of both tools: 0 ok, 1 a check failed, 2 bad input (the rule printed) or an output
// that could not be written, 3 (cplab-viz) no display, and 0 for --help.
// What it is not: an option's domain rule (cp <= 256 lives in the reference, with its message).
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <functional>
#include <string>

namespace cplab::app {

void strict_numbers(CLI::App& app);

// attaches to o (an integer option) the check that its value is a whole number in [lo, hi], naming
// o and the range ("--step: value 2147483648 is out of range: it must be in [0, 2147483647]"), or,
// given, the rule ("--lesson: value 2147483648 " + rule); returns o
CLI::Option* int_range(CLI::Option* o, std::int64_t lo, std::int64_t hi, const std::string& rule = "");

// the message for e, raised while app parsed argv (argv lets it find the unknown word)
std::string parse_error_text(const CLI::App& app, const CLI::ParseError& e, int argc, const char* const* argv);

// run body(); tool names the prefix ("cplab", "cplab-viz"). Prints help (exit 0) for CLI11's help
// requests, "<tool>: error: <message>" (exit 2) for every exception, and returns body's status.
int cli_main(const char* tool, CLI::App& app, int argc, const char* const* argv, const std::function<int()>& body);

}  // namespace cplab::app
