// main.cpp: the `cplab` command. `cplab --help` lists the subcommands; each has its own --help.
//
// What it is: the subcommands registered (commands.h), every numeric option made strict, and the
// exception boundary of cli_common.h: bad input of any kind prints "cplab: error: <rule>" and exits 2.
// What it is not: any command's logic (cmd_*.cpp).
#include "cli_common.h"
#include "commands.h"
#include "core/runtime_env.h"

int main(int argc, char** argv) {
  cplab::prepare_runtime(argv);  // OpenMP and OpenBLAS settings, read at load time (core/runtime_env.h)
  CLI::App app{
      "cplab: context-parallel attention, taught and proven.\n"
      "Every CP mode runs on simulated ranks in one process and is checked against dense attention.\n"
      "Examples:\n"
      "  cplab demo\n"
      "  cplab run --mode p2p --cp 4 --seq 4096 --heads 8 --kv-heads 2 --head-dim 64 --causal --layout zigzag --backward\n"
      "  cplab check --mode p2p --cp 4 --layout zigzag --causal --inputs DIR --outputs DIR\n",
      "cplab"};
  int status = 0;
  cplab::app::setup_cplab(app, status);
  return cplab::app::cli_main("cplab", app, argc, argv, [&] {
    app.parse(argc, argv);  // the chosen subcommand's action runs here and sets status
    return status;
  });
}
