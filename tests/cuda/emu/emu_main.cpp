// emu_main.cpp: doctest's main for cplab_kernel_emu_tests and the v3 mutants (mutants.cmake), after
// the runtime settings every cplab program makes (reference/core/runtime_env.h).
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include "core/runtime_env.h"

int main(int argc, char** argv) {
  cplab::prepare_runtime(argv);
  return doctest::Context(argc, argv).run();
}
