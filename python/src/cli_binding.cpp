// cli_binding.cpp: cplab._cplab._cli, a `cplab` command run in this process (the Python layer's
// cplab.layout, cplab.schedule and cplab.plan call it with --json and parse what it printed).
//
// What it is: _cli(args) -> (exit status, standard output), app/embedded.h's cli_capture: the
// command line's own parsing, rules and JSON, so the Python functions return exactly what
// `cplab layout ... --json` prints. A bad option raises ValueError with the command line's message.
// What it is not: a shell (no process is started), or a way to run commands that write files.
#include <nanobind/nanobind.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/vector.h>

#include "call.h"
#include "embedded.h"

namespace cplab::py {

namespace nb = nanobind;

void bind_cli(nb::module_& m) {
  m.def(
      "_cli",
      [](const std::vector<std::string>& args) {
        std::string out;
        int status = 0;
        interruptible([&] { status = app::cli_capture(args, out); });
        return nb::make_tuple(status, out);
      },
      nb::arg("args"));
  m.def("_options", &app::command_options, nb::arg("command"),
        "the long option names of `cplab COMMAND` and whether each is a flag");
}

}  // namespace cplab::py
