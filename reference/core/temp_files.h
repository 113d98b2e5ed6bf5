// temp_files.h: the temporary files of output_file.cpp's OutputSet, removed whatever ends the process.
//
// What it is (internal to core/output_file.cpp, namespace temp_files):
//   install_temp_handlers  a handler of SIGINT, SIGTERM and SIGHUP (where their disposition is the
//                          default) that removes every registered temporary file, then lets the
//                          signal end the process as it would have
//   create_registered      mkostemp(template) and its registration, with those signals blocked in
//                          between (a signal there would leave the file behind)
//   register_temp / unregister_temp   the fixed table that handler reads (atomics and unlink() only:
//                          async-signal-safe); a full table or a too-long path is not registered (the
//                          file is then removed by the next run, as after SIGKILL)
//   remove_stale           removes from a folder the temporary files whose writing process is gone
//                          (SIGKILL, a power cut), saying so on stderr
//   kTempMark              the mark in a temporary file's name: ".<name>.cplab-tmp-<pid>-XXXXXX"
// What it is not: the writing or the commit of files (output_file.h); portable beyond POSIX.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>

namespace cplab::temp_files {

inline constexpr std::string_view kTempMark = ".cplab-tmp-";

void install_temp_handlers();
struct Created {
  int fd = -1;    // the open file (O_CLOEXEC), or -1
  int err = 0;    // mkostemp's errno when fd is -1
  int slot = -1;  // its registration (unregister_temp), or -1
};
// tmpl: a path ending in XXXXXX, replaced by mkostemp with the file's name
Created create_registered(std::string& tmpl);
// the slot that now holds path (-1: not registered)
int register_temp(const std::string& path);
void unregister_temp(int slot);
void remove_stale(const std::filesystem::path& dir);

}  // namespace cplab::temp_files
