// test_cuda_main.cpp: main() of the GPU test binaries (cplab_cuda_tests, cplab_comm_tests, cplab_cp_gpu_tests).
//
// What it is: if no CUDA device is usable, prints one line "skipped: no CUDA device (<reason>)" and
// returns 77, which ctest reports as "Skipped" (SKIP_RETURN_CODE 77), or fails (1) where the
// machine has an NVIDIA driver that CUDA cannot use (device.h: no_device_exit); otherwise prints
// the device summary and runs the doctest cases, returning their status.
// What it is not: a test itself (the cases live in test_*.cpp).
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include "device.h"

#include <cstdio>

int main(int argc, char** argv) {
  if (const auto rc = cplab::cuda::no_device_exit("")) return *rc;  // 77 (skipped), or 1 on a broken GPU machine
  std::printf("cuda device 0: %s\n", cplab::cuda::device_summary().c_str());
  doctest::Context context(argc, argv);
  return context.run();
}
