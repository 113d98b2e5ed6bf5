// call.cpp: long calls with the GIL released and Ctrl-C honoured (call.h).
#include "call.h"

#include <nanobind/nanobind.h>

#include <chrono>
#include <future>
#include <thread>

#include "core/interrupt.h"

namespace cplab::py {

namespace nb = nanobind;

void interruptible(const std::function<void()>& f) {
  std::packaged_task<void()> task(f);
  std::future<void> done = task.get_future();
  PyObject *type = nullptr, *value = nullptr, *trace = nullptr;  // the signal handler's exception
  {
    nb::gil_scoped_release release;
    std::thread worker(std::move(task));
    bool asked = false;
    while (done.wait_for(std::chrono::milliseconds(50)) != std::future_status::ready) {
      if (asked) continue;
      nb::gil_scoped_acquire acquire;
      if (PyErr_CheckSignals() != 0) {
        PyErr_Fetch(&type, &value, &trace);
        request_interrupt();  // the worker stops at its next interruption point
        asked = true;
      }
    }
    worker.join();
    if (asked) clear_interrupt();
  }
  if (type) {  // the handler's exception (KeyboardInterrupt), whatever the worker ended with
    PyErr_Restore(type, value, trace);
    throw nb::python_error();
  }
  done.get();  // rethrows f's exception
}

}  // namespace cplab::py
