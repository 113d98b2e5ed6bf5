// commands.h: the subcommands of the `cplab` command line, each in its own file.
//
// What it is: setup functions that register a subcommand's options on the CLI11 app and arrange
// for its action to run; the action's exit status goes to `status`.
// Exit statuses: 0 ok, 1 a check failed (e.g. demo error above tolerance) or an internal error,
// 2 bad input (a cplab::Error or a command-line parse error, with the rule printed).
// What it is not: an algorithm; every number printed comes from reference/run/experiment.h.
#pragma once

#include <CLI/CLI.hpp>

namespace cplab::app {

void setup_run(CLI::App& app, int& status);   // cmd_run.cpp
void setup_demo(CLI::App& app, int& status);  // cmd_demo.cpp
void setup_layout(CLI::App& app, int& status);  // cmd_layout.cpp
void setup_schedule(CLI::App& app, int& status);  // cmd_schedule.cpp
void setup_plan(CLI::App& app, int& status);      // cmd_plan.cpp

}  // namespace cplab::app
