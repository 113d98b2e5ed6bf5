// comm.cpp: the backend-independent parts of Comm (see comm.h): argument and group validation,
// the point-to-point collectives, check_same_config through an all-gather, and the config hash.
//
// What it is: code every backend shares; it calls only the virtual send/recv/group/synchronize.
// What it is not: a backend (local_comm.cu, nccl_comm.cpp).
#include "comm.h"

#include "check.h"
#include "device_buffer.h"

#include <algorithm>
#include <array>
#include <cstdint>
#include <set>
#include <stdexcept>
#include <string>

namespace cplab::cuda {

namespace {

using Bytes = const std::uint8_t*;

bool overlap(const void* a, std::size_t na, const void* b, std::size_t nb) {
  if (na == 0 || nb == 0) return false;
  const auto pa = reinterpret_cast<std::uintptr_t>(a);
  const auto pb = reinterpret_cast<std::uintptr_t>(b);
  return pa < pb + nb && pb < pa + na;
}

void require_buffer(const std::string& who, const char* op, const char* name, const void* p, std::size_t bytes) {
  if (p == nullptr && bytes > 0)
    throw std::invalid_argument(who + ": " + op + ": " + name + " is null but " + std::to_string(bytes) +
                                " bytes were requested");
}

// Multiplying block size by group size must not overflow size_t.
std::size_t total_bytes(const std::string& who, const char* op, std::size_t block, std::size_t g) {
  if (g != 0 && block > SIZE_MAX / g)
    throw std::invalid_argument(who + ": " + op + ": " + std::to_string(g) + " blocks of " +
                                std::to_string(block) + " bytes overflow size_t");
  return block * g;
}

// RAII non-blocking stream, for check_same_config only.
struct ScratchStream {
  cudaStream_t s = nullptr;
  ScratchStream() { CPLAB_CUDA_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking)); }
  ~ScratchStream() { (void)cudaStreamDestroy(s); }
  ScratchStream(const ScratchStream&) = delete;
  ScratchStream& operator=(const ScratchStream&) = delete;
};

}  // namespace

std::string Comm::who() const {
  return "rank " + std::to_string(rank()) + " of " + std::to_string(size()) + " (" + backend() + ")";
}

std::uint64_t Comm::config_hash(const std::string& s) {
  std::uint64_t h = 0xcbf29ce484222325ull;  // FNV-1a 64 offset basis
  for (const unsigned char c : s) {
    h ^= c;
    h *= 0x100000001b3ull;  // FNV prime
  }
  return h;
}

std::string describe_config_mismatch(const std::vector<std::uint64_t>& hash_and_length) {
  const std::size_t n = hash_and_length.size() / 2;
  std::string differ;
  for (std::size_t r = 1; r < n; ++r) {
    if (hash_and_length[2 * r] == hash_and_length[0] && hash_and_length[2 * r + 1] == hash_and_length[1]) continue;
    differ += (differ.empty() ? "" : ", ") + std::to_string(r);
  }
  if (differ.empty()) return "";
  return (differ.find(',') == std::string::npos ? "rank " : "ranks ") + differ + " differ from rank 0";
}

void Comm::check_p2p_args(const char* op, const void* buf, std::size_t bytes, int peer) const {
  if (peer < 0 || peer >= size())
    throw std::invalid_argument(who() + ": " + op + " of " + std::to_string(bytes) + " bytes with peer " +
                                std::to_string(peer) + ", outside [0, " + std::to_string(size()) + ")");
  require_buffer(who(), op, "buffer", buf, bytes);
}

Comm::ResolvedGroup Comm::resolve(const Group& group, const char* op) const {
  ResolvedGroup g;
  if (group.empty()) {
    g.members.resize(static_cast<std::size_t>(size()));
    for (int r = 0; r < size(); ++r) g.members[static_cast<std::size_t>(r)] = r;
    g.position = rank();
    g.whole = true;
    return g;
  }
  std::set<int> seen;
  int position = -1;
  for (std::size_t i = 0; i < group.size(); ++i) {
    const int m = group[i];
    if (m < 0 || m >= size())
      throw std::invalid_argument(who() + ": " + op + ": group member " + std::to_string(m) +
                                  " outside [0, " + std::to_string(size()) + ")");
    if (!seen.insert(m).second)
      throw std::invalid_argument(who() + ": " + op + ": rank " + std::to_string(m) + " appears twice in the group");
    if (m == rank()) position = static_cast<int>(i);
  }
  if (position < 0)
    throw std::invalid_argument(who() + ": " + op + ": the calling rank is not a member of the group");
  g.members = group;
  g.position = position;
  g.whole = static_cast<int>(group.size()) == size();
  for (std::size_t i = 0; g.whole && i < group.size(); ++i) g.whole = group[i] == static_cast<int>(i);
  return g;
}

