// test_local_comm.cpp: GPU tests of LocalWorld / LocalComm (need a CUDA device; main exits 77 without).
//
// What it is: ring exchanges over P = 2..8 virtual ranks for P steps with no host synchronisation
// between steps (so stream ordering is what is tested), all-gather and all-to-all over the whole
// world, over sub-groups given in an arbitrary order, and in place; the completion of a pair on
// both streams; the stress mode's copy delay exposing an event recorded too early; schedule bugs
// that need a GPU to arise (a send issued first, then a mismatch or no recv at all) throwing
// instead of hanging; and the byte counters. Every byte is checked on the host.
// What it is not: the argument/schedule checks that need no GPU (test_comm_host.cpp) or timings.
#include <doctest/doctest.h>

#include "check.h"
#include "device_buffer.h"
#include "local_comm.h"
#include "stream.h"

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <utility>
#include <vector>

namespace {

using namespace cplab::cuda;
using Bytes = std::vector<std::uint8_t>;
using Buf = DeviceBuffer<std::uint8_t>;

Bytes pattern(int tag, std::size_t n) {
  Bytes b(n);
  for (std::size_t i = 0; i < n; ++i)
    b[i] = static_cast<std::uint8_t>((tag * 131 + static_cast<int>(i % 251) * 7 + static_cast<int>(i / 251) * 13 + 1) & 0xFF);
  return b;
}

Buf upload(const Bytes& b) {
  Buf d(b.size());
  d.copy_from_host(b);
  return d;
}

Bytes download(const Buf& d) {
  Bytes b(d.size());
  d.copy_to_host(b);
  return b;
}

// Block `k` (B bytes) of `b`.
Bytes block(const Bytes& b, std::size_t k, std::size_t B) {
  return Bytes(b.begin() + static_cast<std::ptrdiff_t>(k * B), b.begin() + static_cast<std::ptrdiff_t>((k + 1) * B));
}

// -1 when equal, else the first differing index (or the shorter size)
long first_diff(const Bytes& a, const Bytes& b) {
  for (std::size_t i = 0; i < a.size() && i < b.size(); ++i)
    if (a[i] != b[i]) return static_cast<long>(i);
  return a.size() == b.size() ? -1 : static_cast<long>(std::min(a.size(), b.size()));
}

struct Streams {
  std::vector<cudaStream_t> s;
  explicit Streams(int n) : s(static_cast<std::size_t>(n)) {
    for (auto& x : s) CPLAB_CUDA_CHECK(cudaStreamCreateWithFlags(&x, cudaStreamNonBlocking));
  }
  ~Streams() {
    for (auto x : s) (void)cudaStreamDestroy(x);
  }
  Streams(const Streams&) = delete;
  Streams& operator=(const Streams&) = delete;
  cudaStream_t operator[](int r) const { return s[static_cast<std::size_t>(r)]; }
};

void sync_all(LocalWorld& world, const Streams& s) {
  for (int r = 0; r < world.size(); ++r) world.rank(r).synchronize(s[r]);
}

}  // namespace

TEST_CASE("LocalComm ring: P = 2..8 virtual ranks, P - 1 steps without host syncs, every block checked") {
  for (int P = 2; P <= 8; ++P) {
    CAPTURE(P);
    const std::size_t B = 4096 + 13 * static_cast<std::size_t>(P);  // not a multiple of 16
    LocalWorld world(P);
    Streams s(P);
    std::vector<Buf> cur, nxt, seen;  // seen[r]: (P, B) what rank r held at each step
    for (int r = 0; r < P; ++r) {
      cur.push_back(upload(pattern(r, B)));
      nxt.emplace_back(B);
      seen.emplace_back(static_cast<std::size_t>(P) * B);
    }
    for (int step = 0; step < P; ++step) {
      for (int r = 0; r < P; ++r)  // the step's "compute": reads cur on the rank's stream
        CPLAB_CUDA_CHECK(cudaMemcpyAsync(seen[static_cast<std::size_t>(r)].data() + static_cast<std::size_t>(step) * B,
                                         cur[static_cast<std::size_t>(r)].data(), B, cudaMemcpyDeviceToDevice, s[r]));
      if (step == P - 1) break;
      world.group_start();
      for (int r = 0; r < P; ++r) {
        Comm& c = world.rank(r);
        c.group_start();
        c.send(cur[static_cast<std::size_t>(r)].data(), B, (r + 1) % P, s[r]);
        c.recv(nxt[static_cast<std::size_t>(r)].data(), B, (r - 1 + P) % P, s[r]);
        c.group_end();
      }
      world.group_end();  // every half matched
      std::swap(cur, nxt);
    }
    world.finish();
    sync_all(world, s);
    for (int r = 0; r < P; ++r) {
      const Bytes h = download(seen[static_cast<std::size_t>(r)]);
      for (int step = 0; step < P; ++step) {
        CAPTURE(r);
        CAPTURE(step);
        CHECK(first_diff(block(h, static_cast<std::size_t>(step), B), pattern((r - step + P) % P, B)) == -1);
      }
    }
  }
}

