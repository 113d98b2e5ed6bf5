// emulation_seam.h: the one place where the kernels' source meets a host emulation of the device.
//
// What it is: when a build compiles the kernel files with g++ under CPLAB_EMULATE (never nvcc), it
// names its emulation header in CPLAB_EMULATION_HEADER (tests/cuda/emu's target names
// device_emulation.h: thread blocks as fibers, ldmatrix / mma.sync / cp.async, wgmma, mbarrier and
// TMA on the host), and this file includes it; mma.cuh (so wgmma.cuh) and attention_impl.cuh include
// this file, and tensor_map.cpp takes the emulation's tensor-map encoder. Nothing in cuda/ names a test
// file: the emulation is plugged in by the build system.
// What it is not: the emulation (tests/cuda/emu/), or anything an nvcc build sees.
#pragma once

#ifdef CPLAB_EMULATE
#ifndef CPLAB_EMULATION_HEADER
#error "CPLAB_EMULATE needs CPLAB_EMULATION_HEADER, the emulation header's name (tests/cuda/emu)"
#endif
#include CPLAB_EMULATION_HEADER
#endif
