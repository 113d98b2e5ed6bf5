// test_cp_spec.cpp: CpSpec (modes/cp_spec.h) and the mode table (modes/mode_table.h): the values a
// spec derives once (S, packing, partition, packed), the rules it refuses with their messages, the
// mode names, and docs/modes.md's communication table against the table's own formulas.
// What it is not: a test of the modes' numbers or traces (test_modes.cpp runs every mode and checks
// its trace against the table's closed forms and step counts).
#include <doctest/doctest.h>

#include <fstream>
#include <sstream>

#include "core/error.h"
#include "modes/cp_spec.h"

using namespace cplab;

namespace {

CpFields packed_fields() {
  CpFields f;
  f.cp = 3;
  f.heads = f.kv_heads = 2;
  f.cu_seqlens = {0, 10, 34, 39};
  f.pad = true;
  return f;
}

}  // namespace

TEST_CASE("cp_spec: the default spec, and S, packing and partition derived once") {
  const CpSpec d;
  CHECK(d.mode() == Mode::p2p);
  CHECK(d.S() == 4096);
  CHECK(d.P() == 4);
  CHECK(d.n() == 1024);
  CHECK(d.dv() == 64);
  CHECK_FALSE(d.thd());
  CHECK_FALSE(d.packed());
  CHECK(d.packing().cu_seqlens_padded == std::vector<index_t>{0, 4096});
  CHECK(d.partition().cp() == 4);
  CHECK(d.scale() == doctest::Approx(0.125));

  const CpSpec p(packed_fields());  // TE's THD example (docs/sources.md): padded to multiples of 2*cp = 6
  CHECK(p.thd());
  CHECK(p.packed());
  CHECK(p.S() == 42);  // derived: the padded total
  CHECK(p.fields().seq == 42);
  CHECK(p.packing().cu_seqlens_padded == std::vector<index_t>{0, 12, 36, 42});
  CHECK(p.partition().seq() == 42);
  CHECK(p.partition().indices(0) == std::vector<index_t>{0, 1, 10, 11, 12, 13, 14, 15, 32, 33, 34, 35, 36, 41});

  CpFields same = packed_fields();
  same.seq = 42;  // given and equal: accepted
  CHECK(CpSpec(same).S() == 42);
  CpFields edited = p.fields();  // a copy of the fields, edited, is validated again
  edited.cp = 2;
  edited.seq = 0;
  CHECK(CpSpec(edited).packing().cu_seqlens_padded == std::vector<index_t>{0, 12, 36, 44});  // 2*cp = 4
}

TEST_CASE("cp_spec: every rule refused with its message") {
  CpFields f = packed_fields();
  f.seq = 40;
  CHECK_THROWS_WITH_AS(CpSpec{f}, "seq 40 disagrees with the packed total 42 of cu_seqlens after --pad", Error);
  f = CpFields{};
  CHECK_THROWS_WITH_AS(CpSpec{f}, "seq 0 must be >= 1", Error);  // unpacked: seq must be given
  f.seq = 64;
  f.pad = true;
  CHECK_THROWS_WITH_AS(CpSpec{f}, "--pad needs --cu-seqlens (it pads each packed sequence)", Error);
  f.pad = false;
  f.icp = 2, f.ocp = 2;
  CHECK_THROWS_WITH_AS(CpSpec{f}, "--hcp is only for --mode a2a+p2p", Error);
  f.icp = f.ocp = 0;
  f.replicate_kv = true;
  CHECK_THROWS_WITH_AS(CpSpec{f}, "--replicate-kv is only for --mode a2a and a2a+p2p", Error);
  f.replicate_kv = false;
  f.mode = Mode::allgather;
  f.merge = MergeKind::fold;
  CHECK_THROWS_WITH_AS(CpSpec{f},
                       "--merge applies to the modes that merge partial results (p2p, a2a+p2p), not allgather", Error);
  f = packed_fields();
  f.mode = Mode::a2a_p2p;
  f.icp = 3, f.ocp = 1;
  f.heads = f.kv_heads = 3;
  CHECK_THROWS_WITH_AS(CpSpec{f},
                       "packed sequences (--cu-seqlens) are supported by p2p, allgather and a2a, not a2a+p2p", Error);
  f = CpFields{};
  f.seq = 64;
  f.scale = -1;
  CHECK_THROWS_WITH_AS(CpSpec{f}, "scale must be a finite number > 0 (or 0 for 1/sqrt(head-dim))", Error);
  CHECK_THROWS_WITH_AS(check_cp_size(0), "cp 0 must be >= 1", Error);
  CHECK_THROWS_WITH_AS(check_cp_size(kMaxRanks + 1),
                       "cp 257 is more than the 256 ranks the CPU reference simulates (a ring computes cp*cp tiles)",
                       Error);
  CHECK_NOTHROW(check_cp_size(kMaxRanks));
}

TEST_CASE("mode table: names, parsing and what each mode accepts") {
  CHECK(mode_names() == "p2p, allgather, a2a, a2a+p2p");
  for (const ModeInfo& m : mode_table()) {
    CHECK(parse_mode(m.name) == m.mode);
    CHECK(to_string(m.mode) == m.name);
    CHECK(&mode_info(m.mode) == &m);
  }
  CHECK_THROWS_WITH_AS(parse_mode("ring"), "mode 'ring' is not one of: p2p, allgather, a2a, a2a+p2p", Error);
  CHECK_THROWS_WITH_AS(parse_mode(""), "mode '' is not one of: p2p, allgather, a2a, a2a+p2p", Error);
  CHECK(mode_info(Mode::p2p).merges);
  CHECK_FALSE(mode_info(Mode::a2a_p2p).packed);
  CHECK_FALSE(mode_info(Mode::a2a_p2p).any_layout);
  CHECK(mode_info(Mode::a2a).a2a_group(ModeRanks{8, 0, 0}) == 8);
  CHECK(mode_info(Mode::a2a_p2p).a2a_group(ModeRanks{8, 2, 4}) == 2);
  CHECK(mode_info(Mode::a2a_p2p).fwd_steps(ModeRanks{8, 2, 4}) == 6);
}

TEST_CASE("mode table: docs/modes.md's communication table is the table's own") {
  std::ifstream f(CPLAB_SOURCE_DIR "/docs/modes.md");
  REQUIRE(f);
  std::stringstream ss;
  ss << f.rdbuf();
  const std::string page = ss.str(), table = comm_table_markdown();
  INFO("docs/modes.md's communication table must read, line for line:\n" << table);
  CHECK(page.find(table) != std::string::npos);
}

TEST_CASE("mode table: the messages' lists of modes come from the table") {
  CHECK(mode_names_with(&ModeInfo::packed, " and ") == "p2p, allgather and a2a");
  CHECK(mode_names_with(&ModeInfo::merges, ", ") == "p2p, a2a+p2p");
  CHECK(mode_names_with(&ModeInfo::all_to_all, " and ") == "a2a and a2a+p2p");
}
