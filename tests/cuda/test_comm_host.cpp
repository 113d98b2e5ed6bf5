// test_comm_host.cpp: checks of cuda/comm that need no GPU (cplab_comm_host_tests; run everywhere).
//
// What it is: LocalWorld / LocalComm argument checks and the schedule bugs that are detected before
// any CUDA call (a recv issued first and never matched, or matched by a send of another size;
// unbalanced groups; check_same_config, which LocalComm compares on the host); the stress mode's
// copy-delay setting; group validation of
// the collectives; the config hash; and, when NCCL is built, that NcclComm fails at once with
// NoDeviceError on a machine without a GPU, and the CPLAB_NCCL_TIMEOUT_S parsing.
// What it is not: a test of data movement (test_local_comm.cpp, test_nccl_comm.cpp, on a GPU).
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>

#include "device.h"
#include "local_comm.h"
#ifdef CPLAB_HAVE_NCCL
#include "nccl_comm.h"
#endif

#include <cstdint>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <vector>

using namespace cplab::cuda;

namespace {
// Never dereferenced: every call below is refused before it touches memory.
void* fake(std::uintptr_t p) { return reinterpret_cast<void*>(p); }
cudaStream_t no_stream() { return nullptr; }
}  // namespace

TEST_CASE("LocalWorld: sizes and ranks are checked") {
  CHECK_THROWS_AS(LocalWorld(0), std::invalid_argument);
  CHECK_THROWS_AS(LocalWorld(5000), std::invalid_argument);
  LocalWorld world(3);
  CHECK(world.size() == 3);
  CHECK(world.rank(2).rank() == 2);
  CHECK(world.rank(2).size() == 3);
  CHECK(std::string(world.rank(0).backend()) == "local");
  CHECK_THROWS_WITH_AS(world.rank(3), doctest::Contains("rank 3 outside [0, 3)"), std::invalid_argument);
  CHECK_THROWS_AS(world.rank(-1), std::invalid_argument);
}

TEST_CASE("LocalWorld copy delay (stress mode): CPLAB_LOCAL_COMM_DELAY_US and set_copy_delay_us are checked") {
  const char* old = std::getenv("CPLAB_LOCAL_COMM_DELAY_US");
  const std::string saved = old ? old : "";
  unsetenv("CPLAB_LOCAL_COMM_DELAY_US");
  CHECK(LocalWorld(2).copy_delay_us() == 0);
  setenv("CPLAB_LOCAL_COMM_DELAY_US", "250", 1);
  CHECK(LocalWorld(2).copy_delay_us() == 250);
  for (const char* bad : {"abc", "-1", "5us", "1000001"}) {
    setenv("CPLAB_LOCAL_COMM_DELAY_US", bad, 1);
    CHECK_THROWS_WITH_AS(LocalWorld(2), doctest::Contains("expected an integer number of microseconds in [0, 1000000]"),
                         std::invalid_argument);
  }
  if (old) setenv("CPLAB_LOCAL_COMM_DELAY_US", saved.c_str(), 1);
  else unsetenv("CPLAB_LOCAL_COMM_DELAY_US");
  LocalWorld world(2);
  world.set_copy_delay_us(1000);
  CHECK(world.copy_delay_us() == 1000);
  CHECK_THROWS_AS(world.set_copy_delay_us(-5), std::invalid_argument);
  CHECK_THROWS_AS(world.set_copy_delay_us(2000000), std::invalid_argument);
}

TEST_CASE("LocalComm: bad point-to-point arguments are refused before any CUDA call") {
  LocalWorld world(4);
  CHECK_THROWS_WITH_AS(world.rank(1).send(fake(0x1000), 16, 4, no_stream()),
                       doctest::Contains("rank 1 of 4 (local): send of 16 bytes with peer 4, outside [0, 4)"),
                       std::invalid_argument);
  CHECK_THROWS_AS(world.rank(1).recv(fake(0x1000), 16, -1, no_stream()), std::invalid_argument);
  CHECK_THROWS_WITH_AS(world.rank(0).recv(nullptr, 16, 1, no_stream()), doctest::Contains("buffer is null"),
                       std::invalid_argument);
  world.finish();  // nothing was posted: still a clean world
}

