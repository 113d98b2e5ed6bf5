// output_file.h: THE way cplab writes a file: whole or not at all.
//
// What it is:
//   OutputSet        the output files of one command, committed together: stage() writes each to a
//                    temporary file ".<name>.cplab-tmp-<pid>-XXXXXX" in the target's folder (flushed,
//                    the stream, fsync and close checked); commit() renames them onto their targets,
//                    holding a lock (flock) on each target folder, so that two processes committing
//                    into one folder at once leave one whole set there, never a mix of both.
//                    An uncommitted set (a failed run: an exception, a refused input) removes its
//                    temporary files and leaves every target exactly as it was. SIGINT, SIGTERM and
//                    SIGHUP remove them too (a handler, installed where the signal's disposition is
//                    still the default); what SIGKILL leaves, the next stage() into that folder
//                    removes (a temporary file whose pid no longer exists), saying so on stderr.
//   write_file_whole one file, staged and committed at once
//   check_writable   the check before the work: could this path be written? Creates, opens and
//                    truncates nothing (an existing output stays as it is until commit)
//   check_folder     the same for a folder that commit may create (--out-dir)
//   same_file        whether two paths name one file (an output must not overwrite an input)
// A target that exists and is not a regular file (/dev/full, a terminal, a FIFO) cannot be renamed
// over (and a device node must never be replaced): it is written directly at commit, before any
// rename, and its write errors are still detected after the flush ("No space left on device").
// A symbolic link to a file is followed: the file it names is replaced, the link kept. A link that
// cannot be followed to a real path (/dev/stdout -> pipe:[...]) is written through, appending; a
// dangling link is refused.
// Every failure is a cplab::Error naming the path and the rule or the OS reason.
// What it is not: a transaction across files. The renames of one commit() happen one after another
// (other cplab commits wait for them, readers do not); a rename that fails midway (only an OS
// failure, the temporary files being written already) can leave the earlier targets replaced.
#pragma once

#include <functional>
#include <iosfwd>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace cplab {

using FillFn = std::function<void(std::ostream&)>;

class OutputSet {
 public:
  OutputSet() = default;
  OutputSet(const OutputSet&) = delete;
  OutputSet& operator=(const OutputSet&) = delete;
  ~OutputSet();  // an uncommitted set removes its temporary files

  // writes what fill() writes to a temporary file next to path (what: how the user named it, e.g.
  // "--trace"; "" = the path alone). fill may throw: the temporary file is removed, the exception
  // passes on. Throws cplab::Error if path cannot be written, or is already in this set.
  void stage(const std::string& path, std::string_view what, const FillFn& fill);
  // writes the direct (non-regular) targets, then renames every temporary file onto its target
  void commit();

 private:
  struct Staged {
    std::string target;  // the file replaced (a symbolic link followed)
    std::string label;   // "<what> <path>", for messages
    std::string temp;    // the temporary file; "" for a direct target
    std::string bytes;   // a direct target's content, written at commit
    int slot = -1;       // its entry in the table the signal handler removes temporary files from
  };
  std::vector<Staged> staged_;
  std::set<std::string> cleaned_;  // folders already rid of stale temporary files
  bool committed_ = false;
};

// A temporary file of cplab's own that is no output (cplab check --out's report for cplab-viz):
// removed when this goes out of scope, and by the SIGINT / SIGTERM / SIGHUP handler before that
class TempFile {
 public:
  explicit TempFile(std::string path);  // path: a file just created (mkstemp)
  ~TempFile();
  TempFile(const TempFile&) = delete;
  TempFile& operator=(const TempFile&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  int slot_ = -1;
};

// stage(path, what, fill) and commit() of a set of one file
void write_file_whole(const std::string& path, std::string_view what, const FillFn& fill);

// throws cplab::Error unless path could be written: not empty, not a folder, its folder exists and
// is writable (an existing device or FIFO: writable itself). Nothing is created or changed.
void check_writable(const std::string& path, std::string_view what);

// throws cplab::Error unless dir is a writable folder, or could be created (its nearest existing
// ancestor is a writable folder). Nothing is created.
void check_folder(const std::string& dir, std::string_view what);

// whether a and b name the same file: the same existing file (links followed), or, when one does not
// exist, the same absolute path once "." and ".." are resolved
bool same_file(const std::string& a, const std::string& b);

}  // namespace cplab