TEST_CASE("LocalComm: ranks may share one stream, and a rank may send to itself") {
  LocalWorld world(3);
  Streams one(1);
  const std::size_t B = 333;
  std::vector<Buf> in, out;
  for (int r = 0; r < 3; ++r) {
    in.push_back(upload(pattern(50 + r, B)));
    out.emplace_back(B);
  }
  for (int r = 0; r < 3; ++r) {
    Comm& c = world.rank(r);
    c.group_start();
    c.send(in[static_cast<std::size_t>(r)].data(), B, (r + 2) % 3, one[0]);
    c.recv(out[static_cast<std::size_t>(r)].data(), B, (r + 1) % 3, one[0]);
    c.group_end();
  }
  Buf self_out(B);
  world.rank(1).send(in[1].data(), B, 1, one[0]);
  world.rank(1).recv(self_out.data(), B, 1, one[0]);
  world.finish();
  world.rank(0).synchronize(one[0]);
  for (int r = 0; r < 3; ++r) CHECK(first_diff(download(out[static_cast<std::size_t>(r)]), pattern(50 + (r + 1) % 3, B)) == -1);
  CHECK(first_diff(download(self_out), pattern(51, B)) == -1);
  CHECK(world.rank(1).bytes_sent() == B);  // the self-send is not communication
}

TEST_CASE("LocalComm all_gather: whole world, a sub-group in arbitrary order, in place") {
  const int P = 5;
  const std::size_t B = 1000;
  LocalWorld world(P);
  Streams s(P);
  std::vector<Buf> in, out, inplace;
  for (int r = 0; r < P; ++r) {
    in.push_back(upload(pattern(10 + r, B)));
    out.emplace_back(static_cast<std::size_t>(P) * B);
    Bytes ip(static_cast<std::size_t>(P) * B, 0);
    const Bytes own = pattern(30 + r, B);
    std::copy(own.begin(), own.end(), ip.begin() + static_cast<std::ptrdiff_t>(static_cast<std::size_t>(r) * B));
    inplace.push_back(upload(ip));
  }
  const Group g{4, 1, 3};  // position 0 = rank 4, position 1 = rank 1, position 2 = rank 3
  std::vector<Buf> gout;
  for (std::size_t i = 0; i < g.size(); ++i) gout.emplace_back(g.size() * B);
  for (int r = 0; r < P; ++r) world.rank(r).all_gather(in[static_cast<std::size_t>(r)].data(), out[static_cast<std::size_t>(r)].data(), B, {}, s[r]);
  for (std::size_t pos = 0; pos < g.size(); ++pos)
    world.rank(g[pos]).all_gather(in[static_cast<std::size_t>(g[pos])].data(), gout[pos].data(), B, g, s[g[pos]]);
  for (int r = 0; r < P; ++r) {
    std::uint8_t* base = inplace[static_cast<std::size_t>(r)].data();
    world.rank(r).all_gather(base + static_cast<std::size_t>(r) * B, base, B, {}, s[r]);
  }
  world.finish();
  sync_all(world, s);
  for (int r = 0; r < P; ++r) {
    CAPTURE(r);
    const Bytes h = download(out[static_cast<std::size_t>(r)]), hi = download(inplace[static_cast<std::size_t>(r)]);
    for (int i = 0; i < P; ++i) {
      CHECK(first_diff(block(h, static_cast<std::size_t>(i), B), pattern(10 + i, B)) == -1);
      CHECK(first_diff(block(hi, static_cast<std::size_t>(i), B), pattern(30 + i, B)) == -1);
    }
  }
  for (std::size_t pos = 0; pos < g.size(); ++pos) {
    const Bytes h = download(gout[pos]);
    for (std::size_t i = 0; i < g.size(); ++i) CHECK(first_diff(block(h, i, B), pattern(10 + g[i], B)) == -1);
  }
}

