// comm_check_run.h: the checks of cplab-comm-check, for one rank, whatever the backend.
//
// What it is: RankCheck owns one rank's device buffers and stream and runs each check in four
// phases (prepare: upload inputs and poison outputs; issue: the communication; wait; verify on the
// host), so that one driver can call the phases for every rank in lockstep (LocalWorld, one thread)
// and another can run them in a thread or process per rank (NCCL). Checks: a ring exchange (send to
// rank + 1, receive from rank - 1), an all-gather and an all-to-all over the whole communicator, and
// an all-gather over the sub-group of even ranks (which exercises the point-to-point collectives on
// every backend). Every byte is known in advance (check_byte), so the host can check every byte.
// What it is not: a benchmark (times include host-side launch overheads and first-use set-up).
#pragma once

#include "comm.h"
#include "device_buffer.h"

#include <cuda_runtime.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace cplab::cuda {

enum class CheckKind { ring, all_gather, all_to_all, group_all_gather };
inline constexpr std::array<CheckKind, 4> kAllChecks{CheckKind::ring, CheckKind::all_gather, CheckKind::all_to_all,
                                                     CheckKind::group_all_gather};
const char* check_name(CheckKind kind);  // "ring exchange", "all-gather", ...

// Byte i of the block rank `src` contributes for rank `dst` (dst = -1: the same block for everyone).
std::uint8_t check_byte(CheckKind kind, int src, int dst, std::size_t i);

class RankCheck {
 public:
  // Allocates 2 * P * block_bytes device bytes (P = comm.size()) and a stream on the current device.
  RankCheck(Comm& comm, std::size_t block_bytes);
  ~RankCheck();
  RankCheck(const RankCheck&) = delete;
  RankCheck& operator=(const RankCheck&) = delete;

  Comm& comm() { return comm_; }
  bool participates(CheckKind kind) const;  // group_all_gather: even ranks only
  void prepare(CheckKind kind);             // stream-ordered: inputs uploaded, outputs poisoned
  void issue(CheckKind kind);               // the communication, on the stream
  void wait() { comm_.synchronize(stream_); }
  std::string verify(CheckKind kind);  // after wait(): "" or "rank r: <first wrong byte>, n wrong bytes"

 private:
  std::vector<int> even_ranks() const;
  Comm& comm_;
  std::size_t B_;
  cudaStream_t stream_ = nullptr;
  DeviceBuffer<std::uint8_t> in_;   // (P, B) bytes: block j is for position j
  DeviceBuffer<std::uint8_t> out_;  // (P, B) bytes: block i is from position i
  std::vector<std::uint8_t> host_in_;  // (P, B), kept alive until the upload has run
};

}  // namespace cplab::cuda
