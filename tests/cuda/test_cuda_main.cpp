// test_cuda_main.cpp: main() of the GPU test binaries (cplab_cuda_tests, cplab_comm_tests, cplab_cp_gpu_tests).
//
// What it is: if no CUDA device is usable, prints one line "skipped: no CUDA device (<reason>)" and
// returns 77, which ctest reports as "Skipped" (SKIP_RETURN_CODE 77), or fails (1) where the
// machine has an NVIDIA driver that CUDA cannot use (device.h: no_device_exit); otherwise prints
// the device summary and runs the doctest cases, returning their status. doctest's queries that run
// no case (--list-test-cases, --list-test-suites, --count, --help, --version) answer on any machine:
// the prebuilt programs are checked that way on a machine without a GPU (scripts/gpu-prebuilt.sh).
// What it is not: a test itself (the cases live in test_*.cpp).
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include "core/runtime_env.h"
#include "device.h"

#include <cstdio>
#include <string_view>

namespace {
// true when an argument is one of doctest's options that list or count without running a case
bool query_only(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    std::string_view opt = argv[i];
    if (opt.starts_with("--dt-")) opt.remove_prefix(5);
    else if (opt.starts_with("--")) opt.remove_prefix(2);
    else if (opt.starts_with("-")) opt.remove_prefix(1);
    else continue;
    opt = opt.substr(0, opt.find('='));
    for (std::string_view q : {"list-test-cases", "ltc", "list-test-suites", "lts", "list-reporters", "lr", "count", "c",
                               "help", "h", "?", "version", "v"})
      if (opt == q) return true;
  }
  return false;
}
}  // namespace

int main(int argc, char** argv) {
  cplab::prepare_runtime(argv);  // OpenMP and OpenBLAS settings for the CPU oracle (reference/core/runtime_env.h)
  if (query_only(argc, argv)) return doctest::Context(argc, argv).run();
  if (const auto rc = cplab::cuda::no_device_exit("")) return *rc;  // 77 (skipped), or 1 on a broken GPU machine
  std::printf("cuda device 0: %s\n", cplab::cuda::device_summary().c_str());
  doctest::Context context(argc, argv);
  return context.run();
}
