// comm.h: cplab::cuda::Comm, the one communicator interface every context-parallel mode uses on GPUs.
//
// What it is: one rank's view of a communicator of size() ranks, with NCCL's semantics:
// - send/recv are stream-ordered. A send/recv pair completes on BOTH streams: work enqueued after
//   a send may overwrite the sent buffer, and work enqueued after a recv may read the received one.
// - Point-to-point ops between the same two ranks match in call order. Sizes must be equal.
// - Ops between group_start() and group_end() progress together, so a ring step's send + recv
//   cannot deadlock. Groups nest; only the outermost group_end() issues.
// - Collectives (all_gather, all_to_all) run over the whole communicator or over a sub-group given
//   as a list of global ranks; every member calls them with the same group and block size.
// Everything is in bytes (dtype-free). Failures throw: std::invalid_argument (a bad argument,
// caught before any CUDA/NCCL call), std::logic_error (a schedule bug: unmatched or mismatched
// operations, unbalanced groups; on real GPUs these hang), CommError (asynchronous CUDA/NCCL
// errors, time-outs, differing configurations) and NoDeviceError (no usable CUDA device).
// Backends: LocalComm (local_comm.h: P virtual ranks on one GPU, one host thread) and NcclComm
// (nccl_comm.h: one rank per GPU, a thread or a process per rank).
// What it is not: a tensor library (callers document shapes), a reduction (no all-reduce or
// reduce-scatter yet), or thread-safe: one host thread drives a Comm at a time.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace cplab::cuda {

// A sub-group: position i of the group is global rank group[i]. Empty = the whole communicator
// (position = rank). Members must be distinct, in [0, size()) and include the calling rank.
using Group = std::vector<int>;

// Asynchronous failures, time-outs and configuration differences (see the header comment).
class CommError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// No usable CUDA device: thrown before any NCCL call; callers that may run on CPU-only machines
// turn it into "skipped" (exit 77).
class NoDeviceError : public CommError {
 public:
  using CommError::CommError;
};

class Comm {
 public:
  virtual ~Comm() = default;
  Comm(const Comm&) = delete;
  Comm& operator=(const Comm&) = delete;

  virtual int rank() const = 0;
  virtual int size() const = 0;
  virtual const char* backend() const = 0;  // "local" or "nccl"

  // --- point to point (peer: a global rank in [0, size()); peer == rank() is allowed)
  // buf: device memory, `bytes` bytes, must stay valid (and unwritten) until the pair completes
  // on `stream`. bytes == 0 is allowed (the pair still orders both streams); buf may then be null.
  virtual void send(const void* buf, std::size_t bytes, int peer, cudaStream_t stream) = 0;
  // buf: device memory, `bytes` bytes, written when the pair completes on `stream`.
  virtual void recv(void* buf, std::size_t bytes, int peer, cudaStream_t stream) = 0;
  virtual void group_start() = 0;
  virtual void group_end() = 0;

  // --- collectives over `group` (see Group); G = group size, p = this rank's position in it.
  // out block i (bytes_per_rank bytes at out + i * bytes_per_rank) = position i's `in`.
  // In place when in == out + p * bytes_per_rank; otherwise in and out must not overlap.
  void all_gather(const void* in,  // (bytes_per_rank) bytes, device
                  void* out,       // (G, bytes_per_rank) bytes, device
                  std::size_t bytes_per_rank, const Group& group, cudaStream_t stream);
  // Block j of `in` goes to position j; block i of `out` comes from position i (out[i] = in_i[p]).
  // in and out must not overlap.
  void all_to_all(const void* in,  // (G, bytes_per_peer) bytes, device; block j for position j
                  void* out,       // (G, bytes_per_peer) bytes, device; block i from position i
                  std::size_t bytes_per_peer, const Group& group, cudaStream_t stream);

  // --- failure detection
  // Throws CommError naming this rank and the last call issued if an asynchronous error happened
  // (a failed copy, an NCCL async error, an earlier schedule bug in the same LocalWorld).
  virtual void check_async() = 0;
  // Blocks until `stream` has finished, then check_async(). Never hangs: LocalComm throws if this
  // rank still has unmatched ops on `stream`; NcclComm polls with a time-out, then aborts.
  virtual void synchronize(cudaStream_t stream) = 0;
  // Collective over the whole communicator: every rank passes a description of its configuration
  // (e.g. "mode=ring layout=zigzag S=8192 ..."); if they differ, every rank throws a CommError
  // naming the ranks that differ from rank 0. Compares a 64-bit hash and the length.
  virtual void check_same_config(const std::string& description);

  // --- accounting: bytes and messages this rank has sent to OTHER ranks (sends to itself and the
  // local copy of its own block in collectives are not communication and are not counted)
  std::uint64_t bytes_sent() const { return bytes_sent_; }
  std::uint64_t messages_sent() const { return messages_sent_; }

  // FNV-1a 64-bit hash of `s` (what check_same_config exchanges, with s.size()).
  static std::uint64_t config_hash(const std::string& s);

 protected:
  Comm() = default;

  // A validated group: members[i] = global rank of position i; position = this rank's position.
  struct ResolvedGroup {
    std::vector<int> members;
    int position = 0;
    bool whole = false;  // members == 0, 1, ..., size() - 1
  };
  ResolvedGroup resolve(const Group& group, const char* op) const;

  // Collective bodies after validation. The defaults are built from send/recv inside one group
  // (every position exchanges directly with every other one) plus a stream-ordered local copy of
  // the own block; backends may override them with native collectives.
  virtual void all_gather_impl(const void* in, void* out, std::size_t bytes, const ResolvedGroup& g,
                               cudaStream_t stream);
  virtual void all_to_all_impl(const void* in, void* out, std::size_t bytes, const ResolvedGroup& g,
                               cudaStream_t stream);

  // Throws std::invalid_argument unless peer is in [0, size()) and buf is non-null when bytes > 0.
  void check_p2p_args(const char* op, const void* buf, std::size_t bytes, int peer) const;
  void count_send(std::size_t bytes, int peer) {
    if (peer == rank()) return;
    bytes_sent_ += bytes;
    ++messages_sent_;
  }
  // "rank 2 of 8 (<backend>)", for messages
  std::string who() const;

 private:
  std::uint64_t bytes_sent_ = 0;
  std::uint64_t messages_sent_ = 0;
};

// What check_same_config compares, for every rank: (hash, length) pairs indexed by rank. Returns ""
// when all equal rank 0's, else "ranks 2, 5 differ from rank 0" (used by the backends).
std::string describe_config_mismatch(const std::vector<std::uint64_t>& hash_and_length);

}  // namespace cplab::cuda
