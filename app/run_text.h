// run_text.h: what the text reports of `cplab run` (training) and `cplab run --kv-cache` (inference) share.
//
// What it is: fmt, one number printed with a printf format; times_text, the report's last lines: the
// CP ranks' time, the dense oracle's, and the library that did the large tiles' CPU products and
// which of its kernels ran (core/gemm.h gemm_backend; core/kernel_route.h sends the small tiles to
// Eigen), so that a time read off a report says what produced it.
// What it is not: the reports themselves (cmd_run.cpp, cmd_run_infer.cpp) or their JSON.
#pragma once

#include <string>

namespace cplab::app {

std::string fmt(const char* f, double x);

// "time: CP ranks <s> s (simulated, one after another), dense oracle <s> s\nproducts: ...<backend>...\n"
std::string times_text(double ranks_seconds, double oracle_seconds);

}  // namespace cplab::app
