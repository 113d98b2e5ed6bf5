// module.cpp: the nanobind module cplab._cplab, the C++ half of `import cplab` (python/cplab/ is
// the other half: options, arrays, results and reports in Python's terms).
//
// What it is: the module's functions (_run: run_binding.cpp; _check: check_binding.cpp; _cli:
// cli_binding.cpp; _gemm_backend: which library and kernels do the CPU products, the `products:`
// line of `cplab run`) and how C++ exceptions reach Python: cplab::Error (bad input, the rule
// named) -> ValueError; app::RunFailed (a run's check failed, the command line's exit 1) ->
// cplab.RunFailed (a RuntimeError); std::bad_alloc -> MemoryError (nanobind's own mapping);
// cplab::Interrupted only ever follows Ctrl-C, whose KeyboardInterrupt call.cpp raises instead.
// What it is not: any rule, option or algorithm.
#include <nanobind/nanobind.h>
#include <nanobind/stl/string.h>

#include "core/error.h"
#include "core/gemm.h"
#include "core/interrupt.h"
#include "embedded.h"

namespace cplab::py {
namespace nb = nanobind;
void bind_run(nb::module_& m);    // run_binding.cpp
void bind_check(nb::module_& m);  // check_binding.cpp
void bind_cli(nb::module_& m);    // cli_binding.cpp
}  // namespace cplab::py

NB_MODULE(_cplab, m) {
  namespace nb = nanobind;
  m.doc() = "cplab's C++ libraries (the reference, the commands' rules, cplab check); use the cplab package";
  static nb::exception<cplab::app::RunFailed> run_failed(m, "RunFailed", PyExc_RuntimeError);
  nb::register_exception_translator([](const std::exception_ptr& p, void*) {
    try {
      std::rethrow_exception(p);
    } catch (const cplab::Error& e) {
      PyErr_SetString(PyExc_ValueError, e.what());
    } catch (const cplab::Interrupted& e) {
      PyErr_SetString(PyExc_KeyboardInterrupt, e.what());
    }
  });
  cplab::py::bind_run(m);
  cplab::py::bind_check(m);
  cplab::py::bind_cli(m);
  m.def("_gemm_backend", &cplab::gemm_backend, "the library and kernels of the CPU products (cplab run's products: line)");
}
