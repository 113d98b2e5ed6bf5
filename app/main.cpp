// main.cpp: the `cplab` command. `cplab --help` lists the subcommands; each has its own --help.
//
// What it is: argument parsing (CLI11) and error-to-exit-status mapping, nothing else.
#include <cstdio>
#include <exception>
#include <new>
#include <iostream>

#include "commands.h"
#include "core/error.h"
#include "core/omp_policy.h"

int main(int argc, char** argv) {
  cplab::passive_omp_wait(argv);  // idle OpenMP threads sleep (core/omp_policy.h)
  CLI::App app{
      "cplab: context-parallel attention, taught and proven.\n"
      "Every CP mode runs on simulated ranks in one process and is checked against dense attention.\n"
      "Examples:\n"
      "  cplab demo\n"
      "  cplab run --mode p2p --cp 4 --seq 4096 --heads 8 --kv-heads 2 --head-dim 64 --causal --layout zigzag --backward\n"};
  app.require_subcommand(1);
  app.option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);  // a repeated option: the last one wins
  int status = 0;
  cplab::app::setup_run(app, status);
  cplab::app::setup_demo(app, status);
  cplab::app::setup_layout(app, status);
  cplab::app::setup_schedule(app, status);
  cplab::app::setup_plan(app, status);
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    app.exit(e);  // prints CLI11's message naming the option
    return 2;
  } catch (const std::bad_alloc&) {
    std::cerr << "cplab: error: out of memory (the configuration is too large for this machine)\n";
    return 2;
  } catch (const cplab::Error& e) {
    std::cerr << "cplab: error: " << e.what() << "\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "cplab: internal error: " << e.what() << "\n";
    return 1;
  }
  return status;
}
