// tma_emu.h: cuda/wgmma.cuh's mbarrier and TMA instructions, and the driver's
// cuTensorMapEncodeTiled, emulated on the host for the v3 kernel run by emu.h. cuda/wgmma.cuh takes
// these in place of its inline PTX when CPLAB_EMULATE is defined; cuda/tensor_map.cpp takes
// encode_tiled in place of the driver's entry point.
//
// What it models (PTX ISA "mbarrier", "cp.async.bulk.tensor"; CUDA driver API cuTensorMapEncodeTiled):
//   mbarrier.init       an 8-byte aligned object in shared memory: expected arrival count 1 ..
//                       2^20 - 1, pending count = expected, tx-count 0, phase 0. Its state is kept
//                       aside; its 8 bytes hold a tag, and any use of an address without the tag
//                       (never initialised, or overwritten since) aborts.
//   arrive              one arrival (no bytes).
//   arrive.expect_tx    tx-count += bytes, then one arrival. A phase completes when its pending
//                       count and its tx-count are both 0: the phase number advances, the pending
//                       count is reset. An arrival on a phase with no arrival left aborts.
//   try_wait.parity P   true iff the phase with parity P has completed, i.e. the current phase's
//                       parity is not P; when false, the thread is suspended until the phase
//                       advances (the ISA's try_wait may block for a while, then it is asked again).
//   globaltimer         a virtual clock, 1 us per read (mbar_wait's 10 s trap never fires here:
//                       a wait no copy or arrival can end is a deadlock, reported at once).
//   fence.mbarrier_init / fence.proxy.async   nothing (no memory model).
//   cp.async.bulk.tensor.3d (tile mode, to shared::cluster of this CTA, complete_tx::bytes)
//                       destination 128-byte aligned (and 1024-aligned with the 128-byte
//                       swizzle: other alignments are not modelled); the box of the map at
//                       coordinates (c0, c1, c2), innermost first, written densely in box order,
//                       bits 4-6 of each shared byte address ^= bits 7-9 under the 128-byte
//                       swizzle; elements outside the tensor (any coordinate < 0 or >= its
//                       dimension) written as zeros (OOB_FILL_NONE) or NaN (NAN_REQUEST_ZERO_FMA);
//                       then complete_tx of the box's full size in bytes (zero-filled elements
//                       count) on the mbarrier. The copy is one emu.h issue_async: it lands at
//                       issue (Async::early) or only when no thread can run without it
//                       (Async::late), global memory read when it lands.
//   cuTensorMapEncodeTiled   the driver's rules for what v3 uses: rank 3, 16-bit or 32-bit
//                       elements, global address 16-byte aligned, dims 1 .. 2^32, strides
//                       multiples of 16 below 2^40, box dims 1 .. 256, inner box bytes a multiple
//                       of 16 and <= 128 under the 128-byte swizzle, element strides 1, no
//                       interleave; breaking one returns CUDA_ERROR_INVALID_VALUE (as the driver).
// What it is not: multicast, clusters, im2col, stores or reductions to global memory, the L2
// promotion (ignored), remote (cluster) arrivals, arrive's returned state, or
// the memory model (every completed write is visible to every thread at once).
#pragma once

#include <cuda.h>  // CUtensorMap, CUresult, the tensor-map enums

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <map>

#include "emu.h"

