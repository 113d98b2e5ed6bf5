// output_file.cpp: output files written whole or not at all (output_file.h).
//
// What it is: POSIX file handling (mkostemp, write, fsync, close, rename) behind OutputSet, with an
// std::streambuf over a file descriptor so that writers keep writing to an std::ostream and every
// OS error (ENOSPC, EIO, EDQUOT, ...) is kept with its errno and reported after the flush. The
// temporary files' registry (removed on SIGINT / SIGTERM / SIGHUP, or by the next run after SIGKILL)
// is core/temp_files.h.
// What it is not: portable to non-POSIX systems (cplab builds on Linux).
#include "core/output_file.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <ostream>
#include <set>
#include <sstream>
#include <stdexcept>
#include <streambuf>

#include "core/error.h"
#include "core/temp_files.h"

namespace cplab {

namespace fs = std::filesystem;

namespace {

std::string os_reason(int err) { return std::strerror(err); }

std::string label_of(const std::string& path, std::string_view what) {
  return what.empty() ? path : std::string(what) + " " + path;
}

// the file a path names: a symbolic link to an existing file is followed (the link is kept)
fs::path target_of(const std::string& path) {
  std::error_code ec;
  if (fs::is_symlink(path, ec) && fs::exists(path, ec)) {
    fs::path c = fs::canonical(path, ec);
    if (!ec) return c;
  }
  return fs::path(path);
}

fs::path folder_of(const fs::path& p) { return p.has_parent_path() ? p.parent_path() : fs::path("."); }

// a symbolic link target_of could not follow to a real path: dangling, or a /proc "magic" link such
// as /dev/stdout -> /proc/self/fd/1 -> pipe:[...]; never renamed over (that would replace the link)
bool is_link(const fs::path& p) {
  struct stat st {};
  return ::lstat(p.c_str(), &st) == 0 && S_ISLNK(st.st_mode);
}

mode_t new_file_mode() {
  const mode_t m = ::umask(0);  // (umask can only be read by setting it; set back at once)
  ::umask(m);
  return 0666 & ~m;
}

// an output stream buffer over a file descriptor; the first write error is kept, not retried
class FdBuf : public std::streambuf {
 public:
  explicit FdBuf(int fd) : fd_(fd), buf_(1 << 16) { setp(buf_.data(), buf_.data() + buf_.size()); }
  int error() const { return err_; }

 protected:
  int_type overflow(int_type c) override {
    if (!drain()) return traits_type::eof();
    if (!traits_type::eq_int_type(c, traits_type::eof())) {
      *pptr() = traits_type::to_char_type(c);
      pbump(1);
    }
    return traits_type::not_eof(c);
  }
  int sync() override { return drain() ? 0 : -1; }

