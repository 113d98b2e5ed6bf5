// error.h: cplab's one exception type for bad input.
//
// What it is: cplab::Error, thrown with a message that names the rule the input broke
// (e.g. "seq 1000 is not a multiple of 2*cp = 16 (zigzag needs 2*cp equal chunks)").
// The command line catches it, prints "cplab: error: <message>" and exits with status 2.
// What it is not: a logging facility, or a way to report internal bugs (those use assert / std::logic_error).
#pragma once

#include <stdexcept>
#include <string>

namespace cplab {

struct Error : std::runtime_error {
  explicit Error(const std::string& what) : std::runtime_error(what) {}
};

// throw cplab::Error(msg) unless cond holds
inline void require(bool cond, const std::string& msg) {
  if (!cond) throw Error(msg);
}

}  // namespace cplab