namespace cplab_emu {

struct MBar {
  std::uint32_t expected = 0, pending = 0;
  std::int64_t tx = 0;
  long phase = 0;
};
inline std::map<std::uint32_t, MBar> mbars;  // by shared address; per block
inline std::uint64_t virtual_ns = 0;

inline const bool tma_hooked = [] {
  hooks().block_start.push_back([] { mbars.clear(); });
  return true;
}();

inline std::uint64_t mbar_tag(std::uint32_t addr) { return 0x6d6261725f656d75ull ^ addr; }

inline MBar& mbar_at(const void* bar) {
  const std::uint32_t addr = smem_address(bar);
  const auto it = mbars.find(addr);
  std::uint64_t bytes;
  std::memcpy(&bytes, smem_pointer(addr, 8), 8);
  if (it == mbars.end() || bytes != mbar_tag(addr))
    fail("mbarrier used at a shared address that holds no initialised mbarrier (never initialised, or overwritten)");
  return it->second;
}
inline void mbar_advance(MBar& m) {
  if (m.pending == 0 && m.tx == 0) {
    ++m.phase;
    m.pending = m.expected;
  }
}
inline void mbar_complete_tx(MBar& m, std::uint32_t bytes) {
  m.tx -= bytes;
  if (m.tx < -((std::int64_t{1} << 20) - 1)) fail("mbarrier tx-count below -(2^20 - 1)");
  mbar_advance(m);
}

struct PhaseWait {
  const long* phase;
  long seen;
};
inline bool phase_moved(const void* p) {
  const auto* w = static_cast<const PhaseWait*>(p);
  return *w->phase != w->seen;
}

// the tensor map as encode_tiled writes it into CUtensorMap's opaque words
constexpr std::uint64_t kMapMagic = 0x636d61705f656d75ull;
struct MapView {
  std::uint64_t magic, global, dims[3], strides[2], box[3], elem, swizzle, oob;
};
static_assert(sizeof(MapView) <= sizeof(CUtensorMap));

inline CUresult encode_tiled(CUtensorMap* map, CUtensorMapDataType type, cuuint32_t rank, void* global,
                             const cuuint64_t* dims, const cuuint64_t* strides, const cuuint32_t* box,
                             const cuuint32_t* elem_strides, CUtensorMapInterleave interleave,
                             CUtensorMapSwizzle swizzle, CUtensorMapL2promotion /*l2*/, CUtensorMapFloatOOBfill oob) {
  std::uint64_t elem = 0;
  if (type == CU_TENSOR_MAP_DATA_TYPE_BFLOAT16 || type == CU_TENSOR_MAP_DATA_TYPE_FLOAT16) elem = 2;
  else if (type == CU_TENSOR_MAP_DATA_TYPE_FLOAT32) elem = 4;
  bool ok = map && elem && rank == 3 && interleave == CU_TENSOR_MAP_INTERLEAVE_NONE &&
            reinterpret_cast<std::uintptr_t>(global) % 16 == 0 &&
            (swizzle == CU_TENSOR_MAP_SWIZZLE_NONE || swizzle == CU_TENSOR_MAP_SWIZZLE_128B);
  for (int i = 0; ok && i < 3; ++i) {
    ok = dims[i] >= 1 && dims[i] <= (std::uint64_t{1} << 32) && box[i] >= 1 && box[i] <= 256 && elem_strides[i] == 1;
    if (i < 2) ok = ok && strides[i] % 16 == 0 && strides[i] < (std::uint64_t{1} << 40);
  }
  ok = ok && (box[0] * elem) % 16 == 0 && (swizzle != CU_TENSOR_MAP_SWIZZLE_128B || box[0] * elem <= 128);
  if (!ok) return CUDA_ERROR_INVALID_VALUE;
  MapView v{kMapMagic, reinterpret_cast<std::uintptr_t>(global), {dims[0], dims[1], dims[2]}, {strides[0], strides[1]},
            {box[0], box[1], box[2]}, elem, swizzle == CU_TENSOR_MAP_SWIZZLE_128B ? 1u : 0u,
            oob == CU_TENSOR_MAP_FLOAT_OOB_FILL_NAN_REQUEST_ZERO_FMA ? 1u : 0u};
  std::memset(static_cast<void*>(map), 0, sizeof *map);
  std::memcpy(static_cast<void*>(map), &v, sizeof v);
  return CUDA_SUCCESS;
}

inline void tma_load(void* dst, const CUtensorMap* map, std::uint64_t* bar, const int (&c)[3]) {
  yield();
  MapView v;
  std::memcpy(&v, static_cast<const void*>(map), sizeof v);
  if (v.magic != kMapMagic) fail("cp.async.bulk.tensor: not a tensor map made by cuTensorMapEncodeTiled");
  const std::uint32_t d = smem_address(dst);
  if (d % 128 != 0) fail("cp.async.bulk.tensor: shared destination not 128-byte aligned");
  if (v.swizzle && d % 1024 != 0) fail("cp.async.bulk.tensor: a 128-byte swizzled box not 1024-byte aligned is not modelled");
  const std::uint32_t bytes = static_cast<std::uint32_t>(v.box[0] * v.box[1] * v.box[2] * v.elem);
  smem_pointer(d, bytes);        // the box fits in shared memory
  MBar* m = &mbar_at(bar);       // initialised at issue
  const std::uint32_t bar_addr = smem_address(bar);
  issue_async([v, d, bytes, m, bar_addr, c] {
    const std::uint64_t e = v.elem;
    for (std::uint64_t z = 0; z < v.box[2]; ++z)
      for (std::uint64_t y = 0; y < v.box[1]; ++y)
        for (std::uint64_t x = 0; x < v.box[0]; ++x) {
          const std::int64_t g[3] = {c[0] + static_cast<std::int64_t>(x), c[1] + static_cast<std::int64_t>(y),
                                     c[2] + static_cast<std::int64_t>(z)};
          bool in = true;
          for (int i = 0; i < 3; ++i) in = in && g[i] >= 0 && static_cast<std::uint64_t>(g[i]) < v.dims[i];
          const std::uint32_t a = d + static_cast<std::uint32_t>(((z * v.box[1] + y) * v.box[0] + x) * e);
          unsigned char* out = smem_pointer(v.swizzle ? hw_swizzle128(a) : a, static_cast<std::uint32_t>(e));
          if (in) {
            const std::uint64_t src = v.global + static_cast<std::uint64_t>(g[0]) * e + static_cast<std::uint64_t>(g[1]) * v.strides[0] +
                                      static_cast<std::uint64_t>(g[2]) * v.strides[1];
            std::memcpy(out, reinterpret_cast<const void*>(src), e);
          } else if (v.oob) {
            const float nan = std::numeric_limits<float>::quiet_NaN();
            std::memset(out, 0xFF, e);  // a NaN in 16-bit types too
            if (e == 4) std::memcpy(out, &nan, 4);
          } else {
            std::memset(out, 0, e);
          }
        }
    std::uint64_t tag;
    std::memcpy(&tag, smem_pointer(bar_addr, 8), 8);
    if (tag != mbar_tag(bar_addr)) {
      std::fprintf(stderr, "cplab_emu: a TMA copy landed on an mbarrier that was overwritten meanwhile\n");
      std::abort();
    }
    mbar_complete_tx(*m, bytes);
  });
}

}  // namespace cplab_emu

