// emu_main.cpp: doctest's main for cplab_kernel_emu_tests and the v3 mutants (mutants.cmake).
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>
