// emu_sinks.cpp: the attention-sink kernels (cuda/sink_kernels.cu, included, compiled with
// CPLAB_EMULATE) launched on the host emulation, with the grids and shared-memory sizes of their
// launchers (emu_kernels.h).
#include "sink_kernels.cu"

#include "emu_kernels.h"

namespace cplab_emu {

using namespace cplab::cuda::detail;

void apply_sinks(std::int64_t n, std::int64_t h, std::int64_t dv, float* o, float* lse, const float* sinks) {
  launch(dim3(blocks_for(n * h, kApplyThreads)), kApplyThreads, 0, [&] { sink_apply_kernel(o, lse, n, h, dv, sinks); });
}

void sink_grad(std::int64_t n, std::int64_t h, const float* lse, const float* delta, const float* sinks, float* ds) {
  launch(dim3(static_cast<unsigned>(h)), kGradThreads, kGradThreads * sizeof(float),
         [&] { sink_grad_kernel(lse, delta, n, sinks, ds); });
}

}  // namespace cplab_emu