TEST_CASE("LocalComm all_to_all: whole world and a sub-group in arbitrary order") {
  const int P = 4;
  const std::size_t B = 777;
  LocalWorld world(P);
  Streams s(P);
  const Group g{3, 0, 2};
  std::vector<Buf> in, out, gin, gout;
  for (int r = 0; r < P; ++r) {
    Bytes h;
    for (int j = 0; j < P; ++j) {
      const Bytes b = pattern(100 + 10 * r + j, B);  // block j goes to rank j
      h.insert(h.end(), b.begin(), b.end());
    }
    in.push_back(upload(h));
    out.emplace_back(static_cast<std::size_t>(P) * B);
  }
  for (std::size_t pos = 0; pos < g.size(); ++pos) {
    Bytes h;
    for (std::size_t j = 0; j < g.size(); ++j) {
      const Bytes b = pattern(200 + 10 * g[pos] + g[j], B);  // block j goes to position j (rank g[j])
      h.insert(h.end(), b.begin(), b.end());
    }
    gin.push_back(upload(h));
    gout.emplace_back(g.size() * B);
  }
  for (int r = 0; r < P; ++r) world.rank(r).all_to_all(in[static_cast<std::size_t>(r)].data(), out[static_cast<std::size_t>(r)].data(), B, {}, s[r]);
  for (std::size_t pos = 0; pos < g.size(); ++pos) world.rank(g[pos]).all_to_all(gin[pos].data(), gout[pos].data(), B, g, s[g[pos]]);
  world.finish();
  sync_all(world, s);
  for (int r = 0; r < P; ++r) {
    const Bytes h = download(out[static_cast<std::size_t>(r)]);
    for (int i = 0; i < P; ++i) CHECK(first_diff(block(h, static_cast<std::size_t>(i), B), pattern(100 + 10 * i + r, B)) == -1);
  }
  for (std::size_t pos = 0; pos < g.size(); ++pos) {
    const Bytes h = download(gout[pos]);
    for (std::size_t i = 0; i < g.size(); ++i) CHECK(first_diff(block(h, i, B), pattern(200 + 10 * g[i] + g[pos], B)) == -1);
  }
}

TEST_CASE("LocalComm: a pair completes on both streams (sender may overwrite, receiver may read)") {
  LocalWorld world(2);
  Streams s(2);
  const std::size_t N = std::size_t{64} << 20;  // large, so that the copies take a while
  const Bytes pat = pattern(7, N);
  Buf staged = upload(pat), src(N), dst(N), seen(N);
  CPLAB_CUDA_CHECK(cudaMemsetAsync(src.data(), 0, N, s[0]));  // src gets its value late on stream 0
  CPLAB_CUDA_CHECK(cudaMemcpyAsync(src.data(), staged.data(), N, cudaMemcpyDeviceToDevice, s[0]));
  world.rank(1).recv(dst.data(), N, 0, s[1]);  // receiver first: nothing is enqueued yet
  world.rank(0).send(src.data(), N, 1, s[0]);  // completes the pair
  CPLAB_CUDA_CHECK(cudaMemsetAsync(src.data(), 0xFF, N, s[0]));  // the sender reuses its buffer
  CPLAB_CUDA_CHECK(cudaMemcpyAsync(seen.data(), dst.data(), N, cudaMemcpyDeviceToDevice, s[1]));  // the receiver reads
  world.finish();
  sync_all(world, s);
  CHECK(first_diff(download(seen), pat) == -1);
  CHECK(first_diff(download(dst), pat) == -1);
}