TEST_CASE("LocalComm: a recv issued first and matched by a send of another size throws, naming both") {
  LocalWorld world(2);
  world.rank(1).recv(fake(0x2000), 512, 0, no_stream());  // recv first: no CUDA call
  CHECK(world.pending() == 1);
  CHECK_THROWS_WITH_AS(world.rank(0).send(fake(0x1000), 1024, 1, no_stream()),
                       doctest::Contains("rank 0 send of 1024 bytes to rank 1 (call #2) is matched with rank 1 recv of "
                                         "512 bytes from rank 0 (call #1)"),
                       std::logic_error);
  // a schedule bug poisons the world: every rank's next call fails with the same story
  CHECK_THROWS_WITH_AS(world.rank(1).group_start(), doctest::Contains("unusable after an earlier error"), std::logic_error);
  CHECK_THROWS_AS(world.finish(), std::logic_error);
}

TEST_CASE("LocalComm: a recv whose send never comes is reported, never waited for") {
  SUBCASE("at the outermost world group_end") {
    LocalWorld world(3);
    world.group_start();
    world.group_start();
    world.rank(1).recv(fake(0x2000), 256, 0, no_stream());
    world.group_end();  // inner: no check yet
    CHECK_THROWS_WITH_AS(world.group_end(), doctest::Contains("rank 1 recv of 256 bytes from rank 0"), std::logic_error);
  }
  SUBCASE("at finish") {
    LocalWorld world(3);
    world.rank(1).recv(fake(0x2000), 256, 0, no_stream());
    world.rank(2).recv(fake(0x3000), 8, 1, no_stream());
    CHECK_THROWS_WITH_AS(world.finish(), doctest::Contains("2 unmatched operation(s)"), std::logic_error);
  }
  SUBCASE("at synchronize of its stream") {
    LocalWorld world(3);
    world.rank(1).recv(fake(0x2000), 256, 0, no_stream());
    CHECK_THROWS_WITH_AS(world.rank(1).synchronize(no_stream()), doctest::Contains("rank 1 recv of 256 bytes from rank 0"),
                         std::logic_error);
  }
}

TEST_CASE("LocalComm: groups must balance") {
  SUBCASE("group_end without group_start") {
    LocalWorld world(2);
    CHECK_THROWS_WITH_AS(world.rank(0).group_end(), doctest::Contains("without a matching group_start"), std::logic_error);
  }
  SUBCASE("an open group at finish") {
    LocalWorld world(2);
    world.rank(1).group_start();
    CHECK_THROWS_WITH_AS(world.finish(), doctest::Contains("rank 1 has 1 open group(s)"), std::logic_error);
  }
  SUBCASE("world group_end without group_start") {
    LocalWorld world(2);
    CHECK_THROWS_AS(world.group_end(), std::logic_error);
  }
}

