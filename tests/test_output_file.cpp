// test_output_file.cpp: files written whole or not at all (reference/core/output_file.h).
//
// What it is: a file written whole; an existing file byte-identical when the writer throws or the
// set is never committed; no temporary file left behind; /dev/full reported as a write error and
// never replaced; a directory, a missing folder, two outputs naming one file refused; same_file; a
// temporary file of a gone process removed by the next write, and SIGTERM removing a set's own.
// What it is not: the CLI's use of it (bad_input_check.py, section B; cli_check.py).
#include <doctest/doctest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <ostream>
#include <stdexcept>
#include <string>

#include "core/error.h"
#include "core/output_file.h"

namespace fs = std::filesystem;

namespace {

struct Dir {
  fs::path dir;
  Dir() {
    static int counter = 0;
    dir = fs::temp_directory_path() / ("cplab_test_output_" + std::to_string(::getpid()) + "_" + std::to_string(counter++));
    fs::create_directories(dir);
  }
  ~Dir() {
    std::error_code ec;
    fs::remove_all(dir, ec);
  }
  std::string file(const std::string& name) const { return (dir / name).string(); }
  int entries() const { return static_cast<int>(std::distance(fs::directory_iterator(dir), fs::directory_iterator())); }
};

std::string slurp(const std::string& p) {
  std::ifstream f(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
}

void put(const std::string& p, const std::string& bytes) { std::ofstream(p, std::ios::binary) << bytes; }

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const cplab::Error& e) {
    return e.what();
  }
  return "";
}

auto text(const std::string& s) {
  return [s](std::ostream& out) { out << s; };
}

}  // namespace

