// sync_emu.h: cuda/wgmma.cuh's named barriers and setmaxnreg emulated on the host, for
// warp-specialised kernels run by emu.h (kernel v3's ping-pong and producer; test_emu_hopper.cpp checks the
// model on tiny kernels). cuda/wgmma.cuh takes these in place of its inline PTX under CPLAB_EMULATE.
//
// What it models (PTX ISA "bar, barrier", "setmaxnreg"):
//   bar.sync id, n / bar.arrive id, n   16 barriers per block (id 0..15, 0 being __syncthreads'
//                   barrier, modelled only with n = the block size); n a positive multiple of 32,
//                   at most the block size, the same for every arrival of one phase (checked); a
//                   phase completes when n threads have arrived, then the barrier starts afresh.
//                   sync waits for the phase it arrived in; arrive does not wait. A block
//                   that ends with arrivals on a phase that never completed aborts (cplab's rule). Arrivals are
//                   counted per thread: that all 32 lanes of a warp execute it is not checked.
//   setmaxnreg.inc / .dec N   N in 24..256, a multiple of 8 (checked); the block a whole number of
//                   warpgroups; every thread of the warpgroup must execute the same one (checked),
//                   and none leaves before all 128 have arrived. The warpgroup's per-thread count
//                   starts at regs_per_thread (the kernel's count from ptxas, set by the test;
//                   default min(255, 65536 / threads) rounded down to 8); dec to N <= the current
//                   count returns (current - N) x 128 registers to the block's pool, inc to N >= the
//                   current count takes (N - current) x 128 from it, waiting until they are there
//                   (a wait no dec can end is reported as a deadlock). The pool starts empty.
// What it is not: a register allocator (the emulated kernel's variables do not live in the
// counted registers: a kernel that needs more than its count is not caught), barrier.cta's
// unaligned forms, bar.red, or timing.
#pragma once

#include <algorithm>
#include <cstdio>
#include <vector>

#include "emu.h"

namespace cplab_emu {

inline int regs_per_thread = 0;  // 0: the default above

struct WgRegs {
  int cur = 0, arrived = 0, n = 0;
  bool inc = false;
  long gen = 0;  // reallocations done
};
inline std::vector<Barrier> named_bars;  // [16]; [0] unused (block->bar)
inline std::vector<WgRegs> wg_regs;      // [warpgroup]
inline long reg_pool = 0;

inline void sync_block_start() {
  named_bars.assign(16, Barrier{});
  int r = regs_per_thread;
  if (r == 0) r = std::min(255, static_cast<int>(65536 / blockDim.x)) / 8 * 8;
  wg_regs.assign((blockDim.x + 127) / 128, WgRegs{r, 0, 0, false, 0});
  reg_pool = 0;
}
// cplab's rule, stricter than the ISA (which leaves it undefined): a block ends with no named
// barrier holding arrivals of a phase that never completed (an unbalanced arrive / sync protocol)
inline void sync_block_end() {
  for (size_t id = 1; id < named_bars.size(); ++id)
    if (named_bars[id].arrived != 0) {
      std::fprintf(stderr, "cplab_emu: block (%u, %u): named barrier %zu ends with %d of %d arrivals (a phase never completed)\n",
                   blockIdx.x, blockIdx.y, id, named_bars[id].arrived, named_bars[id].count);
      std::abort();
    }
}
inline const bool sync_hooked = [] {
  hooks().block_start.push_back(sync_block_start);
  hooks().block_end.push_back(sync_block_end);
  return true;
}();

inline void named_barrier(int id, int threads, bool wait) {
  yield();
  if (id < 0 || id > 15) fail("bar: barrier id not in 0..15");
  if (threads <= 0 || threads % kWarp != 0 || threads > static_cast<int>(blockDim.x))
    fail("bar: thread count not a positive multiple of 32 up to the block size");
  if (id == 0 && threads != static_cast<int>(blockDim.x)) fail("bar 0 (__syncthreads') with a partial thread count is not modelled");
  Barrier& b = id == 0 ? block->bar : named_bars[static_cast<size_t>(id)];
  if (b.arrived == 0) b.count = threads;
  else if (b.count != threads) fail("bar: the arrivals of one phase name different thread counts");
  if (wait) {
    arrive(b);
  } else if (++b.arrived == b.count) {
    b.arrived = 0;
    ++b.phase;
  }
}

struct RegWait {
  int w;
  long gen;
};
inline bool regs_ready(const void* p) {
  const auto* r = static_cast<const RegWait*>(p);
  const WgRegs& g = wg_regs[static_cast<size_t>(r->w)];
  if (g.gen != r->gen) return true;
  return g.arrived == 128 && (!g.inc || reg_pool >= static_cast<long>(g.n - g.cur) * 128);
}
inline void setmaxnreg(bool inc, int n) {
  yield();
  if (n < 24 || n > 256 || n % 8 != 0) fail("setmaxnreg: the register count is not in 24..256 and a multiple of 8");
  if (blockDim.x % 128 != 0) fail("setmaxnreg: the block is not a whole number of warpgroups");
  const int w = static_cast<int>(threadIdx.x) / 128;
  WgRegs& g = wg_regs[static_cast<size_t>(w)];
  if (g.arrived == 0) g.n = n, g.inc = inc;
  else if (g.n != n || g.inc != inc) fail("setmaxnreg: the threads of a warpgroup executed different setmaxnreg");
  ++g.arrived;
  const RegWait rw{w, g.gen};
  block_until(regs_ready, &rw);
  if (g.gen != rw.gen) return;  // another thread of the warpgroup applied it
  if (inc && n < g.cur) fail("setmaxnreg.inc to fewer registers than the warpgroup has");
  if (!inc && n > g.cur) fail("setmaxnreg.dec to more registers than the warpgroup has");
  reg_pool -= static_cast<long>(n - g.cur) * 128;
  g.cur = n, g.arrived = 0, ++g.gen;
}

}  // namespace cplab_emu

namespace cplab::cuda::detail {

inline void named_barrier_sync(int id, int threads) { cplab_emu::named_barrier(id, threads, true); }
inline void named_barrier_arrive(int id, int threads) { cplab_emu::named_barrier(id, threads, false); }
template <int N>
inline void setmaxnreg_inc() {
  cplab_emu::setmaxnreg(true, N);
}
template <int N>
inline void setmaxnreg_dec() {
  cplab_emu::setmaxnreg(false, N);
}

}  // namespace cplab::cuda::detail
