// test_comm_main.cpp: main() of cplab_comm_tests (the GPU tests of cuda/comm).
//
// What it is: the same pattern as cuda/test_cuda_main.cpp: if no CUDA device is usable, prints one
// line "skipped: no CUDA device (<reason>)" and returns 77, which ctest reports as "Skipped";
// otherwise prints the device summary and runs the doctest cases, returning their status.
// What it is not: a test itself (the cases live in test_local_comm.cpp and test_nccl_comm.cpp).
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
