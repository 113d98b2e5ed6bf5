// comm_check_run.cpp: RankCheck (see comm_check_run.h): inputs, communication and byte-exact
// verification of each check for one rank.
//
// What it is: host code over the Comm interface; no backend-specific call.
// What it is not: a driver (comm_check.cpp decides lockstep or a thread / process per rank).
#include "comm_check_run.h"

#include "check.h"

#include <cstdio>
#include <string>

namespace cplab::cuda {

const char* check_name(CheckKind kind) {
  switch (kind) {
    case CheckKind::ring: return "ring exchange";
    case CheckKind::all_gather: return "all-gather";
    case CheckKind::all_to_all: return "all-to-all";
    case CheckKind::group_all_gather: return "all-gather over even ranks";
  }
  return "?";
}

std::uint8_t check_byte(CheckKind kind, int src, int dst, std::size_t i) {
  std::uint64_t x = static_cast<std::uint64_t>(i) * 0x9E3779B97F4A7C15ull;
  x ^= (static_cast<std::uint64_t>(src) + 1) << 40;
  x ^= (static_cast<std::uint64_t>(dst) + 2) << 20;
  x ^= static_cast<std::uint64_t>(kind) + 1;
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdull;
  x ^= x >> 33;
  return static_cast<std::uint8_t>(x & 0xFF);
}

RankCheck::RankCheck(Comm& comm, std::size_t block_bytes)
    : comm_(comm),
      B_(block_bytes),
      in_(static_cast<std::size_t>(comm.size()) * block_bytes),
      out_(static_cast<std::size_t>(comm.size()) * block_bytes),
      host_in_(static_cast<std::size_t>(comm.size()) * block_bytes) {
  CPLAB_CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
}

RankCheck::~RankCheck() { (void)cudaStreamDestroy(stream_); }

std::vector<int> RankCheck::even_ranks() const {
  std::vector<int> g;
  for (int r = 0; r < comm_.size(); r += 2) g.push_back(r);
  return g;
}

bool RankCheck::participates(CheckKind kind) const {
  return kind != CheckKind::group_all_gather || comm_.rank() % 2 == 0;
}

void RankCheck::prepare(CheckKind kind) {
  const int P = comm_.size(), me = comm_.rank();
  const int next = (me + 1) % P;
  for (int j = 0; j < P; ++j) {
    const int dst = kind == CheckKind::all_to_all ? j : kind == CheckKind::ring ? next : -1;
    for (std::size_t i = 0; i < B_; ++i)
      host_in_[static_cast<std::size_t>(j) * B_ + i] = check_byte(kind, me, dst, i);
  }
  CPLAB_CUDA_CHECK(cudaMemcpyAsync(in_.data(), host_in_.data(), host_in_.size(), cudaMemcpyHostToDevice, stream_));
  CPLAB_CUDA_CHECK(cudaMemsetAsync(out_.data(), 0xA5, out_.size(), stream_));
}

void RankCheck::issue(CheckKind kind) {
  if (!participates(kind)) return;
  const int P = comm_.size(), me = comm_.rank();
  switch (kind) {
    case CheckKind::ring:
      comm_.group_start();
      comm_.send(in_.data(), B_, (me + 1) % P, stream_);
      comm_.recv(out_.data(), B_, (me - 1 + P) % P, stream_);
      comm_.group_end();
      break;
    case CheckKind::all_gather: comm_.all_gather(in_.data(), out_.data(), B_, {}, stream_); break;
    case CheckKind::all_to_all: comm_.all_to_all(in_.data(), out_.data(), B_, {}, stream_); break;
    case CheckKind::group_all_gather: comm_.all_gather(in_.data(), out_.data(), B_, even_ranks(), stream_); break;
  }
}

std::string RankCheck::verify(CheckKind kind) {
  if (!participates(kind)) return "";
  const int P = comm_.size(), me = comm_.rank();
  std::vector<std::uint8_t> got(out_.size());
  out_.copy_to_host(got);
  const std::vector<int> group = even_ranks();
  int blocks = 1;
  if (kind == CheckKind::all_gather || kind == CheckKind::all_to_all) blocks = P;
  if (kind == CheckKind::group_all_gather) blocks = static_cast<int>(group.size());
  std::size_t wrong = 0;
  std::string first;
  for (int b = 0; b < blocks; ++b) {
    int src = 0, dst = -1;
    switch (kind) {
      case CheckKind::ring:
        src = (me - 1 + P) % P;
        dst = me;
        break;
      case CheckKind::all_gather: src = b; break;
      case CheckKind::all_to_all:
        src = b;
        dst = me;
        break;
      case CheckKind::group_all_gather: src = group[static_cast<std::size_t>(b)]; break;
    }
    for (std::size_t i = 0; i < B_; ++i) {
      const std::uint8_t want = check_byte(kind, src, dst, i);
      const std::uint8_t have = got[static_cast<std::size_t>(b) * B_ + i];
      if (have == want) continue;
      if (wrong++ == 0) {
        char buf[160];
        std::snprintf(buf, sizeof buf, "block %d (from rank %d) byte %zu is 0x%02x, expected 0x%02x", b, src, i,
                      have, want);
        first = buf;
      }
    }
  }
  if (wrong == 0) return "";
  return "rank " + std::to_string(me) + ": " + first + " (" + std::to_string(wrong) + " wrong bytes)";
}

}  // namespace cplab::cuda
