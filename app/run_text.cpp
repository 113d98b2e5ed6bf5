// run_text.cpp: fmt and times_text (see run_text.h).
#include "run_text.h"

#include <cstdio>

#include "core/gemm.h"
#include "core/kernel_route.h"

namespace cplab::app {

std::string fmt(const char* f, double x) {
  char b[64];
  std::snprintf(b, sizeof b, f, x);
  return b;
}

std::string times_text(double ranks_seconds, double oracle_seconds) {
  return "time: CP ranks " + fmt("%.3f", ranks_seconds) + " s (simulated, one after another), dense oracle " +
         fmt("%.3f", oracle_seconds) + " s\nproducts: tiles of at least " + std::to_string(kFastRouteWork) +
         " query rows x keys x heads by " + gemm_backend() +
         "; smaller ones by Eigen, the portable route (core/kernel_route.h)\n";
}

}  // namespace cplab::app
