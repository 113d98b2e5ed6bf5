// cpu_machine.cpp: this_machine (see cpu_machine.h).
#include "cpu_machine.h"

#include <omp.h>

#include <Eigen/Core>
#include <fstream>
#include <set>
#include <sstream>

#include "core/gemm.h"

namespace cplab::cpubench {

Machine this_machine() {
  Machine m;
  std::ifstream in("/proc/cpuinfo");
  std::set<std::string> flags;
  for (std::string line; std::getline(in, line);) {
    const auto colon = line.find(':');
    if (colon == std::string::npos) continue;
    std::string key = line.substr(0, colon);
    key.erase(key.find_last_not_of(" \t") + 1);
    const std::string value = colon + 2 <= line.size() ? line.substr(colon + 2) : "";
    if (key == "processor") ++m.logical_cpus;
    else if (key == "model name" && m.cpu == "unknown") m.cpu = value;
    else if (key == "flags" && flags.empty()) {
      std::istringstream words(value);
      for (std::string w; words >> w;) flags.insert(w);
    }
  }
  for (const char* f : {"sse4_2", "avx", "avx2", "fma", "avx512f"})
    if (flags.count(f)) m.cpu_simd += (m.cpu_simd.empty() ? "" : " ") + std::string(f);
  if (m.cpu_simd.empty()) m.cpu_simd = "unknown";
  m.build_simd = Eigen::SimdInstructionSetsInUse();
  m.gemm = gemm_backend();
  m.omp_threads = omp_get_max_threads();
  return m;
}

}  // namespace cplab::cpubench
