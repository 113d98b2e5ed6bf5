// emu.h: a host emulation of the CUDA execution model, just enough to run the source of the
// attention kernels v1, v2 and v3 (cuda/attention_v1.cu, attention_v2_fwd.cu, attention_v2_bwd.cu,
// attention_v3_fwd.cu) on the CPU. cuda/emulation_seam.h includes it (via device_emulation.h) when
// CPLAB_EMULATE is defined (g++ only).
//
// What it is: launch() runs a grid block after block; each block runs as blockDim.x ucontext
// fibers on the calling OS thread, cooperatively: a fiber runs until it waits at a barrier
// (__syncthreads, __syncthreads_or / _and, __syncwarp), a warp collective (__shfl_xor_sync, and
// mma_emu.h's ldmatrix / mma), a condition (block_until: wgmma_emu.h's wait_group, tma_emu.h's
// mbarrier try_wait), or yields (yield(): at every wgmma / mbarrier / TMA instruction, so the
// scheduler may switch there). threadIdx / blockIdx / blockDim / gridDim are globals switched with
// the fiber. The scheduler is adversarial in a simple way, chosen per block (seed(): the seed of
// every later choice): either it lets one warp run ahead as far as it can and switches at random
// points to another runnable warp, or it runs warps in a strict random priority order (always the
// first runnable one: one warpgroup races ahead of the other as far as its waits let it). So a read
// of shared memory that another warp has not yet written, or a write into a buffer another warp
// still reads (a missing __syncthreads), is seen, and the warps of one warpgroup drift apart
// between its collective instructions.
// Asynchronous operations (tma_emu.h's TMA copies) are issued with issue_async: they complete at
// once (Async::early) or only when no fiber can run without them (Async::late), set per launch; a
// block that ends with one still in flight aborts. Shared memory starts as 0xFF bytes (NaN in fp32,
// fp16 and bf16), so an element read before it is written shows up; its shared-window address
// (smem_addr) starts at a seeded multiple of 16 below 1024, so a kernel that aligns its buffers
// itself is tested at every alignment. Atomics are plain read-modify-writes (fibers never
// interleave inside one). A barrier or condition no fiber can pass aborts with "deadlock".
// What it is not: a model of the CUDA memory model (every write is visible to every thread at
// once: a missing fence or volatile is not caught, only a missing barrier in the control flow), of
// warp divergence or independent thread scheduling within a warp, of timing, occupancy or
// shared-memory bank conflicts; or of any built-in those kernels do not use.
#pragma once

#include <cuda_runtime.h>  // uint3, dim3; under g++ it defines __global__ / __device__ as nothing

#include <ucontext.h>

#include <algorithm>
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

enum class Async { early, late };  // when issue_async's operations complete (see above)

struct Fiber {
  ucontext_t ctx{};
  std::vector<char> stack;
  bool done = false;
  const Barrier* waiting = nullptr;  // the barrier this fiber waits at, in phase `wait_phase`
  long wait_phase = 0;
  bool (*cond)(const void*) = nullptr;  // block_until: runnable again once cond(cond_arg)
  const void* cond_arg = nullptr;
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
  std::uint32_t smem_base = 0;                    // the shared-window address of smem[0]
  std::vector<std::function<void()>> in_flight;  // issue_async under Async::late
};

inline Block* block = nullptr;
inline std::mt19937 rng(12345);
inline Async async_mode = Async::late;

// the scheduler's (and smem_addr's) random choices from here on
inline void seed(unsigned s) { rng.seed(s); }

// hooks of the instruction emulations (wgmma_emu.h, tma_emu.h): per-block state reset at the start
// of each block, checks when a fiber returns and when a block ends
struct Hooks {
  std::vector<void (*)()> block_start, fiber_exit, block_end;
};
inline Hooks& hooks() {
  static Hooks h;
  return h;
}

[[noreturn]] inline void fail(const char* what) {
  std::fprintf(stderr, "cplab_emu: block (%u, %u) thread %u: %s\n", blockIdx.x, blockIdx.y, threadIdx.x, what);
  std::abort();
}

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

// a switch point: the fiber stays runnable, the scheduler may run another first
inline void yield() { swapcontext(&me().ctx, &block->scheduler); }