namespace cplab::cuda::detail {

inline void mbar_init(std::uint64_t* bar, unsigned count) {
  using namespace cplab_emu;
  yield();
  const std::uint32_t addr = smem_address(bar);
  if (addr % 8 != 0) fail("mbarrier.init: address not 8-byte aligned");
  if (count < 1 || count > (1u << 20) - 1) fail("mbarrier.init: count not in 1 .. 2^20 - 1");
  MBar& m = mbars[addr];
  m = MBar{count, count, 0, 0};
  const std::uint64_t tag = mbar_tag(addr);
  std::memcpy(smem_pointer(addr, 8), &tag, 8);
}
inline void mbar_init_fence() {}
// one arrival (with `bytes` more expected transactions first: arrive.expect_tx), atomically: no
// other thread runs between the two
inline void mbar_arrive_tx(std::uint64_t* bar, std::uint32_t bytes) {
  using namespace cplab_emu;
  yield();
  MBar& m = mbar_at(bar);
  if (m.pending == 0) fail("mbarrier.arrive: no arrival left in the current phase");
  m.tx += bytes;
  if (m.tx > (std::int64_t{1} << 20) - 1) fail("mbarrier tx-count above 2^20 - 1");
  --m.pending;
  mbar_advance(m);
}
inline void mbar_expect_tx(std::uint64_t* bar, std::uint32_t bytes) { mbar_arrive_tx(bar, bytes); }
inline void mbar_arrive(std::uint64_t* bar) { mbar_arrive_tx(bar, 0); }
inline bool mbar_try_wait(std::uint64_t* bar, std::uint32_t parity) {
  using namespace cplab_emu;
  yield();
  MBar& m = mbar_at(bar);
  if ((m.phase & 1) != static_cast<long>(parity & 1)) return true;
  const PhaseWait w{&m.phase, m.phase};
  block_until(phase_moved, &w);
  return (m.phase & 1) != static_cast<long>(parity & 1);
}
inline std::uint64_t global_ns() { return cplab_emu::virtual_ns += 1000; }
inline void tma_load_3d(void* dst, const CUtensorMap* map, std::uint64_t* bar, int c0, int c1, int c2) {
  cplab_emu::tma_load(dst, map, bar, {c0, c1, c2});
}

}  // namespace cplab::cuda::detail
