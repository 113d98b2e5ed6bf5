// nccl_comm.cpp: NcclComm (see nccl_comm.h): non-blocking NCCL with polled, time-limited waits.
//
// What it is: every NCCL call goes through after(): ncclInProgress is polled with
// ncclCommGetAsyncError (outside groups), errors abort the communicator and throw a CommError
// naming the call, rank, device, ncclGetErrorString and ncclGetLastError. The CUDA device is
// checked (device.h) before the first NCCL call, so CPU-only machines fail at once.
// What it is not: an MPI launcher (mpi_launch.cpp) or a retry/recovery layer (an aborted
// communicator stays aborted; build a new one).
#include "nccl_comm.h"

#include "check.h"
#include "device.h"

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <exception>
#include <mutex>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>
#include <utility>

namespace cplab::cuda {

namespace {

using Clock = std::chrono::steady_clock;

// "<ncclGetErrorString> (ncclGetLastError: ...)"; must be called before the communicator is aborted.
std::string nccl_text(ncclResult_t r) {
  std::string s = ncclGetErrorString(r);
  const char* last = ncclGetLastError(nullptr);  // the comm argument is unused by NCCL
  if (last != nullptr && *last != '\0') s += " (ncclGetLastError: " + std::string(last) + ")";
  return s;
}

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

void pause() { std::this_thread::sleep_for(std::chrono::microseconds(50)); }

std::string no_device_message(const std::string& what, const std::string& reason) {
  return what + ": no CUDA device (" + reason + ")";
}

}  // namespace

namespace detail {

// The ranks of one init_all. Finalizing them one after another from one thread would make each
// finalize wait for the next (NCCL's intra-node barrier): instead every destructor starts its
// finalize (non-blocking) and hands the handle over; the last one polls them all, then destroys
// (or aborts, on error or time-out) every one.
struct NcclSiblings {
  std::mutex m;
  int remaining = 0;  // ranks not yet destroyed
  double timeout_s = 300;
  std::shared_ptr<std::atomic<bool>> cancel;
  std::vector<ncclComm_t> finalizing;

