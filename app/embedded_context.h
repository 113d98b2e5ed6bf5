// embedded_context.h: how a command's action learns that it runs for another front end
// (embedded.h) rather than for a shell: the arrays to read instead of files, and where to leave its
// report instead of printing it. Set by embedded.cpp for the duration of one parse, on this thread.
// What it is not: an API for anyone but embedded.cpp, cmd_run.cpp and cmd_check.cpp.
#pragma once

#include <optional>

#include "embedded.h"

namespace cplab::app {

struct EmbeddedRun {
  const RunArrays* arrays = nullptr;
  InputsSeen* seen = nullptr;
  std::optional<RunReport> report;
};
struct EmbeddedCheck {
  const CheckSources* sources = nullptr;
  std::optional<CheckReport> report;
  double max_flops = 0;  // > 0: the front end's limit on the check's CPU work (embedded.h)
  std::string where;     // the front end, for that limit's message
};

inline thread_local EmbeddedRun* embedded_run = nullptr;      // set: cmd_run.cpp's action is embedded
inline thread_local EmbeddedCheck* embedded_check = nullptr;  // set: cmd_check.cpp's action is embedded

}  // namespace cplab::app
