// test_kernel_emu_v3.cpp: kernel v3's forward (its own source, cuda/attention_v3_fwd.cu: wgmma,
// TMA, mbarriers) run on the CPU by the host emulation (emu.h, wgmma_emu.h, tma_emu.h), against the
// double reference.
//
// What it is: run_case (emu_case.h) for version 3: bf16 and fp16, head dims 64 and 128, MHA and
// GQA, masks none / causal / bottom-right causal with sq < 128 / THD ranges with an empty row /
// a causal sliding window / chunks, with and without attention sinks; sizes ragged in both sq (a block's rows beyond sq: TMA's
// zero fill) and sk (the last key tile partly beyond sk), 3 to 5 key tiles so both TMA stages are
// refilled; TMA copies landing at issue (immediate) and only when needed (deferred); each case
// under two scheduler seeds (CPLAB_EMU_SEED=n adds n to them). The emulation makes a missing wgmma
// wait, full or empty mbarrier wait or arrive, or ping-pong named barrier fail these cases
// (tests/cuda/emu/mutants.cmake builds such mutants and expects them to fail); the kernel's
// setmaxnreg 24 / 240 is checked against the block's register pool (sync_emu.h).
// What it is not: a GPU test (the emulation's headers say what it cannot see), or v3's backward
// (v2's, tested by test_kernel_emu.cpp).
#include <doctest/doctest.h>

#include <cstdlib>
#include <vector>

#include "emu.h"
#include "emu_case.h"

using namespace cplab_emu_test;

namespace {

// three packed sequences [0, 60), [60, 200), [200, 300), causal inside; row 210 sees nothing
Mask thd_mask() { return packed_causal({0, 60, 200, 300}, 210); }

const Case kNone{"none, 130 x 400", 130, 400, Mask::none()};
const Case kCausal{"causal, 300 x 300", 300, 300, Mask::causal(0)};
const Case kBottomRight{"bottom-right causal, 72 x 520", 72, 520, Mask::causal(520 - 72)};
const Case kThd{"THD ranges (one empty row), 300 x 300", 300, 300, thd_mask()};
// a window and a chunk: key tiles skipped at both ends, per-row ranges (mask.h sequence_mask)
const Case kWindow{"causal window 100, 400 x 400", 400, 400, sequence_mask(PositionRule{true, 100, 0}, 400)};
const Case kChunk{"chunk 160, 300 x 300", 300, 300, sequence_mask(PositionRule{true, 0, 160}, 300)};

// the scheduler's seed for the next cases: s, plus CPLAB_EMU_SEED from the environment if set (to
// explore other schedules; the default runs are reproducible)
void seeded(unsigned s) {
  const char* env = std::getenv("CPLAB_EMU_SEED");
  const unsigned seed = s + (env ? static_cast<unsigned>(std::strtoul(env, nullptr, 10)) : 0u);
  MESSAGE("scheduler seed " << seed);
  cplab_emu::seed(seed);
}

}  // namespace

TEST_CASE("emulated kernel v3 forward equals the double reference: bf16") {
  using T = __nv_bfloat16;
  const DType t = DType::bf16;
  for (unsigned s : {1u, 2u}) {
    seeded(s);
    run_case<T>(3, t, 128, 128, 2, 1, kNone, s == 1 ? CpAsync::deferred : CpAsync::immediate);
    run_case<T>(3, t, 64, 64, 2, 2, kCausal, s == 1 ? CpAsync::immediate : CpAsync::deferred);
  }
  seeded(5);
  run_case<T>(3, t, 64, 64, 2, 1, kWindow, CpAsync::deferred, {-0.5, 1.0});
  seeded(6);
  run_case<T>(3, t, 128, 128, 2, 2, kChunk, CpAsync::immediate);
}

TEST_CASE("emulated kernel v3 forward equals the double reference: fp16") {
  using T = __half;
  const DType t = DType::f16;
  for (unsigned s : {3u, 4u}) {
    seeded(s);
    run_case<T>(3, t, 128, 128, 2, 2, kBottomRight, s == 3 ? CpAsync::deferred : CpAsync::immediate);
    run_case<T>(3, t, 64, 64, 2, 1, kThd, s == 3 ? CpAsync::immediate : CpAsync::deferred, {0.75, -1.5});
  }
}
