// commands.h: the subcommands of the `cplab` command line, each in its own file.
//
// What it is: setup functions that register a subcommand's options on the CLI11 app and arrange
// for its action to run; the action's exit status goes to `status`. setup_cplab registers them all
// and makes every numeric option strict (cli_common.h): main.cpp and the fuzz test build the same
// command line with it.
// Exit statuses: 0 ok, 1 a check failed (demo error above tolerance, check: not equivalent), 2 bad input (a
// cplab::Error or a command-line parse error, with the rule printed).
// What it is not: an algorithm; every number printed comes from reference/run/experiment.h (check:
// reference/check/check.h).
#pragma once

#include <CLI/CLI.hpp>

namespace cplab::app {

void setup_run(CLI::App& app, int& status);   // cmd_run.cpp
void setup_demo(CLI::App& app, int& status);  // cmd_demo.cpp
void setup_layout(CLI::App& app, int& status);  // cmd_layout.cpp
void setup_schedule(CLI::App& app, int& status);  // cmd_schedule.cpp
void setup_plan(CLI::App& app, int& status);      // cmd_plan.cpp
void setup_check(CLI::App& app, int& status);     // cmd_check.cpp
void setup_cplab(CLI::App& app, int& status);     // all of the above (commands.cpp)

// tests/fuzz only: when true, each action returns 0 as soon as its inputs are read and checked,
// before computing or writing anything (the fuzz test checks parsing, not runs)
inline bool check_only = false;

}  // namespace cplab::app
