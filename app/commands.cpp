// commands.cpp: the whole `cplab` command line, as main.cpp and the fuzz test build it (commands.h).
#include "cli_common.h"
#include "commands.h"

namespace cplab::app {

void setup_cplab(CLI::App& app, int& status) {
  app.require_subcommand(1);
  // a repeated option is refused (CLI11 keeps flags at TakeLast: a flag may repeat)
  app.option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::Throw);
  setup_run(app, status);
  setup_demo(app, status);
  setup_layout(app, status);
  setup_schedule(app, status);
  setup_plan(app, status);
  setup_check(app, status);
  strict_numbers(app);
}

}  // namespace cplab::app
