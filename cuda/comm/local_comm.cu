// local_comm.cu: LocalWorld / LocalComm (see local_comm.h): matching of send/recv halves, the
// event handshake that completes a pair on both streams, and the schedule-bug checks.
//
// What it is: host code (CUDA runtime API: events, cudaStreamWaitEvent, cudaMemcpyAsync), plus the
// one-thread spin kernel of the stress mode (CPLAB_LOCAL_COMM_DELAY_US).
// Argument checks and pairing checks come before any CUDA call, so schedule bugs are reported the
// same way on machines without a GPU.
// What it is not: a kernel, a copy-speed model, or thread-safe.
#include "local_comm.h"

#include "check.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <string>

namespace cplab::cuda {

namespace {

std::string bytes_text(std::size_t b) { return std::to_string(b) + " bytes"; }

// the stress mode's delay: one thread spins on the global nanosecond timer
__global__ void spin_kernel(unsigned long long ns) {
  unsigned long long t0 = 0, t = 0;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
  do {
    __nanosleep(1000);
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  } while (t - t0 < ns);
}

constexpr int kMaxDelayUs = 1000000;

int delay_from_env() {
  const char* v = std::getenv("CPLAB_LOCAL_COMM_DELAY_US");
  if (v == nullptr || *v == '\0') return 0;
  char* end = nullptr;
  const long us = std::strtol(v, &end, 10);
  if (end == v || *end != '\0' || us < 0 || us > kMaxDelayUs)
    throw std::invalid_argument("CPLAB_LOCAL_COMM_DELAY_US='" + std::string(v) + "': expected an integer number of microseconds in [0, " +
                                std::to_string(kMaxDelayUs) + "]");
  return static_cast<int>(us);
}

}  // namespace

// ---------------------------------------------------------------- LocalComm

int LocalComm::size() const { return world_->size(); }

void LocalComm::send(const void* buf, std::size_t bytes, int peer, cudaStream_t stream) {
  world_->throw_if_failed();
  check_p2p_args("send", buf, bytes, peer);
  last_call_ = "send of " + bytes_text(bytes) + " to rank " + std::to_string(peer);
  if (std::find(streams_.begin(), streams_.end(), stream) == streams_.end()) streams_.push_back(stream);
  LocalWorld::Op op;
  op.rank = rank_;
  op.peer = peer;
  op.is_send = true;
  op.buf = const_cast<void*>(buf);  // only ever read: it is the copy's source
  op.bytes = bytes;
  op.stream = stream;
  op.call = ++world_->calls_;
  world_->post(op);
  count_send(bytes, peer);
}

void LocalComm::recv(void* buf, std::size_t bytes, int peer, cudaStream_t stream) {
  world_->throw_if_failed();
  check_p2p_args("recv", buf, bytes, peer);
  last_call_ = "recv of " + bytes_text(bytes) + " from rank " + std::to_string(peer);
  if (std::find(streams_.begin(), streams_.end(), stream) == streams_.end()) streams_.push_back(stream);
  LocalWorld::Op op;
  op.rank = rank_;
  op.peer = peer;
  op.is_send = false;
  op.buf = buf;
  op.bytes = bytes;
  op.stream = stream;
  op.call = ++world_->calls_;
  world_->post(op);
}

void LocalComm::group_start() {
  world_->throw_if_failed();
  ++group_depth_;
}

void LocalComm::group_end() {
  world_->throw_if_failed();
  if (group_depth_ == 0)
    world_->fail_logic("LocalComm " + who() + ": group_end() without a matching group_start()");
  --group_depth_;
}

void LocalComm::check_async() {
  world_->throw_if_failed();
  for (cudaStream_t s : streams_) {
    const cudaError_t e = cudaStreamQuery(s);
    if (e != cudaSuccess && e != cudaErrorNotReady)
      throw CommError("LocalComm " + who() + ": asynchronous CUDA error (last call: " + last_call_ +
                      "): " + cudaGetErrorString(e));
  }
}

void LocalComm::synchronize(cudaStream_t stream) {
  world_->throw_if_failed();
  if (world_->has_pending_on(-1, stream))
    world_->fail_logic("LocalComm " + who() + ": synchronize() on a stream with unmatched operations "
                       "(their partners were never issued; on GPUs this would hang): " +
                       world_->describe_pending(8));
  CPLAB_CUDA_CHECK(cudaStreamSynchronize(stream));
  check_async();
}

void LocalComm::check_same_config(const std::string& description) {
  world_->throw_if_failed();
  last_call_ = "check_same_config";
  auto& round = world_->config_round_;
  const std::size_t P = round.size();
  if (round[static_cast<std::size_t>(rank_)].has_value())
    world_->fail_logic("LocalComm " + who() + ": check_same_config called twice before every rank called it once");
  round[static_cast<std::size_t>(rank_)] = description;
  if (std::any_of(round.begin(), round.end(), [](const auto& s) { return !s.has_value(); })) return;
  std::string differ, strings;
  for (std::size_t r = 1; r < P; ++r) {
    if (*round[r] == *round[0]) continue;
    differ += (differ.empty() ? "" : ", ") + std::to_string(r);
    strings += "; rank " + std::to_string(r) + ": '" + *round[r] + "'";
  }
  const std::string rank0 = *round[0];
  for (auto& s : round) s.reset();
  if (differ.empty()) return;
  const std::string msg = "LocalComm check_same_config: " +
                          std::string(differ.find(',') == std::string::npos ? "rank " : "ranks ") + differ +
                          " differ from rank 0; rank 0: '" + rank0 + "'" + strings;
  world_->failure_ = msg;
  world_->failure_is_logic_ = false;
  throw CommError(msg);
}

// ---------------------------------------------------------------- LocalWorld

LocalWorld::LocalWorld(int P) {
  if (P < 1 || P > 4096)
    throw std::invalid_argument("LocalWorld: P = " + std::to_string(P) + " virtual ranks, expected 1 <= P <= 4096");
  for (int r = 0; r < P; ++r) ranks_.push_back(std::unique_ptr<LocalComm>(new LocalComm(this, r)));
  config_round_.resize(static_cast<std::size_t>(P));
  delay_us_ = delay_from_env();
}

void LocalWorld::set_copy_delay_us(int us) {
  if (us < 0 || us > kMaxDelayUs)
    throw std::invalid_argument("LocalWorld::set_copy_delay_us(" + std::to_string(us) + "): expected 0 <= us <= " +
                                std::to_string(kMaxDelayUs));
  delay_us_ = us;
}

LocalWorld::~LocalWorld() {
  if (!failure_) {
    const std::size_t n = pending();
    if (n > 0)
      std::fprintf(stderr, "LocalWorld: destroyed with %zu unmatched operations (a schedule bug): %s\n", n,
                   describe_pending(8).c_str());
    for (const auto& r : ranks_)
      if (r->group_depth_ > 0)
        std::fprintf(stderr, "LocalWorld: destroyed while rank %d has %d open group(s)\n", r->rank_, r->group_depth_);
  }
  for (cudaEvent_t e : all_events_) (void)cudaEventDestroy(e);  // destructors must not throw
}

void LocalWorld::check_rank(int r) const {
  if (r < 0 || r >= size())
    throw std::invalid_argument("LocalWorld: rank " + std::to_string(r) + " outside [0, " + std::to_string(size()) + ")");
}

Comm& LocalWorld::rank(int r) { return local(r); }

LocalComm& LocalWorld::local(int r) {
  check_rank(r);
  return *ranks_[static_cast<std::size_t>(r)];
}

void LocalWorld::throw_if_failed() const {
  if (!failure_) return;
  const std::string msg = "LocalWorld is unusable after an earlier error: " + *failure_;
  if (failure_is_logic_) throw std::logic_error(msg);
  throw CommError(msg);
}

void LocalWorld::fail_logic(const std::string& msg) {
  failure_ = msg;
  failure_is_logic_ = true;
  throw std::logic_error(msg);
}

std::string LocalWorld::describe(const Op& op) const {
  return "rank " + std::to_string(op.rank) + (op.is_send ? " send of " : " recv of ") + bytes_text(op.bytes) +
         (op.is_send ? " to rank " : " from rank ") + std::to_string(op.peer) + " (call #" +
         std::to_string(op.call) + ")";
}

std::size_t LocalWorld::pending() const {
  std::size_t n = 0;
  for (const auto& [key, q] : sends_) n += q.size();
  for (const auto& [key, q] : recvs_) n += q.size();
  return n;
}

std::string LocalWorld::describe_pending(std::size_t max_listed) const {
  std::vector<const Op*> ops;
  for (const auto* box : {&sends_, &recvs_})
    for (const auto& [key, q] : *box)
      for (const Op& op : q) ops.push_back(&op);
  std::sort(ops.begin(), ops.end(), [](const Op* a, const Op* b) { return a->call < b->call; });
  std::string out;
  for (std::size_t i = 0; i < ops.size() && i < max_listed; ++i) out += (i ? "; " : "") + describe(*ops[i]);
  if (ops.size() > max_listed) out += "; ... and " + std::to_string(ops.size() - max_listed) + " more";
  return out;
}

bool LocalWorld::has_pending_on(int rank, cudaStream_t stream) const {
  for (const auto* box : {&sends_, &recvs_})
    for (const auto& [key, q] : *box)
      for (const Op& op : q)
        if (op.stream == stream && (rank < 0 || op.rank == rank)) return true;
  return false;
}

std::uint64_t LocalWorld::total_bytes_sent() const {
  std::uint64_t n = 0;
  for (const auto& r : ranks_) n += r->bytes_sent();
  return n;
}

cudaEvent_t LocalWorld::take_event() {
  if (free_events_.empty()) {
    cudaEvent_t e = nullptr;
    CPLAB_CUDA_CHECK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
    all_events_.push_back(e);
    return e;
  }
  cudaEvent_t e = free_events_.back();
  free_events_.pop_back();
  return e;
}

// Matches `op` against the oldest unmatched opposite half of the same (src, dst) pair, or queues
// it. All checks come before any CUDA call; a CUDA failure fails the world (state is then unknown).
void LocalWorld::post(Op op) {
  const Key key = op.is_send ? Key{op.rank, op.peer} : Key{op.peer, op.rank};
  std::deque<Op>& opposite = op.is_send ? recvs_[key] : sends_[key];
  std::deque<Op>& same = op.is_send ? sends_[key] : recvs_[key];
  if (!opposite.empty() && opposite.front().bytes != op.bytes) {
    const Op& s = op.is_send ? op : opposite.front();
    const Op& r = op.is_send ? opposite.front() : op;
    fail_logic("LocalComm: size mismatch (a schedule bug): " + describe(s) + " is matched with " + describe(r) +
               "; a send and its recv must have the same size");
  }
  try {
    if (op.is_send) {
      op.ready = take_event();
      CPLAB_CUDA_CHECK(cudaEventRecord(op.ready, op.stream));
    }
    if (opposite.empty()) {
      same.push_back(op);
      return;
    }
    const Op partner = opposite.front();
    opposite.pop_front();
    if (op.is_send) complete(op, partner);
    else complete(partner, op);
  } catch (const std::exception& e) {
    failure_ = std::string(e.what()) + " (in " + describe(op) + ")";
    failure_is_logic_ = false;
    throw;
  }
}

// The pair's data moves on the receiver's stream once the sender's stream reached the send; the
// sender's stream then waits for the copy, so later work on either stream sees the pair complete.
void LocalWorld::complete(const Op& send, const Op& recv) {
  CPLAB_CUDA_CHECK(cudaStreamWaitEvent(recv.stream, send.ready, 0));
  if (delay_us_ > 0) {
    spin_kernel<<<1, 1, 0, recv.stream>>>(static_cast<unsigned long long>(delay_us_) * 1000ull);
    CPLAB_CUDA_CHECK(cudaGetLastError());
  }
  if (send.bytes > 0)
    CPLAB_CUDA_CHECK(cudaMemcpyAsync(recv.buf, send.buf, send.bytes, cudaMemcpyDeviceToDevice, recv.stream));
  cudaEvent_t done = take_event();
  CPLAB_CUDA_CHECK(cudaEventRecord(done, recv.stream));
  CPLAB_CUDA_CHECK(cudaStreamWaitEvent(send.stream, done, 0));
  // A wait captures the event's state when it is enqueued, so both events can be re-recorded now.
  give_event(done);
  give_event(send.ready);
}

void LocalWorld::group_start() {
  throw_if_failed();
  ++world_depth_;
}

void LocalWorld::group_end() {
  throw_if_failed();
  if (world_depth_ == 0) fail_logic("LocalWorld: group_end() without a matching group_start()");
  if (--world_depth_ > 0) return;
  if (const std::size_t n = pending(); n > 0)
    fail_logic("LocalWorld::group_end: " + std::to_string(n) +
               " unmatched operation(s) at the end of the step (on GPUs this schedule would hang): " +
               describe_pending(8));
}

void LocalWorld::finish() {
  throw_if_failed();
  std::string open;
  if (world_depth_ > 0) open += " the world has " + std::to_string(world_depth_) + " open group(s);";
  for (const auto& r : ranks_)
    if (r->group_depth_ > 0)
      open += " rank " + std::to_string(r->rank_) + " has " + std::to_string(r->group_depth_) + " open group(s);";
  if (!open.empty()) fail_logic("LocalWorld::finish:" + open + " every group_start() needs a group_end()");
  if (const std::size_t n = pending(); n > 0)
    fail_logic("LocalWorld::finish: " + std::to_string(n) +
               " unmatched operation(s) (on GPUs this schedule would hang): " + describe_pending(8));
  std::string called;
  for (std::size_t r = 0; r < config_round_.size(); ++r)
    if (config_round_[r].has_value()) called += (called.empty() ? "" : ", ") + std::to_string(r);
  if (!called.empty())
    fail_logic("LocalWorld::finish: check_same_config was called only by rank(s) " + called +
               ", not by all " + std::to_string(size()));
  for (const auto& r : ranks_) r->check_async();
  for (const auto& r : ranks_) r->streams_.clear();
}

}  // namespace cplab::cuda
