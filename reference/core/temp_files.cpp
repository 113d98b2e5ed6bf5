// temp_files.cpp: the registry of live temporary files and the removal of stale ones (temp_files.h).
#include "core/temp_files.h"

#include <dirent.h>
#include <signal.h>
#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <mutex>

namespace cplab::temp_files {

namespace fs = std::filesystem;

namespace {

// ---- temporary files removed when a signal ends the process ---------------------------------------
// A fixed table of the temporary files alive now, read by the handler of SIGINT, SIGTERM and SIGHUP
// with nothing but atomics and unlink() (async-signal-safe): it removes them, then the signal ends
// the process as it would have (the previous disposition restored and the signal raised again).
// SIGKILL cannot be caught: what it leaves, the next write into the folder removes (remove_stale).
constexpr int kTempSlots = 64;
constexpr std::size_t kTempPath = 4096;
struct TempSlot {
  std::atomic<int> state{0};  // 0 free, 1 being filled, 2 a live temporary file
  char path[kTempPath];
};
TempSlot g_temp[kTempSlots];
constexpr int kCaught[] = {SIGINT, SIGTERM, SIGHUP};
struct sigaction g_previous[3];

extern "C" void remove_temps_on_signal(int sig) {
  const int saved = errno;
  for (TempSlot& t : g_temp)
    if (t.state.load(std::memory_order_acquire) == 2) ::unlink(t.path);
  for (int i = 0; i < 3; ++i)
    if (kCaught[i] == sig) ::sigaction(sig, &g_previous[i], nullptr);
  errno = saved;
  ::raise(sig);  // delivered when the handler returns: the process ends as the signal says
}

}  // namespace

// installs the handler for each signal whose disposition is the default (a program's own handler,
// or an ignored signal, is left alone); checked at every temporary file, so a disposition reset to
// the default later (a forked child) gets the handler too
void install_temp_handlers() {
  static std::mutex m;
  const std::lock_guard<std::mutex> lock(m);
  for (int i = 0; i < 3; ++i) {
    struct sigaction now {};
    if (::sigaction(kCaught[i], nullptr, &now) != 0 || (now.sa_flags & SA_SIGINFO) || now.sa_handler != SIG_DFL)
      continue;
    g_previous[i] = now;
    struct sigaction sa {};
    sa.sa_handler = remove_temps_on_signal;
    sigemptyset(&sa.sa_mask);
    for (int s : kCaught) sigaddset(&sa.sa_mask, s);
    ::sigaction(kCaught[i], &sa, nullptr);
  }
}

// the slot that now holds path (-1: the table is full or the path too long; the file is then only
// removed by the next run, as after SIGKILL)
int register_temp(const std::string& path) {
  if (path.size() >= kTempPath) return -1;
  for (int i = 0; i < kTempSlots; ++i) {
    int expected = 0;
    if (!g_temp[i].state.compare_exchange_strong(expected, 1)) continue;
    std::memcpy(g_temp[i].path, path.c_str(), path.size() + 1);
    g_temp[i].state.store(2, std::memory_order_release);
    return i;
  }
  return -1;
}

Created create_registered(std::string& tmpl) {
  sigset_t block, old;
  sigemptyset(&block);
  for (int sig : kCaught) sigaddset(&block, sig);
  install_temp_handlers();
  ::pthread_sigmask(SIG_BLOCK, &block, &old);
  Created c;
  c.fd = ::mkostemp(tmpl.data(), O_CLOEXEC);
  c.err = c.fd < 0 ? errno : 0;
  if (c.fd >= 0) c.slot = register_temp(tmpl);
  ::pthread_sigmask(SIG_SETMASK, &old, nullptr);
  return c;
}

void unregister_temp(int slot) {
  if (slot >= 0) g_temp[slot].state.store(0, std::memory_order_release);
}

namespace {

// ---- temporary files of processes that are gone -----------------------------------------------------
// the pid in a temporary file's name (0: not one of ours)
long temp_owner(std::string_view name) {
  if (name.empty() || name[0] != '.') return 0;
  const size_t at = name.rfind(kTempMark);
  if (at == std::string_view::npos) return 0;
  std::string_view rest = name.substr(at + kTempMark.size());
  const size_t dash = rest.find('-');
  if (dash == 0 || dash == std::string_view::npos || dash > 9 || rest.size() != dash + 7) return 0;
  long pid = 0;
  for (size_t i = 0; i < dash; ++i) {
    if (rest[i] < '0' || rest[i] > '9') return 0;
    pid = pid * 10 + (rest[i] - '0');
  }
  return pid;
}

std::string program_name() {
  const char* n = program_invocation_short_name;
  return n && *n ? n : "cplab";
}

}  // namespace

// removes from dir the temporary files whose writing process no longer exists (a run killed by
// SIGKILL, or by a power cut), saying so on stderr; best effort: what cannot be read stays
void remove_stale(const fs::path& dir) {
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) return;
  const long self = static_cast<long>(::getpid());
  while (const dirent* e = ::readdir(d)) {
    const std::string_view name(e->d_name);
    const long pid = temp_owner(name);
    if (pid <= 0 || pid == self) continue;
    if (::kill(static_cast<pid_t>(pid), 0) == 0 || errno != ESRCH) continue;  // alive (or not ours to ask)
    const fs::path p = dir / std::string(name);
    if (::unlink(p.c_str()) == 0)
      std::fprintf(stderr, "%s: removed the stale temporary file %s (left by process %ld, which is gone)\n",
                   program_name().c_str(), p.c_str(), pid);
  }
  ::closedir(d);
}

}  // namespace cplab::temp_files