TEST_CASE("LocalComm: collectives validate their group before any CUDA call") {
  LocalWorld world(4);
  Comm& c = world.rank(1);
  void* in = fake(0x10000);
  void* out = fake(0x20000);
  CHECK_THROWS_WITH_AS(c.all_gather(in, out, 64, Group{0, 2}, no_stream()), doctest::Contains("not a member"),
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(c.all_gather(in, out, 64, Group{1, 1}, no_stream()), doctest::Contains("appears twice"),
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(c.all_to_all(in, out, 64, Group{1, 7}, no_stream()), doctest::Contains("group member 7"),
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(c.all_to_all(in, fake(0x10000 + 64), 64, {}, no_stream()), doctest::Contains("overlap"),
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(c.all_gather(fake(0x20000 + 10), out, 64, {}, no_stream()), doctest::Contains("in place"),
                       std::invalid_argument);
  CHECK_THROWS_AS(c.all_gather(nullptr, out, 64, {}, no_stream()), std::invalid_argument);
  CHECK(world.pending() == 0);
  world.finish();
}

TEST_CASE("LocalComm check_same_config: equal strings pass, different ones fail naming the ranks") {
  SUBCASE("equal") {
    LocalWorld world(3);
    for (int r = 0; r < 3; ++r) world.rank(r).check_same_config("mode=ring S=8192");
    for (int r = 0; r < 3; ++r) world.rank(r).check_same_config("mode=ring S=4096");  // a second round
    world.finish();
  }
  SUBCASE("different") {
    LocalWorld world(4);
    world.rank(0).check_same_config("layout=zigzag");
    world.rank(1).check_same_config("layout=striped");
    world.rank(2).check_same_config("layout=zigzag");
    CHECK_THROWS_WITH_AS(world.rank(3).check_same_config("layout=contiguous"),
                         doctest::Contains("ranks 1, 3 differ from rank 0; rank 0: 'layout=zigzag'; rank 1: "
                                           "'layout=striped'; rank 3: 'layout=contiguous'"),
                         CommError);
    CHECK_THROWS_WITH_AS(world.rank(0).check_same_config("layout=zigzag"), doctest::Contains("differ from rank 0"),
                         CommError);  // every rank fails from now on
  }
  SUBCASE("a round that not every rank joined") {
    LocalWorld world(3);
    world.rank(0).check_same_config("x");
    CHECK_THROWS_WITH_AS(world.finish(), doctest::Contains("only by rank(s) 0"), std::logic_error);
  }
  SUBCASE("twice in one round") {
    LocalWorld world(2);
    world.rank(0).check_same_config("x");
    CHECK_THROWS_AS(world.rank(0).check_same_config("x"), std::logic_error);
  }
}

TEST_CASE("config hash and mismatch description") {
  CHECK(Comm::config_hash("") == 0xcbf29ce484222325ull);  // FNV-1a 64 test vectors
  CHECK(Comm::config_hash("a") == 0xaf63dc4c8601ec8cull);
  CHECK(Comm::config_hash("foobar") == 0x85944171f73967e8ull);
  CHECK(describe_config_mismatch({1, 5, 1, 5, 1, 5}) == "");
  CHECK(describe_config_mismatch({1, 5, 2, 5, 1, 5}) == "rank 1 differ from rank 0");
  CHECK(describe_config_mismatch({1, 5, 1, 6, 2, 5}) == "ranks 1, 2 differ from rank 0");
}

#ifdef CPLAB_HAVE_NCCL
// "at once": no NCCL call is made, so nothing can wait; a hang is caught by ctest's TIMEOUT of
// comm_host_checks (tests/cuda/CMakeLists.txt), not by reading a clock here
TEST_CASE("NcclComm fails at once without a GPU, before any NCCL call" * doctest::skip(device_count() > 0)) {
  ncclUniqueId id{};
  CHECK_THROWS_WITH_AS(NcclComm(id, 0, 1, 0), doctest::Contains("rank 0 of 1 (nccl): no CUDA device ("), NoDeviceError);
  CHECK_THROWS_WITH_AS(NcclComm::init_all(1), doctest::Contains("no CUDA device"), NoDeviceError);
  CHECK_THROWS_AS(NcclComm::unique_id(), NoDeviceError);
}

TEST_CASE("NcclComm argument checks come first") {
  ncclUniqueId id{};
  CHECK_THROWS_AS(NcclComm(id, 2, 2, 0), std::invalid_argument);
  CHECK_THROWS_AS(NcclComm::init_all(0), std::exception);
}

TEST_CASE("CPLAB_NCCL_TIMEOUT_S") {
  const char* old = std::getenv("CPLAB_NCCL_TIMEOUT_S");
  const std::string saved = old ? old : "";
  unsetenv("CPLAB_NCCL_TIMEOUT_S");
  CHECK(nccl_timeout_from_env() == 300.0);
  setenv("CPLAB_NCCL_TIMEOUT_S", "12.5", 1);
  CHECK(nccl_timeout_from_env() == 12.5);
  for (const char* bad : {"abc", "0", "-1", "5s", "inf"}) {
    setenv("CPLAB_NCCL_TIMEOUT_S", bad, 1);
    CHECK_THROWS_WITH_AS(nccl_timeout_from_env(), doctest::Contains("expected a number of seconds > 0"),
                         std::invalid_argument);
  }
  if (old) setenv("CPLAB_NCCL_TIMEOUT_S", saved.c_str(), 1);
  else unsetenv("CPLAB_NCCL_TIMEOUT_S");
}
#endif
