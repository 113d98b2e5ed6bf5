// test_nccl_comm.cpp: GPU tests of NcclComm (built when NCCL is found; need a CUDA device).
//
// What it is: every check of comm_check_run.h on one rank per visible GPU (up to 8), a thread per
// rank; check_same_config agreeing (and, with 2+ GPUs, disagreeing on every rank); and "never a
// hang": a recv with no send, on a 1-rank communicator with a 3 s time-out, must throw a CommError
// (an NCCL error or the time-out, then ncclCommAbort) within seconds.
// What it is not: a multi-node or bandwidth test, or a test of several ranks on one GPU (NCCL
// refuses that; LocalComm covers it).
#include <doctest/doctest.h>

#include "check.h"
#include "comm_check_run.h"
#include "device.h"
#include "device_buffer.h"
#include "nccl_comm.h"

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

using namespace cplab::cuda;

TEST_CASE("NcclComm: ring, all-gather, all-to-all and a sub-group all-gather, a thread per GPU") {
  const int n = std::min(device_count(), 8);
  REQUIRE(n >= 1);
  const auto comms = NcclComm::init_all(n);
  std::vector<std::string> errors(static_cast<std::size_t>(n));
  run_per_rank(comms, [&](NcclComm& c) {
    RankCheck rc(c, 100003);  // an odd block size
    for (const CheckKind kind : kAllChecks) {
      rc.prepare(kind);
      rc.issue(kind);
      rc.wait();
      errors[static_cast<std::size_t>(c.rank())] += rc.verify(kind);
    }
    c.check_same_config("mode=ring S=8192");
  });
  for (const auto& e : errors) CHECK(e == "");
  const std::uint64_t B = 100003;
  // all_gather and all_to_all whole: (n-1) B each; ring: B unless n == 1; group: (evens-1) B on even ranks
  CHECK(comms[0]->bytes_sent() == (n > 1 ? B : 0) + 2 * (static_cast<std::uint64_t>(n) - 1) * B +
                                      (static_cast<std::uint64_t>((n + 1) / 2) - 1) * B);
}

TEST_CASE("NcclComm: check_same_config fails on every rank naming the ranks that differ" *
          doctest::skip(device_count() < 2)) {
  const int n = std::min(device_count(), 8);
  const auto comms = NcclComm::init_all(n);
  std::vector<std::string> messages(static_cast<std::size_t>(n));
  run_per_rank(comms, [&](NcclComm& c) {
    try {
      c.check_same_config(c.rank() == 1 ? "layout=zigzag" : "layout=striped");
    } catch (const CommError& e) {
      messages[static_cast<std::size_t>(c.rank())] = e.what();
    }
  });
  for (const auto& m : messages) CHECK(m.find("rank 1 differ from rank 0") != std::string::npos);
}

// that it throws instead of hanging is the test; how long it takes is not asserted (a hang is caught
// by ctest's TIMEOUT of comm_gpu_tests)
TEST_CASE("NcclComm: an unmatched recv throws within the time-out instead of hanging") {
  NcclOptions options;
  options.timeout_s = 3;
  NcclComm comm(NcclComm::unique_id(), 0, 1, 0, options);
  DeviceBuffer<std::uint8_t> buf(64);
  cudaStream_t stream = nullptr;
  CPLAB_CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  CHECK_THROWS_AS(
      {
        comm.recv(buf.data(), 64, 0, stream);  // no send to match it
        comm.synchronize(stream);
      },
      CommError);
  CHECK_THROWS_WITH_AS(comm.check_async(), doctest::Contains("aborted earlier"), CommError);
  (void)cudaStreamDestroy(stream);
}
