// local_comm.h: LocalWorld / LocalComm, P virtual ranks on ONE GPU in one process, driven by one
// host thread that issues each rank's calls in turn (the GPU twin of reference/sim/comm.h's SimComm).
//
// What it is: LocalWorld(P) owns the shared state (unmatched operations per (src, dst) pair, an
// event pool, byte counters); world.rank(r) is rank r's Comm&. Each rank uses its own buffers and
// streams. A send/recv pair is matched in call order per (src, dst) pair; whichever half is called
// second issues it: the receiver's stream waits for an event recorded on the sender's stream at
// send time, copies device to device (cudaMemcpyAsync), records a completion event, and the
// sender's stream waits for it, so both streams see the pair complete, as with NCCL.
// Collectives are the point-to-point ones of comm.cpp (all pairs exchange directly).
// Schedule bugs throw std::logic_error naming ranks and sizes instead of hanging: a size mismatch
// at pairing; unmatched operations at world.group_end() (outermost), at world.finish(), and at
// synchronize() of a stream that still has an unmatched operation of that rank. The destructor
// reports unmatched operations on stderr (it cannot throw). After the first schedule bug or
// configuration mismatch, every later call on any rank of the world throws the same error.
//
// THE RULE (what replaces NCCL's blocking): an operation is put on the streams only when its
// partner is issued. Until then, its rank must not enqueue work that writes a buffer being sent
// or reads a buffer being received, and must not record an event on that stream for another
// stream to wait on: the event would not cover the copy, which is enqueued later. Lockstep CP code
// satisfies this by issuing every rank's communication of a step first, then recording events and
// enqueuing the work that depends on it. world.group_start()/group_end() around a step checks
// that every operation is matched at the outermost world.group_end(); it cannot see an event
// recorded too early. That is what the copy delay is for: with CPLAB_LOCAL_COMM_DELAY_US=N in the
// environment (or set_copy_delay_us(N)), every copy waits N microseconds on the GPU first, so
// work that reads a received buffer without really waiting for it reads stale data every time,
// and a test fails instead of passing by timing luck.
//
// check_async() (and so finish()) queries every stream a rank has used since the last finish():
// keep those streams alive until then.
//
// What it is not: thread-safe (one host thread drives all ranks), multi-GPU (use NcclComm), or a
// model of link speed: a same-GPU copy reads and writes HBM, so timings are not NVLink timings.
#pragma once

#include "comm.h"

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace cplab::cuda {

class LocalWorld;

class LocalComm final : public Comm {
 public:
  int rank() const override { return rank_; }
  int size() const override;
  const char* backend() const override { return "local"; }

  void send(const void* buf, std::size_t bytes, int peer, cudaStream_t stream) override;
  void recv(void* buf, std::size_t bytes, int peer, cudaStream_t stream) override;
  void group_start() override;
  void group_end() override;

  void check_async() override;
  void synchronize(cudaStream_t stream) override;
  // Host-side: each rank's string is kept until all P ranks have called; the call that completes
  // the round compares them and throws a CommError naming every rank that differs from rank 0
  // (with the strings), and the world then fails every later call on every rank.
  void check_same_config(const std::string& description) override;

 private:
  friend class LocalWorld;
  LocalComm(LocalWorld* world, int rank) : world_(world), rank_(rank) {}
  LocalWorld* world_;
  int rank_;
  int group_depth_ = 0;
  std::string last_call_ = "(none)";
  std::vector<cudaStream_t> streams_;  // streams used since the last finish(), for check_async
};

class LocalWorld {
 public:
  // 1 <= P <= 4096; makes no CUDA call (events are created on first use); reads the copy delay
  // from CPLAB_LOCAL_COMM_DELAY_US (std::invalid_argument unless an integer in [0, 1e6])
  explicit LocalWorld(int P);
  ~LocalWorld();
  LocalWorld(const LocalWorld&) = delete;
  LocalWorld& operator=(const LocalWorld&) = delete;

  int size() const { return static_cast<int>(ranks_.size()); }
  Comm& rank(int r);  // throws std::invalid_argument outside [0, P)
  LocalComm& local(int r);

  // A checking region around one step of every rank's calls: at the outermost group_end() every
  // operation posted so far must be matched, else std::logic_error listing the unmatched ones.
  void group_start();
  void group_end();

  // End of a schedule: throws the earlier failure, or std::logic_error if any rank has an open
  // group, an unmatched operation or an incomplete check_same_config round; then check_async() on
  // every rank. Does not wait for the GPU (synchronize the streams for that).
  void finish();

  std::size_t pending() const;  // unmatched operations

  // Stress mode (see THE RULE): every later copy first spins `us` microseconds on the receiver's
  // stream (0 = off, the default unless CPLAB_LOCAL_COMM_DELAY_US is set; at most 1e6).
  void set_copy_delay_us(int us);
  int copy_delay_us() const { return delay_us_; }
  std::uint64_t total_bytes_sent() const;  // sum of bytes_sent() over ranks

 private:
  friend class LocalComm;
  struct Op {
    int rank = 0, peer = 0;  // the issuing rank and its peer
    bool is_send = false;
    void* buf = nullptr;  // the send's source or the recv's destination (device)
    std::size_t bytes = 0;
    cudaStream_t stream = nullptr;
    cudaEvent_t ready = nullptr;  // send: recorded on the sender's stream at send time
    std::uint64_t call = 0;       // call number in the world, for messages
  };
  using Key = std::pair<int, int>;  // (src, dst)

  void post(Op op);
  void complete(const Op& send, const Op& recv);
  cudaEvent_t take_event();
  void give_event(cudaEvent_t e) { free_events_.push_back(e); }
  [[noreturn]] void fail_logic(const std::string& msg);
  void throw_if_failed() const;
  std::string describe(const Op& op) const;
  std::string describe_pending(std::size_t max_listed) const;
  bool has_pending_on(int rank, cudaStream_t stream) const;
  void check_rank(int r) const;

  std::vector<std::unique_ptr<LocalComm>> ranks_;
  std::map<Key, std::deque<Op>> sends_, recvs_;  // unmatched, FIFO per (src, dst)
  std::vector<cudaEvent_t> all_events_, free_events_;
  std::vector<std::optional<std::string>> config_round_;
  int world_depth_ = 0;
  std::uint64_t calls_ = 0;
  std::optional<std::string> failure_;  // set by the first schedule bug / config mismatch
  bool failure_is_logic_ = true;
  int delay_us_ = 0;
};

}  // namespace cplab::cuda