// the 128-byte swizzle of a shared-memory byte address, as the hardware applies it (PTX ISA
// "tensor-map swizzle", "matrix descriptor"): bits 4-6 xor bits 7-9. One definition for the TMA
// and the wgmma models (tma_emu.h, wgmma_emu.h); the kernels' own (cuda/wgmma_layout.h swizzle128)
// is what they are checked against, not shared with them.
inline std::uint32_t hw_swizzle128(std::uint32_t a) { return a ^ (((a >> 7) & 7u) << 4); }
// suspends the fiber until cond(arg) holds (a wait on state other fibers or async copies change)
inline void block_until(bool (*cond)(const void*), const void* arg) {
  Fiber& f = me();
  while (!cond(arg)) {
    f.cond = cond, f.cond_arg = arg;
    swapcontext(&f.ctx, &block->scheduler);
    f.cond = nullptr;
  }
}
// an asynchronous operation's completion: now (Async::early) or when nothing else can run (late)
inline void issue_async(std::function<void()> complete) {
  if (async_mode == Async::early) complete();
  else block->in_flight.push_back(std::move(complete));
}

// shared memory: a pointer into the block's buffer <-> its shared-window address
inline std::uint32_t smem_address(const void* p) {
  const auto* c = static_cast<const unsigned char*>(p);
  if (c < block->smem.data() || c >= block->smem.data() + block->smem.size()) fail("address is not in the block's shared memory");
  return block->smem_base + static_cast<std::uint32_t>(c - block->smem.data());
}
inline unsigned char* smem_pointer(std::uint32_t addr, std::uint32_t bytes) {
  if (addr < block->smem_base || addr + bytes > block->smem_base + block->smem.size()) fail("shared address out of the block's shared memory");
  return block->smem.data() + (addr - block->smem_base);
}

inline void fiber_entry() {
  block->body();
  for (auto* h : hooks().fiber_exit) h();
  me().done = true;  // uc_link returns to the scheduler
}

inline void run_block(Block& blk) {
  const int n = static_cast<int>(blk.fibers.size()), warps = n / kWarp;
  for (Fiber& f : blk.fibers) {
    f.done = false;
    f.waiting = nullptr;
    f.cond = nullptr;
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
    return !f.done && (f.waiting == nullptr || f.waiting->phase != f.wait_phase) &&
           (f.cond == nullptr || f.cond(f.cond_arg));
  };
  // half the blocks (seeded): strict priority, warps in a random order, the first runnable one runs
  // (one warpgroup races ahead of the other as far as its waits let it); else random switches
  const bool priority = rng() % 2 == 0;
  std::vector<int> order(static_cast<size_t>(warps));
  for (int w = 0; w < warps; ++w) order[static_cast<size_t>(w)] = w;
  if (priority) std::shuffle(order.begin(), order.end(), rng);
  int fav = order[0];  // the warp that runs ahead
  for (;;) {
    bool ran = false;
    for (int t = fav * kWarp; t < (fav + 1) * kWarp; ++t) {
      if (!runnable(t)) continue;
      ran = true;
      blk.current = t;
      threadIdx = uint3{static_cast<unsigned>(t), 0, 0};
      swapcontext(&blk.scheduler, &blk.fibers[static_cast<size_t>(t)].ctx);
    }
    if (!priority && ran && rng() % 8 != 0) continue;
    std::vector<int> ready;
    for (const int w : order)
      for (int t = w * kWarp; t < (w + 1) * kWarp; ++t)
        if (runnable(t)) {
          ready.push_back(w);
          break;
        }
    if (ready.empty() && !blk.in_flight.empty()) {  // Async::late: one copy lands, chosen at random
      const size_t k = rng() % blk.in_flight.size();
      const std::function<void()> complete = std::move(blk.in_flight[k]);
      blk.in_flight.erase(blk.in_flight.begin() + static_cast<std::ptrdiff_t>(k));
      complete();
      continue;
    }
    if (ready.empty()) {
      for (const Fiber& f : blk.fibers)
        if (!f.done) {
          std::fprintf(stderr, "cplab_emu: deadlock (a barrier or wait not every thread of the block passes)\n");
          std::abort();
        }
      return;
    }
    fav = priority ? ready.front() : ready[rng() % ready.size()];
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
        blk.smem_base = 16u * static_cast<std::uint32_t>(rng() % 64);
        blk.in_flight.clear();
        blockIdx = uint3{x, y, z};
        for (auto* h : hooks().block_start) h();
        run_block(blk);
        if (!blk.in_flight.empty()) {
          std::fprintf(stderr, "cplab_emu: block (%u, %u): %zu asynchronous copies still in flight at its end (never waited for)\n",
                       x, y, blk.in_flight.size());
          std::abort();
        }
        for (auto* h : hooks().block_end) h();
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
inline void __syncwarp(unsigned /*mask: full warps only*/ = 0xffffffffu) { cplab_emu::warp_sync(); }
[[noreturn]] inline void __trap() { cplab_emu::fail("__trap()"); }
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
