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
// Every message (post and take) and every set_step is an interruption point (core/interrupt.h): a requested interrupt
// throws Interrupted there, before the mailboxes change.
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

#include "core/interrupt.h"
#include "sim/trace.h"

namespace cplab {

class SimComm {
 public:
  SimComm(int cp, Trace* trace);  // trace may be null (no recording)
  int size() const { return cp_; }
  Trace* trace() const { return trace_; }
  void set_step(Phase phase, int step) {
    interruption_point();
    phase_ = phase;
    step_ = step;
  }
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

  // Collectives over a group: members[i] is the global rank of group position i (empty: all ranks,
  // position = rank); in/out are indexed by group position. Every pair exchanges directly.

  // in[i]: position i's block. Returns out[i] = concat(in[0], ..., in[G-1]) for every position.
  template <class T>
  std::vector<std::vector<T>> all_gather(const std::string& tensor, const std::vector<std::vector<T>>& in,
                                         const std::vector<int>& members = {}) {
    const int G = group_size(members);
    for (int i = 0; i < G; ++i)
      for (int j = 0; j < G; ++j)
        if (j != i) send<T>(member(members, i), member(members, j), tensor, in[idx(i)], "all_gather");
    std::vector<std::vector<T>> out(idx(G));
    for (int i = 0; i < G; ++i)
      for (int s = 0; s < G; ++s) {
        const std::vector<T> blk = s == i ? in[idx(i)] : recv<T>(member(members, i), member(members, s), tensor, "all_gather");
        out[idx(i)].insert(out[idx(i)].end(), blk.begin(), blk.end());
      }
    return out;
  }

  // in[i][j]: the block position i sends to position j. Returns out[j] = concat over i of in[i][j].
  template <class T>
  std::vector<std::vector<T>> all_to_all(const std::string& tensor, const std::vector<std::vector<std::vector<T>>>& in,
                                         const std::vector<int>& members = {}) {
    const int G = group_size(members);
    for (int i = 0; i < G; ++i)
      for (int j = 0; j < G; ++j)
        if (j != i) send<T>(member(members, i), member(members, j), tensor, in[idx(i)][idx(j)], "all_to_all");
    std::vector<std::vector<T>> out(idx(G));
    for (int j = 0; j < G; ++j)
      for (int i = 0; i < G; ++i) {
        const std::vector<T> blk =
            i == j ? in[idx(j)][idx(j)] : recv<T>(member(members, j), member(members, i), tensor, "all_to_all");
        out[idx(j)].insert(out[idx(j)].end(), blk.begin(), blk.end());
      }
    return out;
  }

  // in[i]: G equal blocks of position i's partial sums. Returns out[i] = sum over s of block i of in[s].
  template <class T>
  std::vector<std::vector<T>> reduce_scatter(const std::string& tensor, const std::vector<std::vector<T>>& in,
                                             const std::vector<int>& members = {}) {
    const int G = group_size(members);
    const size_t blk = in[0].size() / idx(G);
    for (int i = 0; i < G; ++i)
      for (int j = 0; j < G; ++j)
        if (j != i)
          send<T>(member(members, i), member(members, j), tensor,
                  std::span<const T>(in[idx(i)]).subspan(idx(j) * blk, blk), "reduce_scatter");
    std::vector<std::vector<T>> out(idx(G));
    for (int i = 0; i < G; ++i) {
      const auto own = std::span<const T>(in[idx(i)]).subspan(idx(i) * blk, blk);
      std::vector<T> acc(own.begin(), own.end());
      for (int s = 0; s < G; ++s) {  // fixed summation order: own block, then positions 0..G-1
        if (s == i) continue;
        const std::vector<T> part = recv<T>(member(members, i), member(members, s), tensor, "reduce_scatter");
        for (size_t e = 0; e < blk; ++e) acc[e] += part[e];
      }
      out[idx(i)] = std::move(acc);
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
  int group_size(const std::vector<int>& members) const {
    return members.empty() ? cp_ : static_cast<int>(members.size());
  }
  static int member(const std::vector<int>& members, int i) {
    return members.empty() ? i : members[static_cast<size_t>(i)];
  }
  static size_t idx(int i) { return static_cast<size_t>(i); }
  void record(EventKind kind, int rank, int peer, const std::string& tensor, const std::string& op,
              std::int64_t bytes);

  int cp_;
  Trace* trace_;
  Phase phase_ = Phase::fwd;
  int step_ = 0;
  std::map<std::pair<int, int>, std::deque<Message>> box_;  // (src, dst) -> FIFO
};

}  // namespace cplab
