// test_main.cpp: doctest's main for cplab_tests (the CPU reference tests).
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>