TEST_CASE("output_file: a file written whole, replacing the old one, no temporary file left") {
  Dir d;
  const std::string p = d.file("out.json");
  cplab::write_file_whole(p, "--trace", text("first\n"));
  CHECK(slurp(p) == "first\n");
  put(p, "old bytes");
  ::chmod(p.c_str(), 0640);
  const std::string big(3 << 20, 'x');  // larger than the stream buffer
  cplab::write_file_whole(p, "--trace", text(big));
  CHECK(slurp(p) == big);
  struct stat st {};
  REQUIRE(::stat(p.c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == 0640);  // the replaced file's permissions are kept
  CHECK(d.entries() == 1);
}

TEST_CASE("output_file: the old content is kept when the writer throws, no temporary file left") {
  Dir d;
  const std::string p = d.file("o.npy");
  put(p, "known bytes");
  auto half_then_throw = [](std::ostream& out) {
    out << std::string(200000, 'y');  // some of it already flushed to the temporary file
    throw cplab::Error("the writer failed");
  };
  CHECK(error_of([&] { cplab::write_file_whole(p, "", half_then_throw); }) == "the writer failed");
  CHECK(slurp(p) == "known bytes");
  CHECK(d.entries() == 1);
  CHECK_THROWS_AS(cplab::write_file_whole(d.file("new.npy"), "", [](std::ostream&) { throw std::runtime_error("x"); }),
                  std::runtime_error);
  CHECK(!fs::exists(d.file("new.npy")));
  CHECK(d.entries() == 1);
}

TEST_CASE("output_file: a set is all or nothing") {
  Dir d;
  const std::string a = d.file("a"), b = d.file("b");
  put(a, "A0");
  put(b, "B0");
  {
    cplab::OutputSet set;
    set.stage(a, "--trace", text("A1"));
    set.stage(b, "--chrome-trace", text("B1"));
    CHECK(d.entries() == 4);  // two temporary files, nothing replaced yet
    CHECK(slurp(a) == "A0");
  }  // never committed (a later failure of the run)
  CHECK(slurp(a) == "A0");
  CHECK(slurp(b) == "B0");
  CHECK(d.entries() == 2);
  {
    cplab::OutputSet set;
    set.stage(a, "--trace", text("A1"));
    CHECK_THROWS_AS(set.stage(b, "--chrome-trace", [](std::ostream&) { throw cplab::Error("no"); }), cplab::Error);
  }
  CHECK(slurp(a) == "A0");
  CHECK(d.entries() == 2);
  cplab::OutputSet set;
  set.stage(a, "--trace", text("A1"));
  set.stage(b, "--chrome-trace", text("B1"));
  CHECK(error_of([&] { set.stage(d.file("./a"), "--out-dir", text("A2")); }) ==
        "--out-dir " + d.file("./a") + ": is also --trace " + a + " (each output needs its own file)");
  set.commit();
  CHECK(slurp(a) == "A1");
  CHECK(slurp(b) == "B1");
  CHECK(d.entries() == 2);
}

TEST_CASE("output_file: /dev/full is a write error, and stays a device") {
  if (!fs::exists("/dev/full")) return;  // not on this system
  struct stat before {};
  REQUIRE(::stat("/dev/full", &before) == 0);
  REQUIRE(S_ISCHR(before.st_mode));
  CHECK(error_of([] { cplab::write_file_whole("/dev/full", "--trace", text("{}\n")); }) ==
        "--trace /dev/full: cannot write (No space left on device)");
  struct stat after {};
  REQUIRE(::stat("/dev/full", &after) == 0);
  CHECK(S_ISCHR(after.st_mode));
  CHECK(after.st_rdev == before.st_rdev);
  // a device written directly is written at commit, before any rename: nothing else is replaced
  Dir d;
  const std::string p = d.file("o.npy");
  put(p, "known");
  cplab::OutputSet set;
  set.stage(p, "--out-dir", text("new"));
  set.stage("/dev/full", "--trace", text("{}\n"));
  CHECK_THROWS_AS(set.commit(), cplab::Error);
  CHECK(slurp(p) == "known");
}

TEST_CASE("output_file: bad targets are refused before anything is written") {
  Dir d;
  CHECK(error_of([&] { cplab::write_file_whole(d.dir.string(), "--trace", text("x")); }) ==
        "--trace " + d.dir.string() + ": cannot open for writing: it is a directory (an output must name a file)");
  const std::string missing = d.file("no/such/t.json");
  CHECK(error_of([&] { cplab::check_writable(missing, "--trace"); }) ==
        "--trace " + missing + ": cannot open for writing: the directory " + d.file("no/such") + " does not exist");
  put(d.file("f"), "");
  CHECK(error_of([&] { cplab::check_writable(d.file("f/t.json"), ""); }) ==
        d.file("f/t.json") + ": cannot open for writing (Not a directory)");
  CHECK(error_of([&] { cplab::check_writable(d.file("new/"), ""); }) ==
        d.file("new/") + ": cannot open for writing: it ends in '/' (an output must name a file)");
  CHECK(error_of([&] { cplab::check_writable("", "--trace"); }) == "--trace: needs a file name, got an empty string");
  CHECK(error_of([&] { cplab::check_writable(d.file("ok.json"), "--trace"); }).empty());
  CHECK(!fs::exists(d.file("ok.json")));  // a check creates nothing
  // --out-dir: an existing folder, or one that can be made; a file in the way is refused
  CHECK(error_of([&] { cplab::check_folder(d.file("a/b/c"), "--out-dir"); }).empty());
  CHECK(!fs::exists(d.file("a")));
  CHECK(error_of([&] { cplab::check_folder(d.file("f/sub"), "--out-dir"); }) ==
        "--out-dir " + d.file("f/sub") + ": cannot create the directory (" + d.file("f") + " is not a directory)");
  CHECK(d.entries() == 1);
}

TEST_CASE("output_file: a symbolic link is followed, not replaced") {
  Dir d;
  put(d.file("real"), "old");
  fs::create_symlink(d.file("real"), d.file("link"));
  cplab::write_file_whole(d.file("link"), "", text("new"));
  CHECK(fs::is_symlink(d.file("link")));
  CHECK(slurp(d.file("real")) == "new");
  fs::create_symlink(d.file("missing"), d.file("dangling"));
  CHECK(error_of([&] { cplab::write_file_whole(d.file("dangling"), "", text("x")); }) ==
        d.file("dangling") + ": cannot open for writing: it is a symbolic link to nothing (a dangling link)");
  CHECK(fs::is_symlink(d.file("dangling")));
  CHECK(!fs::exists(d.file("missing")));
}

TEST_CASE("output_file: same_file") {
  Dir d;
  put(d.file("x"), "1");
  fs::create_symlink(d.file("x"), d.file("y"));
  CHECK(cplab::same_file(d.file("x"), d.file("y")));
  CHECK(cplab::same_file(d.file("x"), d.file("../" + d.dir.filename().string() + "/x")));
  CHECK(cplab::same_file(d.file("new"), d.file("./new")));  // neither exists: compared as paths
  CHECK(!cplab::same_file(d.file("x"), d.file("new")));
  CHECK(!cplab::same_file(d.file("new"), d.file("new2")));
}

TEST_CASE("output_file: a temporary file whose process is gone is removed by the next write into its folder") {
  Dir d;
  const pid_t child = ::fork();
  REQUIRE(child >= 0);
  if (child == 0) ::_exit(0);
  int status = 0;
  REQUIRE(::waitpid(child, &status, 0) == child);  // its pid now names no process (reuse within the test: unlikely)
  const std::string dead = ".o.npy.cplab-tmp-" + std::to_string(child) + "-abcdef";
  const std::string live = ".o.npy.cplab-tmp-" + std::to_string(::getpid()) + "-abcdef";  // this process's
  const std::string other = ".o.npy.cplab-tmp-abcdef";  // no pid in the name: not known to be stale
  for (const std::string& n : {dead, live, other}) put(d.file(n), "left");
  cplab::write_file_whole(d.file("o.npy"), "--out-dir", text("new"));
  CHECK(!fs::exists(d.file(dead)));
  CHECK(fs::exists(d.file(live)));
  CHECK(fs::exists(d.file(other)));
  CHECK(slurp(d.file("o.npy")) == "new");
}

TEST_CASE("output_file: SIGTERM while a set is staged removes its temporary files, and still ends the process") {
  Dir d;
  put(d.file("a"), "A0");
  const pid_t child = ::fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    std::signal(SIGTERM, SIG_DFL);  // doctest's own handler would report a crash; a tool has the default
    cplab::OutputSet set;
    set.stage(d.file("a"), "--trace", text("A1"));
    set.stage(d.file("b"), "--chrome-trace", text("B1"));
    ::raise(SIGTERM);
    ::_exit(3);  // not reached: the handler removes the files and the signal ends the process
  }
  int status = 0;
  REQUIRE(::waitpid(child, &status, 0) == child);
  CHECK(WIFSIGNALED(status));
  CHECK((WIFSIGNALED(status) && WTERMSIG(status) == SIGTERM));
  CHECK(d.entries() == 1);  // "a" as it was, no temporary file
  CHECK(slurp(d.file("a")) == "A0");
}
