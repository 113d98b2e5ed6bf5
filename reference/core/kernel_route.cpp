// kernel_route.cpp: kernel_route and set_kernel_route (see kernel_route.h).
#include "core/kernel_route.h"

#include <atomic>

namespace cplab {

namespace {
std::atomic<RouteChoice> g_choice{RouteChoice::automatic};
}

Route kernel_route(double work) {
  switch (g_choice.load(std::memory_order_relaxed)) {
    case RouteChoice::portable: return Route::portable;
    case RouteChoice::fast: return Route::fast;
    case RouteChoice::automatic: break;
  }
  return work >= static_cast<double>(kFastRouteWork) ? Route::fast : Route::portable;
}

void set_kernel_route(RouteChoice c) { g_choice.store(c, std::memory_order_relaxed); }

}  // namespace cplab