 private:
  bool drain() {
    if (err_ != 0) return false;
    const char* p = pbase();
    auto n = static_cast<std::size_t>(pptr() - pbase());
    while (n > 0) {
      const ssize_t w = ::write(fd_, p, n);
      if (w < 0 && errno == EINTR) continue;
      if (w <= 0) {
        err_ = w < 0 ? errno : EIO;
        return false;
      }
      p += w;
      n -= static_cast<std::size_t>(w);
    }
    setp(buf_.data(), buf_.data() + buf_.size());
    return true;
  }
  int fd_;
  int err_ = 0;
  std::vector<char> buf_;
};

// fill() into fd, flushed; throws naming label and the OS reason of the first failed write
void fill_fd(int fd, const std::string& label, const FillFn& fill) {
  FdBuf buf(fd);
  std::ostream os(&buf);
  fill(os);
  os.flush();
  if (buf.error() != 0) throw Error(label + ": cannot write (" + os_reason(buf.error()) + ")");
  require(!os.fail(), label + ": cannot write (the output stream failed)");
}

// the content of a direct target (a device or FIFO), written when the set commits
void write_direct(const std::string& target, const std::string& label, const std::string& bytes) {
  // O_NONBLOCK: a FIFO nobody reads fails at once (ENXIO) instead of hanging in open(); O_APPEND:
  // a regular file behind a magic link (/dev/stdout of a redirected process) is added to, not cut
  const int fd = ::open(target.c_str(), O_WRONLY | O_APPEND | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
  if (fd < 0) {
    const int e = errno;
    throw Error(label + ": cannot open for writing (" +
                (e == ENXIO ? std::string("no process is reading it") : os_reason(e)) + ")");
  }
  const int flags = ::fcntl(fd, F_GETFL);
  if (flags >= 0) ::fcntl(fd, F_SETFL, flags & ~O_NONBLOCK);
  try {
    fill_fd(fd, label, [&](std::ostream& os) { os.write(bytes.data(), static_cast<std::streamsize>(bytes.size())); });
  } catch (...) {
    ::close(fd);
    throw;
  }
  if (::close(fd) != 0) {
    const int e = errno;
    throw Error(label + ": cannot write (" + os_reason(e) + ")");
  }
}

// ---- the lock of a folder during a commit ----------------------------------------------------------
// flock() on the folder itself (no lock file left behind): the commits of two processes into one
// folder happen one after the other, so the folder ends up holding one whole set, never a mix.
// Best effort: a folder that cannot be opened for reading (mode 0300) commits unlocked.
class FolderLocks {
 public:
  explicit FolderLocks(const std::set<std::string>& folders) {
    std::set<std::string> real;  // one lock per folder, taken in one order: no deadlock between two sets
    for (const std::string& f : folders) {
      std::error_code ec;
      const fs::path c = fs::canonical(f, ec);
      real.insert(ec ? f : c.string());
    }
    for (const std::string& f : real) {
      const int fd = ::open(f.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
      if (fd < 0) continue;
      while (::flock(fd, LOCK_EX) != 0 && errno == EINTR) {
      }
      fds_.push_back(fd);
    }
  }
  ~FolderLocks() {
    for (int fd : fds_) ::close(fd);  // closing releases the lock
  }
  FolderLocks(const FolderLocks&) = delete;
  FolderLocks& operator=(const FolderLocks&) = delete;

 private:
  std::vector<int> fds_;
};

// 0 if access(p, mode) allows it, else its errno (read before anything else can change errno)
int access_error(const fs::path& p, int mode) { return ::access(p.c_str(), mode) == 0 ? 0 : errno; }

// 0 if stat(p) succeeds, else its errno
int stat_error(const fs::path& p, struct stat& st) { return ::stat(p.c_str(), &st) == 0 ? 0 : errno; }

}  // namespace

void check_writable(const std::string& path, std::string_view what) {
  require(!path.empty(), std::string(what) + ": needs a file name, got an empty string");
  const std::string label = label_of(path, what);
  const fs::path t = target_of(path);
  struct stat st {};
  if (const int e = stat_error(t, st); e == 0) {
    require(!S_ISDIR(st.st_mode), label + ": cannot open for writing: it is a directory (an output must name a file)");
    const int a = access_error(t, W_OK);
    if (!S_ISREG(st.st_mode) || is_link(t)) {  // a device, FIFO or magic link: written directly
      require(a == 0, label + ": cannot open for writing (" + os_reason(a) + ")");
      return;
    }
    require(a == 0, label + ": cannot open for writing: the existing file is not writable (" + os_reason(a) + ")");
  } else {
    require(e == ENOENT, label + ": cannot open for writing (" + os_reason(e) + ")");
    require(!is_link(t), label + ": cannot open for writing: it is a symbolic link to nothing (a dangling link)");
    require(t.has_filename(), label + ": cannot open for writing: it ends in '/' (an output must name a file)");
  }
  const fs::path dir = folder_of(t);
  if (const int e = stat_error(dir, st); e != 0) {
    require(e != ENOENT, label + ": cannot open for writing: the directory " + dir.string() + " does not exist");
    throw Error(label + ": cannot open for writing: cannot use the directory " + dir.string() + " (" + os_reason(e) + ")");
  }
  require(S_ISDIR(st.st_mode), label + ": cannot open for writing: " + dir.string() + " is not a directory");
  const int a = access_error(dir, W_OK | X_OK);
  require(a == 0, label + ": cannot open for writing: cannot create files in the directory " + dir.string() + " (" + os_reason(a) + ")");
}

void check_folder(const std::string& dir, std::string_view what) {
  require(!dir.empty(), std::string(what) + ": needs a directory name, got an empty string");
  const std::string label = label_of(dir, what);
  fs::path p = fs::path(dir).lexically_normal();
  if (!p.has_filename() && p.has_parent_path()) p = p.parent_path();  // "a/b/" -> "a/b"
  for (;;) {
    struct stat st {};
    if (const int e = stat_error(p, st); e == 0) {
      require(S_ISDIR(st.st_mode), label + ": cannot create the directory (" + p.string() + " is not a directory)");
      const int a = access_error(p, W_OK | X_OK);
      require(a == 0, label + ": cannot create the directory (cannot create files in " + p.string() + ": " + os_reason(a) + ")");
      return;
    } else {
      // ENOTDIR: a file above it, named by the next step up
      require(e == ENOENT || e == ENOTDIR,
              label + ": cannot create the directory (cannot use " + p.string() + ": " + os_reason(e) + ")");
    }
    const fs::path up = folder_of(p);
    require(up != p, label + ": cannot create the directory (no existing directory above " + p.string() + ")");
    p = up;  // missing: commit creates it, so its nearest existing ancestor must take new folders
  }
}

bool same_file(const std::string& a, const std::string& b) {
  std::error_code ea, eb;
  const bool xa = fs::exists(a, ea), xb = fs::exists(b, eb);
  if (xa && xb) {
    std::error_code ec;
    const bool eq = fs::equivalent(a, b, ec);
    return !ec && eq;
  }
  if (xa != xb) return false;
  auto norm = [](const std::string& p) {
    std::error_code ec;
    fs::path w = fs::weakly_canonical(fs::absolute(p, ec), ec);
    return ec ? fs::path(p).lexically_normal() : w;
  };
  return norm(a) == norm(b);
}

TempFile::TempFile(std::string path) : path_(std::move(path)) {
  temp_files::install_temp_handlers();
  slot_ = temp_files::register_temp(path_);
}

TempFile::~TempFile() {
  ::unlink(path_.c_str());
  temp_files::unregister_temp(slot_);
}

OutputSet::~OutputSet() {
  for (const Staged& s : staged_)
    if (!s.temp.empty()) {
      ::unlink(s.temp.c_str());
      temp_files::unregister_temp(s.slot);
    }
}

void OutputSet::stage(const std::string& path, std::string_view what, const FillFn& fill) {
  if (committed_) throw std::logic_error("OutputSet::stage called after commit");
  check_writable(path, what);
  Staged s;
  s.label = label_of(path, what);
  const fs::path t = target_of(path);
  s.target = t.string();
  for (const Staged& x : staged_)
    require(!same_file(x.target, s.target), s.label + ": is also " + x.label + " (each output needs its own file)");
  struct stat st {};
  const bool exists = ::stat(t.c_str(), &st) == 0;
  if (exists && (!S_ISREG(st.st_mode) || is_link(t))) {  // a device, FIFO, magic link: written at commit
    std::ostringstream os;
    fill(os);
    require(!os.fail(), s.label + ": cannot write (the output stream failed)");
    s.bytes = std::move(os).str();
    staged_.push_back(std::move(s));
    return;
  }
  const fs::path dir = folder_of(t);
  if (cleaned_.insert(dir.string()).second) temp_files::remove_stale(dir);
  std::string tmpl = (dir / ("." + t.filename().string().substr(0, 200) + std::string(temp_files::kTempMark) +
                             std::to_string(::getpid()) + "-XXXXXX"))
                         .string();
  const temp_files::Created made = temp_files::create_registered(tmpl);
  const int fd = made.fd, mk_errno = made.err;
  s.slot = made.slot;
  if (fd < 0)
    throw Error(s.label + ": cannot create a temporary file in " + dir.string() + " (" + os_reason(mk_errno) + ")");
  s.temp = tmpl;
  try {
    // the new file gets the old one's permissions, or those a new file would get
    if (::fchmod(fd, exists ? (st.st_mode & 07777) : new_file_mode()) != 0) {
      const int e = errno;
      throw Error(s.label + ": cannot set the permissions of " + s.temp + " (" + os_reason(e) + ")");
    }
    fill_fd(fd, s.label, fill);
    if (::fsync(fd) != 0) {
      const int e = errno;
      throw Error(s.label + ": cannot write (" + os_reason(e) + ")");
    }
  } catch (...) {
    ::close(fd);
    ::unlink(s.temp.c_str());
    temp_files::unregister_temp(s.slot);
    throw;
  }
  if (::close(fd) != 0) {
    const int e = errno;
    ::unlink(s.temp.c_str());
    temp_files::unregister_temp(s.slot);
    throw Error(s.label + ": cannot write (" + os_reason(e) + ")");
  }
  staged_.push_back(std::move(s));
}

void OutputSet::commit() {
  if (committed_) throw std::logic_error("OutputSet::commit called twice");
  std::set<std::string> folders;
  for (const Staged& s : staged_)
    if (!s.temp.empty()) folders.insert(folder_of(s.target).string());
  const FolderLocks locks(folders);  // another process's commit into these folders waits, or is waited for
  for (const Staged& s : staged_)  // first the targets that may still fail on a write: nothing renamed yet
    if (s.temp.empty()) write_direct(s.target, s.label, s.bytes);
  for (Staged& s : staged_) {
    if (s.temp.empty()) continue;
    if (::rename(s.temp.c_str(), s.target.c_str()) != 0) {
      const int e = errno;
      throw Error(s.label + ": cannot rename the temporary file " + s.temp + " onto it (" + os_reason(e) + ")");
    }
    s.temp.clear();
    temp_files::unregister_temp(s.slot);
    s.slot = -1;
  }
  committed_ = true;
  for (const std::string& d : folders) {  // make the renames durable (best effort: not every file system can)
    const int fd = ::open(d.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd >= 0) {
      ::fsync(fd);
      ::close(fd);
    }
  }
}

void write_file_whole(const std::string& path, std::string_view what, const FillFn& fill) {
  OutputSet set;
  set.stage(path, what, fill);
  set.commit();
}

}  // namespace cplab
