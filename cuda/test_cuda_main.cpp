// test_cuda_main.cpp: main() of the GPU test binaries (cplab_cuda_tests, cplab_comm_tests, cplab_cp_gpu_tests).
//
// What it is: if no CUDA device is usable, prints one line "skipped: no CUDA device (<reason>)" and
// returns 77, which ctest reports as "Skipped" (SKIP_RETURN_CODE 77); otherwise prints the device
// summary and runs the doctest cases, returning their status.
// What it is not: a test itself (the cases live in test_*.cpp).
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include "device.h"

#include <cstdio>
#include <string>

int main(int argc, char** argv) {
  const std::string reason = cplab::cuda::device_unusable_reason();
  if (!reason.empty()) {
    std::printf("skipped: no CUDA device (%s)\n", reason.c_str());
    return 77;
  }
  std::printf("cuda device 0: %s\n", cplab::cuda::device_summary().c_str());
  doctest::Context context(argc, argv);
  return context.run();
}