  void release(ncclComm_t comm) noexcept {  // comm: nullptr when the rank was aborted already
    std::lock_guard<std::mutex> lock(m);
    if (comm != nullptr) {
      const ncclResult_t r = ncclCommFinalize(comm);
      if (r == ncclSuccess || r == ncclInProgress) finalizing.push_back(comm);
      else (void)ncclCommAbort(comm);
    }
    if (--remaining > 0) return;
    const auto t0 = Clock::now();
    bool give_up = false;
    for (ncclComm_t c : finalizing) {
      ncclResult_t state = ncclInProgress;
      while (!give_up && ncclCommGetAsyncError(c, &state) == ncclSuccess && state == ncclInProgress) {
        give_up = seconds_since(t0) > timeout_s || (cancel && cancel->load());
        if (!give_up) pause();
      }
      if (!give_up && state == ncclSuccess) (void)ncclCommDestroy(c);
      else (void)ncclCommAbort(c);
    }
    finalizing.clear();
  }
};

}  // namespace detail

double nccl_timeout_from_env() {
  const char* v = std::getenv("CPLAB_NCCL_TIMEOUT_S");
  if (v == nullptr || *v == '\0') return 300.0;
  char* end = nullptr;
  const double t = std::strtod(v, &end);
  if (end == v || *end != '\0' || !std::isfinite(t) || !(t > 0))
    throw std::invalid_argument("CPLAB_NCCL_TIMEOUT_S='" + std::string(v) + "': expected a number of seconds > 0");
  return t;
}

ncclUniqueId NcclComm::unique_id() {
  if (const std::string reason = device_unusable_reason(); !reason.empty())
    throw NoDeviceError(no_device_message("NcclComm::unique_id", reason));
  ncclUniqueId id{};
  if (const ncclResult_t r = ncclGetUniqueId(&id); r != ncclSuccess)
    throw CommError("NCCL error: ncclGetUniqueId: " + nccl_text(r));
  return id;
}

NcclComm::NcclComm(const ncclUniqueId& id, int rank, int nranks, int device, NcclOptions options)
    : rank_(rank), nranks_(nranks), device_(device), options_(std::move(options)) {
  if (nranks < 1 || rank < 0 || rank >= nranks)
    throw std::invalid_argument("NcclComm: rank " + std::to_string(rank) + " of " + std::to_string(nranks) +
                                ": expected nranks >= 1 and 0 <= rank < nranks");
  if (options_.timeout_s <= 0) options_.timeout_s = nccl_timeout_from_env();
  if (const int count = device_count(); count > 0 && (device < 0 || device >= count))
    throw CommError("NcclComm " + who() + ": CUDA device " + std::to_string(device) + " does not exist (" +
                    std::to_string(count) + " visible; NCCL needs one GPU per rank)");
  if (const std::string reason = device_unusable_reason(device); !reason.empty())
    throw NoDeviceError(no_device_message("NcclComm " + who(), reason));
  CPLAB_CUDA_CHECK(cudaSetDevice(device));
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0;  // every wait is ours: polled, with a time-out
  const ncclResult_t r = ncclCommInitRankConfig(&comm_, nranks, id, rank, &config);
  after(r, "ncclCommInitRankConfig", "nranks " + std::to_string(nranks) + ", device " + std::to_string(device));
}

NcclComm::~NcclComm() {
  if (siblings_) {
    if (group_depth_ > 0) abort();  // destroyed while unwinding out of a group
    siblings_->release(aborted_ ? nullptr : comm_);
    return;
  }
  if (comm_ == nullptr || aborted_) return;
  try {
    if (group_depth_ > 0) {  // destroyed while unwinding out of a group: nothing can complete
      abort();
      return;
    }
    after(ncclCommFinalize(comm_), "ncclCommFinalize", "");  // waits (bounded) for in-flight work
    if (!aborted_) {
      (void)ncclCommDestroy(comm_);  // local after a successful finalize
      comm_ = nullptr;
    }
  } catch (...) {
    abort();  // fail() already aborted; this is for anything else
  }
}

void NcclComm::abort() noexcept {
  if (comm_ != nullptr && !aborted_) (void)ncclCommAbort(comm_);
  comm_ = nullptr;
  aborted_ = true;
  if (failure_.empty()) failure_ = "aborted by the program";
}

void NcclComm::throw_if_aborted() const {
  if (aborted_) throw CommError("NcclComm " + who() + ": the communicator was aborted earlier: " + failure_);
}

void NcclComm::fail(const char* call, const std::string& detail, const std::string& reason) {
  const std::string msg = "NCCL error: " + std::string(call) + (detail.empty() ? "" : "(" + detail + ")") +
                          " on " + who() + ", device " + std::to_string(device_) + ": " + reason;
  abort();
  failure_ = msg;
  throw CommError(msg);
}

void NcclComm::after(ncclResult_t r, const char* call, const std::string& detail) {
  // an asynchronous error names the last call: for a group, the group's operations, not just "ncclGroupEnd"
  const std::string what = std::string(call) + (detail.empty() ? "" : "(" + detail + ")");
  const std::string_view c(call);
  if (c == "ncclGroupEnd" && group_depth_ == 0) {
    last_call_ = "ncclGroupEnd of {" + group_ops_ + "}";
    group_ops_.clear();
  } else if (c != "ncclGroupStart" && c != "ncclGroupEnd" && group_depth_ > 0) {
    if (group_ops_.size() < 2000) group_ops_ += (group_ops_.empty() ? "" : "; ") + what;
    last_call_ = what + " (in an open group)";
  } else if (c != "ncclGroupStart" && c != "ncclGroupEnd") {
    last_call_ = what;
  }
  if (r == ncclSuccess) return;
  if (r == ncclInProgress) {
    if (group_depth_ == 0) wait_ready(call, detail);
    return;
  }
  fail(call, detail, nccl_text(r));
}

void NcclComm::wait_ready(const char* call, const std::string& detail) {
  const auto t0 = Clock::now();
  for (;;) {
    ncclResult_t state = ncclInProgress;
    if (const ncclResult_t q = ncclCommGetAsyncError(comm_, &state); q != ncclSuccess)
      fail("ncclCommGetAsyncError", std::string("while waiting for ") + call, nccl_text(q));
    if (state == ncclSuccess) return;
    if (state != ncclInProgress) fail(call, detail, nccl_text(state));
    if (cancelled()) fail(call, detail, "cancelled: another rank of this process failed");
    if (seconds_since(t0) > options_.timeout_s)
      fail(call, detail,
           "timed out after " + std::to_string(options_.timeout_s) +
               " s (CPLAB_NCCL_TIMEOUT_S): a peer never joined, or an operation was never matched; aborted");
    pause();
  }
}

std::vector<std::unique_ptr<NcclComm>> NcclComm::init_all(int n, NcclOptions options) {
  if (const std::string reason = device_unusable_reason(); !reason.empty())
    throw NoDeviceError(no_device_message("NcclComm::init_all", reason));
  if (n < 1) throw std::invalid_argument("NcclComm::init_all: n = " + std::to_string(n) + ", expected n >= 1");
  if (const int count = device_count(); n > count)
    throw CommError("NcclComm::init_all: " + std::to_string(n) + " ranks need " + std::to_string(n) +
                    " GPUs (NCCL allows one rank per GPU; for virtual ranks on one GPU use LocalWorld), found " +
                    std::to_string(count));
  if (!options.cancel) options.cancel = std::make_shared<std::atomic<bool>>(false);
  const ncclUniqueId id = unique_id();
  std::vector<std::unique_ptr<NcclComm>> comms(static_cast<std::size_t>(n));
  std::vector<std::exception_ptr> errors(static_cast<std::size_t>(n));
  std::atomic<int> first_failure{-1};
  {
    std::vector<std::thread> threads;
    for (int r = 0; r < n; ++r)
      threads.emplace_back([&, r] {
        try {
          comms[static_cast<std::size_t>(r)] = std::make_unique<NcclComm>(id, r, n, r, options);
        } catch (...) {
          errors[static_cast<std::size_t>(r)] = std::current_exception();
          int none = -1;
          first_failure.compare_exchange_strong(none, r);
          options.cancel->store(true);
        }
      });
    for (auto& t : threads) t.join();
  }
  if (const int f = first_failure.load(); f >= 0) {
    comms.clear();  // the cancel flag makes their destructors abort instead of waiting
    std::rethrow_exception(errors[static_cast<std::size_t>(f)]);
  }
  auto siblings = std::make_shared<detail::NcclSiblings>();
  siblings->remaining = n;
  siblings->timeout_s = comms[0]->options_.timeout_s;
  siblings->cancel = options.cancel;
  for (auto& c : comms) c->siblings_ = siblings;
  return comms;
}

void NcclComm::send(const void* buf, std::size_t bytes, int peer, cudaStream_t stream) {
  throw_if_aborted();
  check_p2p_args("send", buf, bytes, peer);
  after(ncclSend(buf, bytes, ncclUint8, peer, comm_, stream), "ncclSend",
        std::to_string(bytes) + " bytes to rank " + std::to_string(peer));
  count_send(bytes, peer);
}

void NcclComm::recv(void* buf, std::size_t bytes, int peer, cudaStream_t stream) {
  throw_if_aborted();
  check_p2p_args("recv", buf, bytes, peer);
  after(ncclRecv(buf, bytes, ncclUint8, peer, comm_, stream), "ncclRecv",
        std::to_string(bytes) + " bytes from rank " + std::to_string(peer));
}

void NcclComm::group_start() {
  throw_if_aborted();
  after(ncclGroupStart(), "ncclGroupStart", "");
  ++group_depth_;
}

void NcclComm::group_end() {
  throw_if_aborted();
  if (group_depth_ == 0) throw std::logic_error("NcclComm " + who() + ": group_end() without a matching group_start()");
  --group_depth_;
  after(ncclGroupEnd(), "ncclGroupEnd", "");  // outermost: waits (bounded) until the group is issued
}

void NcclComm::all_gather_impl(const void* in, void* out, std::size_t bytes, const ResolvedGroup& g,
                               cudaStream_t stream) {
  if (!g.whole || size() == 1) {
    Comm::all_gather_impl(in, out, bytes, g, stream);
    return;
  }
  throw_if_aborted();
  after(ncclAllGather(in, out, bytes, ncclUint8, comm_, stream), "ncclAllGather",
        std::to_string(bytes) + " bytes per rank");
  for (int peer = 0; peer < size(); ++peer) count_send(bytes, peer);
}

void NcclComm::all_to_all_impl(const void* in, void* out, std::size_t bytes, const ResolvedGroup& g,
                               cudaStream_t stream) {
#if NCCL_VERSION_CODE >= NCCL_VERSION(2, 28, 0)
  if (g.whole && size() > 1) {
    throw_if_aborted();
    after(ncclAlltoAll(in, out, bytes, ncclUint8, comm_, stream), "ncclAlltoAll",
          std::to_string(bytes) + " bytes per peer");
    for (int peer = 0; peer < size(); ++peer) count_send(bytes, peer);
    return;
  }
#endif
  Comm::all_to_all_impl(in, out, bytes, g, stream);
}

void NcclComm::check_async() {
  throw_if_aborted();
  ncclResult_t state = ncclSuccess;
  if (const ncclResult_t q = ncclCommGetAsyncError(comm_, &state); q != ncclSuccess)
    fail("ncclCommGetAsyncError", "", nccl_text(q));
  if (state != ncclSuccess && state != ncclInProgress)
    fail("asynchronous error", "last call: " + last_call_, nccl_text(state));
}

void NcclComm::synchronize(cudaStream_t stream) {
  throw_if_aborted();
  if (group_depth_ > 0)
    throw std::logic_error("NcclComm " + who() + ": synchronize() inside a group: its operations are only "
                           "issued at the outermost group_end(), so this would wait forever");
  const auto t0 = Clock::now();
  for (;;) {
    const cudaError_t q = cudaStreamQuery(stream);
    if (q == cudaSuccess) break;
    if (q != cudaErrorNotReady) fail("cudaStreamQuery", "last call: " + last_call_, cudaGetErrorString(q));
    check_async();
    if (cancelled()) fail("synchronize", "last call: " + last_call_, "cancelled: another rank of this process failed");
    if (seconds_since(t0) > options_.timeout_s)
      fail("synchronize", "last call: " + last_call_,
           "the stream did not finish within " + std::to_string(options_.timeout_s) +
               " s (CPLAB_NCCL_TIMEOUT_S): an unmatched send/recv or a missing peer; aborted");
    pause();
  }
  check_async();
}

void NcclComm::check_same_config(const std::string& description) {
  throw_if_aborted();
  CPLAB_CUDA_CHECK(cudaSetDevice(device_));  // its scratch buffers and stream belong on this rank's GPU
  Comm::check_same_config(description);
}

void run_per_rank(const std::vector<std::unique_ptr<NcclComm>>& comms, const std::function<void(NcclComm&)>& fn) {
  std::vector<std::exception_ptr> errors(comms.size());
  std::atomic<int> first_failure{-1};
  {
    std::vector<std::thread> threads;
    for (std::size_t r = 0; r < comms.size(); ++r)
      threads.emplace_back([&, r] {
        NcclComm& comm = *comms[r];
        try {
          CPLAB_CUDA_CHECK(cudaSetDevice(comm.device()));
          fn(comm);
        } catch (...) {
          errors[r] = std::current_exception();
          int none = -1;
          first_failure.compare_exchange_strong(none, static_cast<int>(r));
          if (comm.options().cancel) comm.options().cancel->store(true);
        }
      });
    for (auto& t : threads) t.join();
  }
  if (const int f = first_failure.load(); f >= 0) std::rethrow_exception(errors[static_cast<std::size_t>(f)]);
}

}  // namespace cplab::cuda
