// call.h: a long C++ call from Python: the GIL released, Ctrl-C honoured, errors as Python's.
//
// What it is: interruptible(f) runs f() on a worker thread while the calling thread, the GIL
// released, waits; every 50 ms it takes the GIL and lets Python run its signal handlers
// (PyErr_CheckSignals). When one raises (Ctrl-C: KeyboardInterrupt), it asks the reference to stop
// (core/interrupt.h: the next interruption point throws cplab::Interrupted), waits for the worker to
// end, and raises that Python exception. Other threads run Python meanwhile. An exception of f
// reaches Python as: cplab::Error -> ValueError (the rule's message), std::bad_alloc ->
// MemoryError, anything else -> RuntimeError (translated in module.cpp).
// One interrupt flag serves the process: Ctrl-C stops every cplab call running at that moment.
// What it is not: a thread pool (each call starts one thread; the reference's OpenMP threads work
// under it as under a command's main thread).
#pragma once

#include <exception>
#include <functional>
#include <optional>

namespace cplab::py {

// runs f with the GIL released (f must not touch Python objects); rethrows f's exception
void interruptible(const std::function<void()>& f);

template <class R>
R interruptible_result(const std::function<R()>& f) {
  std::optional<R> r;
  interruptible([&] { r.emplace(f()); });
  return std::move(*r);
}

}  // namespace cplab::py