void Comm::all_gather(const void* in, void* out, std::size_t bytes_per_rank, const Group& group,
                      cudaStream_t stream) {
  const ResolvedGroup g = resolve(group, "all_gather");
  const std::size_t G = g.members.size();
  const std::size_t out_bytes = total_bytes(who(), "all_gather", bytes_per_rank, G);
  require_buffer(who(), "all_gather", "in", in, bytes_per_rank);
  require_buffer(who(), "all_gather", "out", out, out_bytes);
  const void* own = static_cast<std::uint8_t*>(out) + static_cast<std::size_t>(g.position) * bytes_per_rank;
  if (in != own && overlap(in, bytes_per_rank, out, out_bytes))
    throw std::invalid_argument(who() + ": all_gather: in overlaps out but is not its own block (in place "
                                "means in == out + position * bytes_per_rank)");
  all_gather_impl(in, out, bytes_per_rank, g, stream);
}

void Comm::all_to_all(const void* in, void* out, std::size_t bytes_per_peer, const Group& group,
                      cudaStream_t stream) {
  const ResolvedGroup g = resolve(group, "all_to_all");
  const std::size_t total = total_bytes(who(), "all_to_all", bytes_per_peer, g.members.size());
  require_buffer(who(), "all_to_all", "in", in, total);
  require_buffer(who(), "all_to_all", "out", out, total);
  if (overlap(in, total, out, total))
    throw std::invalid_argument(who() + ": all_to_all: in and out overlap (not supported in place)");
  all_to_all_impl(in, out, bytes_per_peer, g, stream);
}

// Position p sends to p+1, p+2, ... and receives from p-1, p-2, ... so that no two positions
// start with the same peer.
void Comm::all_gather_impl(const void* in, void* out, std::size_t bytes, const ResolvedGroup& g,
                           cudaStream_t stream) {
  const int G = static_cast<int>(g.members.size());
  const int p = g.position;
  auto* o = static_cast<std::uint8_t*>(out);
  std::uint8_t* own = o + static_cast<std::size_t>(p) * bytes;
  if (own != in && bytes > 0)
    CPLAB_CUDA_CHECK(cudaMemcpyAsync(own, in, bytes, cudaMemcpyDeviceToDevice, stream));
  if (G == 1) return;
  group_start();
  for (int k = 1; k < G; ++k) {
    const int to = (p + k) % G;
    const int from = (p - k + G) % G;
    send(in, bytes, g.members[static_cast<std::size_t>(to)], stream);
    recv(o + static_cast<std::size_t>(from) * bytes, bytes, g.members[static_cast<std::size_t>(from)], stream);
  }
  group_end();
}

void Comm::all_to_all_impl(const void* in, void* out, std::size_t bytes, const ResolvedGroup& g,
                           cudaStream_t stream) {
  const int G = static_cast<int>(g.members.size());
  const int p = g.position;
  const auto* i8 = static_cast<Bytes>(in);
  auto* o8 = static_cast<std::uint8_t*>(out);
  const std::size_t own = static_cast<std::size_t>(p) * bytes;
  if (bytes > 0) CPLAB_CUDA_CHECK(cudaMemcpyAsync(o8 + own, i8 + own, bytes, cudaMemcpyDeviceToDevice, stream));
  if (G == 1) return;
  group_start();
  for (int k = 1; k < G; ++k) {
    const int to = (p + k) % G;
    const int from = (p - k + G) % G;
    send(i8 + static_cast<std::size_t>(to) * bytes, bytes, g.members[static_cast<std::size_t>(to)], stream);
    recv(o8 + static_cast<std::size_t>(from) * bytes, bytes, g.members[static_cast<std::size_t>(from)], stream);
  }
  group_end();
}

// Every rank all-gathers (hash, length) of its description over the whole communicator, then each
// compares all of them: every rank reaches the same verdict and throws the same list of ranks.
void Comm::check_same_config(const std::string& description) {
  const std::array<std::uint64_t, 2> mine{config_hash(description), description.size()};
  const std::size_t P = static_cast<std::size_t>(size());
  ScratchStream stream;
  DeviceBuffer<std::uint64_t> in(2);      // (2) this rank's (hash, length)
  DeviceBuffer<std::uint64_t> out(2 * P);  // (P, 2) every rank's (hash, length)
  CPLAB_CUDA_CHECK(cudaMemcpyAsync(in.data(), mine.data(), sizeof mine, cudaMemcpyHostToDevice, stream.s));
  all_gather(in.data(), out.data(), sizeof mine, {}, stream.s);
  synchronize(stream.s);
  std::vector<std::uint64_t> all(2 * P);
  out.copy_to_host(all);
  const std::string differ = describe_config_mismatch(all);
  if (!differ.empty())
    throw CommError(who() + ": check_same_config: " + differ + "; this rank's configuration is '" +
                    description + "'");
}

}  // namespace cplab::cuda
