// sim/comm.h: cp simulated ranks in one process, and the messages between them.
//
// What it is: SimComm, a mailbox per (src, dst) pair with point-to-point send/recv and the
// collectives CP modes need (all-gather, all-to-all, reduce-scatter), each built from point-to-point
// messages (every rank exchanges directly with every other rank: P-1 messages per rank, the same
// bytes per rank as a ring or pairwise implementation). Every message is recorded in the Trace as a
// send event and a recv event tagged with the current (phase, step), the op and the tensor name.
// Messages are copied byte for byte: a receiver can never alias a sender's buffer.
// A recv with nothing posted, or with a different tensor name than the one posted first, is a
// schedule bug (it would hang or mismatch on real hardware) and throws std::logic_error.
// What it is not: concurrent. The algorithm drives all ranks in lockstep, step by step; posting a
// send before the step's compute and receiving after it is how overlap is expressed.
#pragma once

#include <cstddef>
#include <cstring>
#include <deque>
#include <map>
#include <span>
#include <string>
#include <vector>

#include "../trace.h"

namespace cplab {

class SimComm {
 public:
  SimComm(int cp, Trace* trace);  // trace may be null (no recording)
  int size() const { return cp_; }
  Trace* trace() const { return trace_; }
  void set_step(Phase phase, int step) { phase_ = phase; step_ = step; }
  size_t pending() const;  // posted and not yet received messages

  template <class T>
  void send(int src, int dst, const std::string& tensor, std::span<const T> data,
            const std::string& op = "p2p") {
    std::vector<std::byte> bytes(data.size_bytes());
    if (!bytes.empty()) std::memcpy(bytes.data(), data.data(), bytes.size());
    post(src, dst, tensor, op, std::move(bytes));
  }
  template <class T>
  std::vector<T> recv(int dst, int src, const std::string& tensor, const std::string& op = "p2p") {
    const std::vector<std::byte> bytes = take(dst, src, tensor, op);
    std::vector<T> out(bytes.size() / sizeof(T));
    if (!bytes.empty()) std::memcpy(out.data(), bytes.data(), bytes.size());
    return out;
  }

  // in[r]: rank r's block. Returns out[r] = concat(in[0], ..., in[P-1]) for every rank.
  template <class T>
  std::vector<std::vector<T>> all_gather(const std::string& tensor, const std::vector<std::vector<T>>& in) {
    for (int r = 0; r < cp_; ++r)
      for (int d = 0; d < cp_; ++d)
        if (d != r) send<T>(r, d, tensor, in[static_cast<size_t>(r)], "all_gather");
    std::vector<std::vector<T>> out(static_cast<size_t>(cp_));
    for (int r = 0; r < cp_; ++r)
      for (int s = 0; s < cp_; ++s) {
        const std::vector<T> blk = s == r ? in[static_cast<size_t>(r)] : recv<T>(r, s, tensor, "all_gather");
        out[static_cast<size_t>(r)].insert(out[static_cast<size_t>(r)].end(), blk.begin(), blk.end());
      }
    return out;
  }

  // in[r][d]: the block rank r sends to rank d. Returns out[d] = concat over s of in[s][d].
  template <class T>
  std::vector<std::vector<T>> all_to_all(const std::string& tensor,
                                         const std::vector<std::vector<std::vector<T>>>& in) {
    for (int r = 0; r < cp_; ++r)
      for (int d = 0; d < cp_; ++d)
        if (d != r) send<T>(r, d, tensor, in[static_cast<size_t>(r)][static_cast<size_t>(d)], "all_to_all");
    std::vector<std::vector<T>> out(static_cast<size_t>(cp_));
    for (int d = 0; d < cp_; ++d)
      for (int s = 0; s < cp_; ++s) {
        const std::vector<T> blk = s == d ? in[static_cast<size_t>(d)][static_cast<size_t>(d)]
                                          : recv<T>(d, s, tensor, "all_to_all");
        out[static_cast<size_t>(d)].insert(out[static_cast<size_t>(d)].end(), blk.begin(), blk.end());
      }
    return out;
  }

  // in[r]: P equal blocks of rank r's partial sums. Returns out[r] = sum over s of block r of in[s].
  template <class T>
  std::vector<std::vector<T>> reduce_scatter(const std::string& tensor, const std::vector<std::vector<T>>& in) {
    const size_t blk = in[0].size() / static_cast<size_t>(cp_);
    for (int r = 0; r < cp_; ++r)
      for (int d = 0; d < cp_; ++d)
        if (d != r)
          send<T>(r, d, tensor, std::span<const T>(in[static_cast<size_t>(r)]).subspan(static_cast<size_t>(d) * blk, blk),
                  "reduce_scatter");
    std::vector<std::vector<T>> out(static_cast<size_t>(cp_));
    for (int r = 0; r < cp_; ++r) {
      const auto own = std::span<const T>(in[static_cast<size_t>(r)]).subspan(static_cast<size_t>(r) * blk, blk);
      std::vector<T> acc(own.begin(), own.end());
      for (int s = 0; s < cp_; ++s) {  // fixed summation order: own block, then sources 0..P-1
        if (s == r) continue;
        const std::vector<T> part = recv<T>(r, s, tensor, "reduce_scatter");
        for (size_t i = 0; i < blk; ++i) acc[i] += part[i];
      }
      out[static_cast<size_t>(r)] = std::move(acc);
    }
    return out;
  }

 private:
  struct Message {
    std::string tensor, op;
    std::vector<std::byte> bytes;
  };
  void post(int src, int dst, const std::string& tensor, const std::string& op, std::vector<std::byte> bytes);
  std::vector<std::byte> take(int dst, int src, const std::string& tensor, const std::string& op);
  void check_rank(int r, const char* what) const;
  void record(EventKind kind, int rank, int peer, const std::string& tensor, const std::string& op,
              std::int64_t bytes);

  int cp_;
  Trace* trace_;
  Phase phase_ = Phase::fwd;
  int step_ = 0;
  std::map<std::pair<int, int>, std::deque<Message>> box_;  // (src, dst) -> FIFO
};

}  // namespace cplab
