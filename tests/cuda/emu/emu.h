// emu.h: a host emulation of the CUDA execution model, just enough to run the source of the
// attention kernels v1 and v2 (cuda/attention_v1.cu, attention_v2_fwd.cu, attention_v2_bwd.cu) on
// the CPU. cuda/attention_impl.cuh includes it when CPLAB_EMULATE is defined (g++ only).
//
// What it is: launch() runs a grid block after block; each block runs as blockDim.x ucontext
// fibers on the calling OS thread, cooperatively: a fiber runs until it waits at a barrier
// (__syncthreads, __syncthreads_or / _and) or a warp collective (__shfl_xor_sync, and mma_emu.h's
// ldmatrix / mma). threadIdx / blockIdx / blockDim / gridDim are globals switched with the fiber.
// The scheduler is adversarial in a simple way: it lets one warp run ahead as far as it can and
// switches at seeded random points to another runnable warp, so a read of shared memory that
// another warp has not yet written (a missing __syncthreads) sees stale data. Shared memory starts
// as 0xFF bytes (NaN in fp32, fp16 and bf16), so an element read before it is written shows up.
// Atomics are plain read-modify-writes (fibers never interleave inside one). A barrier no fiber
// can pass (a __syncthreads in divergent code) aborts with "deadlock".
// What it is not: a model of the CUDA memory model (every write is visible to every thread at
// once: a missing fence or volatile is not caught, only a missing barrier in the control flow), of
// warp divergence or independent thread scheduling within a warp, of timing, occupancy or
// shared-memory bank conflicts; or of any built-in those kernels do not use.
#pragma once

#include <cuda_runtime.h>  // uint3, dim3; under g++ it defines __global__ / __device__ as nothing

#include <ucontext.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <functional>
#include <random>
#include <vector>

#ifndef __launch_bounds__
#define __launch_bounds__(...)
#endif

inline uint3 threadIdx, blockIdx;
inline dim3 blockDim, gridDim;

