// viz_render.cpp: cplab-viz found and run for a picture (viz_render.h).
#include "viz_render.h"

#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "core/error.h"
#include "core/output_file.h"

extern char** environ;

namespace cplab::app {

namespace fs = std::filesystem;

namespace {

bool executable(const fs::path& p) {
  std::error_code ec;
  return fs::is_regular_file(p, ec) && ::access(p.c_str(), X_OK) == 0;
}

std::string on_path(const std::string& name) {
  const char* path = std::getenv("PATH");
  std::string rest = path ? path : "";
  while (!rest.empty()) {
    const size_t c = rest.find(':');
    const std::string dir = rest.substr(0, c);
    rest = c == std::string::npos ? "" : rest.substr(c + 1);
    if (!dir.empty() && executable(fs::path(dir) / name)) return (fs::path(dir) / name).string();
  }
  return "";
}

}  // namespace

std::string find_viz() {
  std::error_code ec;
  const fs::path self = fs::read_symlink("/proc/self/exe", ec);
  std::vector<fs::path> tried;
  if (!ec) tried = {self.parent_path() / "cplab-viz", self.parent_path().parent_path() / "viz" / "cplab-viz"};
  if (const char* env = std::getenv("CPLAB_VIZ"); env && *env) tried.insert(tried.begin(), fs::path(env));
  for (const fs::path& p : tried)
    if (executable(p)) return p.string();
  if (std::string p = on_path("cplab-viz"); !p.empty()) return p;
  std::string where;
  for (const fs::path& p : tried) where += (where.empty() ? "" : ", ") + p.string();
  throw Error("--out needs cplab-viz, whose renderer draws the picture, and it was not found (looked at " + where +
              " and on PATH; CPLAB_VIZ=FILE names it): build it (the viz is built when Dear ImGui, GLFW and OpenGL are "
              "installed, scripts/install-deps.sh) or leave --out away");
}

std::vector<std::string> headless_prefix() {
  if (const char* d = std::getenv("DISPLAY"); d && *d) return {};
  const std::string x = on_path("xvfb-run");
  require(!x.empty(), "--out renders with cplab-viz, which needs an X display: DISPLAY is not set and xvfb-run is not on PATH "
                      "(apt-get install xvfb xauth)");
  return {x, "-a"};
}

void render_check_png(const std::string& viz, const std::vector<std::string>& prefix, const std::string& report_json,
                      const std::string& png) {
  // the report, in a temporary file of its own
  std::error_code ec;
  const fs::path tmp = fs::temp_directory_path(ec);
  if (ec) {
    const char* env = std::getenv("TMPDIR");
    throw Error(std::string("--out: cannot use the temporary folder for cplab-viz's report (") +
                (env ? "TMPDIR=" + std::string(env) : std::string("/tmp")) + ": " + ec.message() +
                "): set TMPDIR to a folder that exists and can be written");
  }
  std::string tmpl = (tmp / "cplab-check-report-XXXXXX.json").string();
  std::vector<char> name(tmpl.begin(), tmpl.end());
  name.push_back('\0');
  const int fd = ::mkstemps(name.data(), 5);
  require(fd >= 0, std::string("--out: cannot create a temporary report file in ") + tmp.string() + " (" +
                       std::strerror(errno) + "): set TMPDIR to a folder that exists and can be written");
  ::close(fd);
  const std::string report(name.data());
  const TempFile cleanup(report);  // removed at the end, or by a SIGINT / SIGTERM before it
  {
    std::ofstream f(report);
    f << report_json;
    f.close();
    require(!f.fail(), "--out: cannot write the temporary report " + report);
  }
  std::vector<std::string> args = prefix;
  for (const char* a : {"--view", "check", "--check-report"}) args.emplace_back(a);
  args.push_back(report);
  for (const char* a : {"--headless", "--size", "1200x680", "--out"}) args.emplace_back(a);
  args.push_back(png);
  if (prefix.empty()) args.insert(args.begin(), viz);
  else args.insert(args.begin() + static_cast<std::ptrdiff_t>(prefix.size()), viz);
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  // cplab-viz's own lines ("wrote ...", the picture's notes) go to stderr: stdout is cplab check's
  // report, which --json keeps pure JSON
  posix_spawn_file_actions_t fa;
  ::posix_spawn_file_actions_init(&fa);
  ::posix_spawn_file_actions_adddup2(&fa, 2, 1);
  pid_t pid = 0;
  const int rc = ::posix_spawn(&pid, argv[0], &fa, nullptr, argv.data(), environ);
  ::posix_spawn_file_actions_destroy(&fa);
  require(rc == 0, "--out: cannot start " + args[0] + ": " + std::strerror(rc));
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0)
    require(errno == EINTR, std::string("--out: waiting for cplab-viz: ") + std::strerror(errno));
  require(WIFEXITED(status) && WEXITSTATUS(status) == 0,
          "--out: " + viz + " could not render " + png + " (" +
              (WIFEXITED(status) ? "exit status " + std::to_string(WEXITSTATUS(status)) : std::string("killed by a signal")) +
              "; its message is above)");
}

}  // namespace cplab::app