TEST_CASE("LocalComm stress delay: an event recorded before the partner is posted misses the copy, every time") {
  // What the stress mode (CPLAB_LOCAL_COMM_DELAY_US) is for: THE RULE of local_comm.h broken on
  // purpose. Rank 1 records an event on its stream before rank 0's send exists; a third stream
  // that waits on that event reads the buffer before the (20 ms late) copy lands.
  LocalWorld world(2);
  world.set_copy_delay_us(20000);
  Streams s(3);
  const std::size_t N = std::size_t{1} << 20;
  const Bytes pat = pattern(11, N), zeros(N, 0);
  Buf src = upload(pat), dst = upload(zeros), seen(N);
  Event early;
  world.rank(1).recv(dst.data(), N, 0, s[1]);
  early.record(s[1]);  // too early: the copy is enqueued on s[1] only when the send is posted
  early.wait_on(s[2]);
  CPLAB_CUDA_CHECK(cudaMemcpyAsync(seen.data(), dst.data(), N, cudaMemcpyDeviceToDevice, s[2]));
  world.rank(0).send(src.data(), N, 1, s[0]);
  world.finish();
  sync_all(world, s);
  CPLAB_CUDA_CHECK(cudaStreamSynchronize(s[2]));
  CHECK(first_diff(download(seen), zeros) == -1);  // stale: read before the copy
  CHECK(first_diff(download(dst), pat) == -1);     // and the copy did land
}

TEST_CASE("LocalComm: schedule bugs after a send throw with ranks and sizes instead of hanging") {
  Streams s(3);
  Buf a(1024), b(1024);
  SUBCASE("size mismatch, send issued first") {
    LocalWorld world(2);
    world.rank(0).send(a.data(), 1024, 1, s[0]);
    CHECK_THROWS_WITH_AS(world.rank(1).recv(b.data(), 512, 0, s[1]),
                         doctest::Contains("rank 0 send of 1024 bytes to rank 1 (call #1) is matched with rank 1 recv of 512 bytes"),
                         std::logic_error);
    CHECK_THROWS_WITH_AS(world.rank(0).send(a.data(), 8, 1, s[0]), doctest::Contains("unusable"), std::logic_error);
  }
  SUBCASE("a send nobody receives: finish") {
    LocalWorld world(3);
    world.rank(0).send(a.data(), 64, 2, s[0]);
    CHECK_THROWS_WITH_AS(world.finish(), doctest::Contains("rank 0 send of 64 bytes to rank 2"), std::logic_error);
  }
  SUBCASE("a send nobody receives: synchronize on its stream") {
    LocalWorld world(3);
    world.rank(0).send(a.data(), 64, 2, s[0]);
    CHECK_THROWS_WITH_AS(world.rank(0).synchronize(s[0]), doctest::Contains("rank 0 send of 64 bytes to rank 2"),
                         std::logic_error);
  }
  SUBCASE("a send nobody receives: world group_end") {
    LocalWorld world(3);
    world.group_start();
    world.rank(2).send(a.data(), 64, 0, s[2]);
    CHECK_THROWS_WITH_AS(world.group_end(), doctest::Contains("rank 2 send of 64 bytes to rank 0"), std::logic_error);
  }
}

TEST_CASE("LocalComm counts the bytes each rank sends to other ranks") {
  const int P = 4;
  const std::size_t B = 256;
  LocalWorld world(P);
  Streams s(P);
  std::vector<Buf> in, out;
  for (int r = 0; r < P; ++r) {
    in.emplace_back(static_cast<std::size_t>(P) * B);
    out.emplace_back(static_cast<std::size_t>(P) * B);
  }
  for (int r = 0; r < P; ++r) {
    Comm& c = world.rank(r);
    c.group_start();
    c.send(in[static_cast<std::size_t>(r)].data(), B, (r + 1) % P, s[r]);
    c.recv(out[static_cast<std::size_t>(r)].data(), B, (r - 1 + P) % P, s[r]);
    c.group_end();
  }
  for (int r = 0; r < P; ++r) CHECK(world.rank(r).bytes_sent() == B);
  for (int r = 0; r < P; ++r)
    world.rank(r).all_gather(in[static_cast<std::size_t>(r)].data(), out[static_cast<std::size_t>(r)].data(), B, {}, s[r]);
  for (int r = 0; r < P; ++r) CHECK(world.rank(r).bytes_sent() == B + (P - 1) * B);
  const Group g{0, 2};
  for (int r : g) world.rank(r).all_to_all(in[static_cast<std::size_t>(r)].data(), out[static_cast<std::size_t>(r)].data(), B, g, s[r]);
  CHECK(world.rank(0).bytes_sent() == B + (P - 1) * B + B);
  CHECK(world.rank(1).bytes_sent() == B + (P - 1) * B);
  CHECK(world.rank(0).messages_sent() == 1 + (P - 1) + 1);
  CHECK(world.total_bytes_sent() == P * (B + (P - 1) * B) + 2 * B);
  world.finish();
  sync_all(world, s);
}