namespace cplab_emu {

constexpr int kWarp = 32;

struct Barrier {
  int count = 0, arrived = 0;
  long phase = 0;
};

// a 16-byte cp.async (mma_emu.h), recorded to be performed later
struct Copy {
  void* dst;
  const void* src;
  bool valid;
};

struct Fiber {
  ucontext_t ctx{};
  std::vector<char> stack;
  bool done = false;
  const Barrier* waiting = nullptr;  // the barrier this fiber waits at, in phase `wait_phase`
  long wait_phase = 0;
  std::vector<Copy> open;                 // cp.async: the open group
  std::deque<std::vector<Copy>> groups;  // cp.async: committed groups, oldest first
};

// one block's state, and the per-warp exchange slots of the warp collectives
struct Block {
  Barrier bar;
  std::vector<Barrier> warp_bar;
  std::vector<Fiber> fibers;
  std::vector<unsigned char> smem;
  ucontext_t scheduler{};
  int current = -1;
  int reduce = 0;  // __syncthreads_or / _and
  // warp collectives: lane l of warp w writes slot [w][l], then all read
  std::vector<float> f32;                 // [warps][32]
  std::vector<const void*> ptr;           // [warps][32]
  std::vector<std::uint32_t> reg;         // [warps][32][6]
  std::function<void()> body;
};

inline Block* block = nullptr;
inline std::mt19937 rng(12345);

inline Fiber& me() { return block->fibers[static_cast<size_t>(block->current)]; }
inline int warp() { return static_cast<int>(threadIdx.x) / kWarp; }
inline int lane() { return static_cast<int>(threadIdx.x) % kWarp; }
inline unsigned char* block_smem() { return block->smem.data(); }

inline void arrive(Barrier& b) {
  if (++b.arrived == b.count) {
    b.arrived = 0;
    ++b.phase;
    return;
  }
  Fiber& f = me();
  f.waiting = &b;
  f.wait_phase = b.phase;
  while (b.phase == f.wait_phase) swapcontext(&f.ctx, &block->scheduler);
  f.waiting = nullptr;
}
inline void warp_sync() { arrive(block->warp_bar[static_cast<size_t>(warp())]); }

inline void fiber_entry() {
  block->body();
  me().done = true;  // uc_link returns to the scheduler
}

inline void run_block(Block& blk) {
  const int n = static_cast<int>(blk.fibers.size()), warps = n / kWarp;
  for (Fiber& f : blk.fibers) {
    f.done = false;
    f.waiting = nullptr;
    f.open.clear();
    f.groups.clear();
    getcontext(&f.ctx);
    f.ctx.uc_stack.ss_sp = f.stack.data();
    f.ctx.uc_stack.ss_size = f.stack.size();
    f.ctx.uc_link = &blk.scheduler;
    makecontext(&f.ctx, fiber_entry, 0);
  }
  const auto runnable = [&](int t) {
    const Fiber& f = blk.fibers[static_cast<size_t>(t)];
    return !f.done && (f.waiting == nullptr || f.waiting->phase != f.wait_phase);
  };
  int fav = 0;  // the warp that runs ahead
  for (;;) {
    bool ran = false;
    for (int t = fav * kWarp; t < (fav + 1) * kWarp; ++t) {
      if (!runnable(t)) continue;
      ran = true;
      blk.current = t;
      threadIdx = uint3{static_cast<unsigned>(t), 0, 0};
      swapcontext(&blk.scheduler, &blk.fibers[static_cast<size_t>(t)].ctx);
    }
    if (ran && rng() % 8 != 0) continue;
    std::vector<int> ready;
    for (int w = 0; w < warps; ++w)
      for (int t = w * kWarp; t < (w + 1) * kWarp; ++t)
        if (runnable(t)) {
          ready.push_back(w);
          break;
        }
    if (ready.empty()) {
      for (const Fiber& f : blk.fibers)
        if (!f.done) {
          std::fprintf(stderr, "cplab_emu: deadlock (a barrier not every thread of the block reaches)\n");
          std::abort();
        }
      return;
    }
    fav = ready[rng() % ready.size()];
  }
}

// kernel<<<grid, threads, smem_bytes>>>, kernel being `body` (a call of the __global__ function);
// threads a multiple of 32; blocks in order x fastest
inline void launch(dim3 grid, unsigned threads, size_t smem_bytes, std::function<void()> body) {
  if (threads == 0 || threads % kWarp != 0) {
    std::fprintf(stderr, "cplab_emu: block size %u is not a multiple of 32\n", threads);
    std::abort();
  }
  Block blk;
  const size_t warps = threads / kWarp;
  blk.bar.count = static_cast<int>(threads);
  blk.warp_bar.assign(warps, Barrier{kWarp, 0, 0});
  blk.fibers.resize(threads);
  for (Fiber& f : blk.fibers) f.stack.resize(size_t{1} << 18);
  blk.f32.resize(warps * kWarp);
  blk.ptr.resize(warps * kWarp);
  blk.reg.resize(warps * kWarp * 6);
  blk.body = std::move(body);
  block = &blk;
  gridDim = grid;
  blockDim = dim3(threads, 1, 1);
  for (unsigned z = 0; z < grid.z; ++z)
    for (unsigned y = 0; y < grid.y; ++y)
      for (unsigned x = 0; x < grid.x; ++x) {
        blk.smem.assign(smem_bytes, 0xFF);
        if (reinterpret_cast<std::uintptr_t>(blk.smem.data()) % 16 != 0) std::abort();
        blockIdx = uint3{x, y, z};
        run_block(blk);
      }
  block = nullptr;
}

inline int syncthreads_count(bool p) {
  arrive(block->bar);
  if (p) ++block->reduce;
  arrive(block->bar);
  const int r = block->reduce;
  arrive(block->bar);
  if (threadIdx.x == 0) block->reduce = 0;  // read by all before this third barrier
  return r;
}

}  // namespace cplab_emu

inline void __syncthreads() { cplab_emu::arrive(cplab_emu::block->bar); }
inline int __syncthreads_or(int p) { return cplab_emu::syncthreads_count(p != 0) > 0; }
inline int __syncthreads_and(int p) {
  return cplab_emu::syncthreads_count(p != 0) == static_cast<int>(blockDim.x);
}
// full-warp shuffles only (the mask is not modelled)
inline float __shfl_xor_sync(unsigned /*mask*/, float x, int lane_mask) {
  using namespace cplab_emu;
  float* slot = &block->f32[static_cast<size_t>(warp() * kWarp)];
  slot[lane()] = x;
  warp_sync();
  const float r = slot[lane() ^ lane_mask];
  warp_sync();
  return r;
}
inline int atomicMax(int* p, int v) {
  const int old = *p;
  if (v > old) *p = v;
  return old;
}
inline int atomicMin(int* p, int v) {
  const int old = *p;
  if (v < old) *p = v;
  return old;
}
inline float atomicAdd(float* p, float v) {
  const float old = *p;
  *p = old + v;
  return old;
}
