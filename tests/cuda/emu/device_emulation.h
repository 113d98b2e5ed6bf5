// device_emulation.h: the host emulation of the device that cuda/emulation_seam.h includes when
// the kernels' source is compiled with g++ under CPLAB_EMULATE (CPLAB_EMULATION_HEADER names it).
//
// What it is: emu.h (blocks as fibers, barriers, shared memory), mma_emu.h (ldmatrix, mma.sync,
// cp.async), wgmma_emu.h (wgmma), tma_emu.h (mbarrier, TMA, tensor maps) and sync_emu.h (named
// barriers, setmaxnreg), in that order.
// What it is not: anything nvcc compiles.
#pragma once

#include "emu.h"
#include "mma_emu.h"
#include "wgmma_emu.h"
#include "tma_emu.h"
#include "sync_emu.h"
