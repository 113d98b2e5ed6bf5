// kernel_route.h: which arithmetic the CPU attention kernel uses for one call: the portable route
// (bit-for-bit the same on every x86-64 machine) or the fast one (this CPU's BLAS and vector units).
//
// What it is:
//   Route::portable  Eigen's product and Eigen's vectorised arrays at the build's own instruction set
//                    (SSE2 unless CPLAB_NATIVE): the same bits on every machine, so the lessons' and
//                    the demo's printed errors are the same everywhere (tutorials/check_lesson.py
//                    compares them digit for digit)
//   Route::fast      gemm.h's OpenBLAS (kernels chosen for the CPU at run time) and row_kernels.h's
//                    AVX2 + FMA code when the CPU has it: within the documented tolerances of the
//                    portable route, not bit-identical to it, nor across CPUs
// kernel_route(work) picks fast when a call's work (query rows x keys x query heads) is at least
// kFastRouteWork, the size from which BLAS and wide vectors pay; small tiles (lessons, demo, most
// tests) stay portable. set_kernel_route forces one route for every call (tests run both on the
// same inputs); RouteChoice::automatic restores the rule. RouteScope forces one for a scope and
// always restores the automatic rule (also when the scope throws).
// What it is not: the products or the loops themselves (gemm.h, row_kernels.h).
#pragma once

#include <cstdint>

namespace cplab {

enum class Route { portable, fast };
enum class RouteChoice { automatic, portable, fast };

inline constexpr std::int64_t kFastRouteWork = std::int64_t{1} << 20;

Route kernel_route(double work);
// process-wide; call it outside parallel regions
void set_kernel_route(RouteChoice c);

struct RouteScope {
  explicit RouteScope(RouteChoice c) { set_kernel_route(c); }
  ~RouteScope() { set_kernel_route(RouteChoice::automatic); }
  RouteScope(const RouteScope&) = delete;
  RouteScope& operator=(const RouteScope&) = delete;
};

}  // namespace cplab
