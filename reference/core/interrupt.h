// interrupt.h: a request to stop a long computation, and the points where the reference honours it.
//
// What it is: one process-wide flag. A thread that waits on a long call (the Python binding's, on
// Ctrl-C) calls request_interrupt(); the computing thread passes interruption_point() often (every
// SimComm message, so every ring / all-gather / all-to-all step of every mode and of inference;
// every sequence of dense_reference; every hypothesis and pair of `cplab check`), and it throws
// Interrupted there once the flag is set. Inside the attention kernel's OpenMP loops
// (core/attention_kernel.cpp) the threads poll interrupt_requested() between their units of work and
// the kernel throws Interrupted after the parallel region, so one long tile stops within a row block.
// The flag stays set until clear_interrupt() (the binding clears it once the interrupted call has
// ended: python/src/call.cpp).
// Cost when nothing is requested: one relaxed atomic load per point.
// What it is not: a cplab::Error (nothing was wrong with the input), a signal handler (the caller
// installs its own and calls request_interrupt() from a normal thread), or a cancellation of one
// call among several running concurrently (the flag stops them all). Interrupted leaves no partial
// result behind: the call that throws it returns nothing.
#pragma once

#include <atomic>
#include <exception>

namespace cplab {

struct Interrupted : std::exception {
  const char* what() const noexcept override;  // "interrupted"
};

namespace detail {
inline std::atomic<bool> interrupt_flag{false};
}

// thread-safe; the flag stays set until clear_interrupt()
inline void request_interrupt() { detail::interrupt_flag.store(true, std::memory_order_relaxed); }
inline void clear_interrupt() { detail::interrupt_flag.store(false, std::memory_order_relaxed); }
inline bool interrupt_requested() { return detail::interrupt_flag.load(std::memory_order_relaxed); }

// false inside an OpenMP parallel region (of any number of threads), where an exception must not
// escape: interruption_point is then a no-op and the kernel's loops do not stop early
bool interruptible_here();

// throws Interrupted when an interrupt is requested and the caller is not inside an OpenMP parallel
// region; otherwise nothing
inline void interruption_point() {
  if (interrupt_requested()) [[unlikely]]
    if (interruptible_here()) throw Interrupted();
}

}  // namespace cplab
