// nccl_comm.h: NcclComm, the Comm backend for one rank per GPU, on NCCL.
//
// What it is: a non-blocking NCCL communicator (ncclConfig_t blocking = 0) whose every wait is a
// polling loop with a time-out (NcclOptions::timeout_s; default CPLAB_NCCL_TIMEOUT_S or 300 s):
// on time-out, an asynchronous NCCL error, or a cancel flag set by another rank's thread, the
// communicator is aborted (ncclCommAbort) and a CommError names the call, the rank and
// ncclGetErrorString / ncclGetLastError. Before any NCCL call the CUDA device is checked
// (NoDeviceError, at once, on machines without a GPU). Two launch paths:
//  (a) one process, a thread per GPU: NcclComm::init_all(n) builds n ranks on devices 0..n-1 (each
//      initialised in its own thread), then run_per_rank(comms, fn) runs fn(comm) in a thread per
//      rank with that rank's device current; or construct (and destroy) NcclComm yourself in each
//      thread from one NcclComm::unique_id();
//  (b) a process per GPU under mpirun: mpi_launch.h.
// Whole-communicator collectives use ncclAllGather / ncclAlltoAll (NCCL >= 2.28); sub-groups use the
// point-to-point versions of comm.cpp on this communicator (global ranks).
// What it is not: usable with several ranks on one GPU (NCCL refuses it: use LocalWorld), or
// driven from one thread for several ranks (each rank needs its own host thread or process:
// a blocking NCCL call of one rank would wait for a rank the same thread has not issued yet).
#pragma once

#include "comm.h"

#include <cuda_runtime.h>
#include <nccl.h>

#include <atomic>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace cplab::cuda {

namespace detail {
struct NcclSiblings;  // the ranks one init_all made: finalized together (nccl_comm.cpp)
}

struct NcclOptions {
  double timeout_s = 0;  // <= 0: nccl_timeout_from_env()
  // Shared by the ranks of one process: when set, every wait of every rank gives up (abort + throw).
  std::shared_ptr<std::atomic<bool>> cancel;
};

// CPLAB_NCCL_TIMEOUT_S (seconds, a number > 0) or 300 when unset; std::invalid_argument otherwise.
double nccl_timeout_from_env();

class NcclComm final : public Comm {
 public:
  // Checks for a CUDA device first (NoDeviceError), then ncclGetUniqueId.
  static ncclUniqueId unique_id();

  // Rank `rank` of `nranks` on CUDA device `device`; every rank must call it with the same id
  // (collective). Sets `device` current on the calling thread.
  NcclComm(const ncclUniqueId& id, int rank, int nranks, int device, NcclOptions options = {});
  // Finalize (bounded by the time-out), then destroy; abort if anything fails. NCCL's finalize waits
  // for the other ranks of the node to finalize too, so the ranks made by one init_all are
  // finalized together: each destructor starts its finalize, the last one waits for all of them
  // and destroys them (in any order, from any thread).
  ~NcclComm() override;

  // Path (a): ranks 0..n-1 on devices 0..n-1 of this process, initialised concurrently (a thread
  // each) with one shared cancel flag. Throws NoDeviceError without a GPU and CommError when fewer
  // than n devices are visible or any rank fails (the others are cancelled, not left waiting).
  static std::vector<std::unique_ptr<NcclComm>> init_all(int n, NcclOptions options = {});

  int rank() const override { return rank_; }
  int size() const override { return nranks_; }
  const char* backend() const override { return "nccl"; }
  int device() const { return device_; }
  const NcclOptions& options() const { return options_; }

  void send(const void* buf, std::size_t bytes, int peer, cudaStream_t stream) override;
  void recv(void* buf, std::size_t bytes, int peer, cudaStream_t stream) override;
  void group_start() override;
  void group_end() override;

  void check_async() override;
  void synchronize(cudaStream_t stream) override;
  // Comm's all-gather of (hash, length), with this rank's device made current first.
  void check_same_config(const std::string& description) override;

  void abort() noexcept;  // ncclCommAbort now (idempotent); later calls throw

 protected:
  void all_gather_impl(const void* in, void* out, std::size_t bytes, const ResolvedGroup& g,
                       cudaStream_t stream) override;
  void all_to_all_impl(const void* in, void* out, std::size_t bytes, const ResolvedGroup& g,
                       cudaStream_t stream) override;

 private:
  // After an NCCL call: ncclInProgress outside a group -> wait_ready; an error -> fail.
  void after(ncclResult_t r, const char* call, const std::string& detail);
  // Polls ncclCommGetAsyncError until the communicator is no longer ncclInProgress.
  void wait_ready(const char* call, const std::string& detail);
  [[noreturn]] void fail(const char* call, const std::string& detail, const std::string& reason);
  void throw_if_aborted() const;
  bool cancelled() const { return options_.cancel && options_.cancel->load(); }

  ncclComm_t comm_ = nullptr;
  int rank_ = 0, nranks_ = 0, device_ = 0;
  NcclOptions options_;
  int group_depth_ = 0;
  bool aborted_ = false;
  std::shared_ptr<detail::NcclSiblings> siblings_;  // set by init_all
  std::string last_call_ = "(none)";
  std::string group_ops_;  // the calls of the open group, named in the outermost ncclGroupEnd's last_call_
  std::string failure_;
};

// Path (a): runs fn(*comms[r]) in one thread per rank, with comms[r]'s device current. If a rank
// throws, the shared cancel flag (if any) is set so that the other ranks' waits give up, all
// threads are joined, and the first error is rethrown as it was (NcclComm's messages name the rank).
void run_per_rank(const std::vector<std::unique_ptr<NcclComm>>& comms, const std::function<void(NcclComm&)>& fn);

}  // namespace cplab::cuda
