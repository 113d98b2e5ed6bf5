// device_emulation.h: the host emulation of the device that cuda/emulation_seam.h includes when
// the kernels' source is compiled with g++ under CPLAB_EMULATE (CPLAB_EMULATION_HEADER names it).
//
// What it is: emu.h (blocks as fibers, barriers, shared memory) and mma_emu.h (ldmatrix, mma.sync,
// cp.async), in that order.
// What it is not: anything nvcc compiles.
#pragma once

#include "emu.h"
#include "mma_emu.h"
